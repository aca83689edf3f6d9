internal import CGStreamer
internal import CGStreamerWebRTC

/// GStreamer's WebRTC peer, `webrtcbin` (ICE, DTLS-SRTP, RTP/RTCP with feedback), with its
/// negotiation as Swift calls: descriptions are SDP text, the answers of its promises are
/// awaited.
///
/// Add ``element`` to a pipeline; media it receives comes out of pads it adds as the remote
/// streams arrive (``Element/onPadAdded(_:)``).
public final class WebRTCBin: Sendable {
  /// The `webrtcbin` element.
  public let element: Bin

  /// Whether a description offers or answers.
  public enum DescriptionType: Sendable, Hashable {
    /// An offer.
    case offer
    /// An answer to an offer.
    case answer

    var cValue: GstWebRTCSDPType { self == .offer ? GST_WEBRTC_SDP_TYPE_OFFER : GST_WEBRTC_SDP_TYPE_ANSWER }
    var field: String { self == .offer ? "offer" : "answer" }
  }

  /// A new `webrtcbin` named `name`, bundling every media on one transport (`max-bundle`).
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)`` without gst-plugins-bad.
  public init(name: String? = nil) throws(GStreamerError) {
    element = try Element.make("webrtcbin", name: name, as: Bin.self)
    try element.set("bundle-policy", Value.enumeration("max-bundle"))
  }

  /// Takes the remote peer's description.
  /// - Throws: ``GStreamerError/queryFailed(element:query:)`` with webrtcbin's reason when the
  ///   SDP does not parse or does not fit the negotiation.
  public func setRemoteDescription(_ type: DescriptionType, sdp: String) async throws(GStreamerError) {
    try await set("set-remote-description", type, sdp: sdp)
  }

  /// Takes a local description (the offer or answer this peer made, maybe changed).
  /// - Throws: as ``setRemoteDescription(_:sdp:)``.
  public func setLocalDescription(_ type: DescriptionType, sdp: String) async throws(GStreamerError) {
    try await set("set-local-description", type, sdp: sdp)
  }

  /// Makes an offer from the transceivers and pads there are now.
  /// - Throws: ``GStreamerError/queryFailed(element:query:)`` with webrtcbin's reason.
  public func createOffer() async throws(GStreamerError) -> String {
    try await create(.offer)
  }

  /// Makes the answer to the remote offer set.
  /// - Throws: ``GStreamerError/queryFailed(element:query:)`` with webrtcbin's reason.
  public func createAnswer() async throws(GStreamerError) -> String {
    try await create(.answer)
  }

  /// Which way a transceiver's media goes, from this peer's side.
  public enum TransceiverDirection: Sendable, Hashable {
    /// This peer only sends.
    case sendOnly
    /// This peer only receives: a media line offered `a=recvonly`, with no sink pad to feed.
    case receiveOnly
    /// Both ways.
    case sendReceive

    /// The C value, `GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_…`.
    var cValue: GstWebRTCRTPTransceiverDirection {
      switch self {
      case .sendOnly: GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY
      case .receiveOnly: GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY
      case .sendReceive: GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDRECV
      }
    }
  }

  /// Adds a transceiver going `direction` for media of `caps` (one structure per codec offered,
  /// `application/x-rtp` with `media`, `encoding-name`, `payload`, `clock-rate` and the
  /// `rtcp-fb-…` feedback to offer), before an offer is made: a receive-only peer has no sink
  /// pads from which webrtcbin would make its media lines. Set its properties (`do-nack`) on the
  /// object returned.
  ///
  /// The corresponding C signal is `add-transceiver`.
  /// - Returns: the transceiver (a `GstWebRTCRTPTransceiver`).
  /// - Throws: ``GStreamerError/queryFailed(element:query:)`` when webrtcbin makes none.
  public func addTransceiver(_ direction: TransceiverDirection, caps: Caps) throws(GStreamerError) -> Object {
    let made = caps.withPointer { cwebrtc_add_transceiver(element.elementPointer, direction.cValue, $0) }
    guard let made else {
      throw .queryFailed(element: element.name, query: "add-transceiver: no transceiver for \(caps)")
    }
    return Object.wrap(adopting: UnsafeMutableRawPointer(made))
  }

  /// Adds a candidate of the remote peer for media line `mLineIndex` (an `a=candidate` value,
  /// `candidate:…`).
  public func addICECandidate(mLineIndex: Int, candidate: String) {
    cwebrtc_add_ice_candidate(element.elementPointer, guint(mLineIndex), candidate)
  }

  /// Calls `handler` with each local ICE candidate as it is gathered (the media line, the
  /// `candidate:…` text), on one of webrtcbin's threads. The element holds `handler`: capture
  /// this peer, its pipeline or another peer of the same pipeline weakly.
  public func onICECandidate(_ handler: @escaping @Sendable (_ mLineIndex: Int, _ candidate: String) -> Void) {
    let box = Unmanaged.passRetained(CandidateBox(handler)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, guint, UnsafePointer<gchar>?, UnsafeMutableRawPointer?) ->
        Void = { _, line, candidate, data in
          guard let candidate, let data else { return }
          Unmanaged<CandidateBox>.fromOpaque(data).takeUnretainedValue().handler(Int(line), String(cString: candidate))
        }
    let release: GClosureNotify = { data, _ in Unmanaged<CandidateBox>.fromOpaque(data!).release() }
    _ = cgst_signal_connect(
      element.rawPointer, "on-ice-candidate", unsafeBitCast(callback, to: GCallback.self), box, release)
  }

  /// Calls `handler` with the new value (its nick: `connected`, `complete`…) each time one of
  /// webrtcbin's states changes: `connection-state`, `ice-connection-state`,
  /// `ice-gathering-state` or `signaling-state`; on one of webrtcbin's threads. The element
  /// holds `handler`: capture this peer or its pipeline weakly.
  public func onStateChange(_ property: String, _ handler: @escaping @Sendable (String) -> Void) {
    _ = connectStateChange(property, handler)
  }

  private func connectStateChange(_ property: String, _ handler: @escaping @Sendable (String) -> Void) -> gulong {
    let box = Unmanaged.passRetained(StateBox(property: property, handler)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void =
        { object, spec, data in
          // notify's arguments: the object and the spec of the property that changed.
          guard let object, let spec, let data else { return }
          let box = Unmanaged<StateBox>.fromOpaque(data).takeUnretainedValue()
          let value = Value(
            readingProperty: spec.assumingMemoryBound(to: GParamSpec.self),
            of: object.assumingMemoryBound(to: GObject.self))
          guard case .enumeration(let nick) = value else { return }
          box.handler(nick)
        }
    let release: GClosureNotify = { data, _ in Unmanaged<StateBox>.fromOpaque(data!).release() }
    return cgst_signal_connect(
      element.rawPointer, "notify::\(property)", unsafeBitCast(callback, to: GCallback.self), box, release)
  }

  /// Calls `handler` each time RTCP from the remote peer (reports, feedback) reaches
  /// `webrtcbin`'s RTP session, once SRTCP authenticated and decrypted it (forged packets never
  /// do), on one of webrtcbin's threads: whether the peer is still there, which the connection's
  /// state does not say (`webrtcbin` checks no ICE consent, so a peer that vanished leaves it
  /// `connected`). Call it once the connection is up, when the transports exist.
  /// - Returns: the number of transports watched (0 when none exists yet).
  @discardableResult
  public func onRTCPReceived(_ handler: @escaping @Sendable () -> Void) -> Int {
    // webrtcbin's rtpbin (named so) takes each transport's RTCP on a `recv_rtcp_sink_N` pad.
    guard let rtpbin = element.element(named: "rtpbin") else { return 0 }
    let inputs = rtpbin.pads.filter { $0.name.hasPrefix("recv_rtcp_sink_") }
    for pad in inputs {
      pad.addProbe([.buffer, .bufferList]) { _, _ in
        handler()
        return .ok
      }
    }
    return inputs.count
  }

  /// Returns once ICE gathering is complete (every local candidate is in
  /// ``localDescription``), or throws ``GStreamerError/timedOut(_:after:)`` after `timeout`.
  public func gatheringComplete(timeout: Duration) async throws(GStreamerError) {
    try await waitForState("ice-gathering-state", ["complete"], timeout: timeout)
  }

  /// Returns the connection's state once it is one of `states` (`connected`, `failed`…), or
  /// nil after `timeout`.
  public func connectionState(in states: Set<String>, timeout: Duration) async -> String? {
    try? await waitForState("connection-state", states, timeout: timeout)
  }

  @discardableResult
  private func waitForState(_ property: String, _ states: Set<String>, timeout: Duration) async throws(GStreamerError)
    -> String
  {
    let waiter = FirstValue<String?>()
    let handler = connectStateChange(property) { nick in if states.contains(nick) { waiter.settle(nick) } }
    let now = enumNick(property)
    if states.contains(now) { waiter.settle(now) }
    let timer = waiter.settle(nil, after: timeout)
    defer {
      timer.cancel()
      g_signal_handler_disconnect(element.rawPointer, handler)
    }
    guard let reached = await waiter.value else {
      throw .timedOut(
        "\(element.name)'s \(property) to be \(states.sorted().joined(separator: " or ")) (it is \(enumNick(property)))",
        after: timeout)
    }
    return reached
  }

  /// The local description as it is now, candidates gathered so far included; nil before one
  /// is set.
  public var localDescription: String? { description(of: "local-description") }

  /// The ICE gathering state: `new`, `gathering` or `complete`.
  public var iceGatheringState: String { enumNick("ice-gathering-state") }
  /// The peer connection's state: `new`, `connecting`, `connected`, `disconnected`, `failed`
  /// or `closed`.
  public var connectionState: String { enumNick("connection-state") }

  private func enumNick(_ property: String) -> String {
    guard case .enumeration(let nick)? = try? element.property(property) else { return "unknown" }
    return nick
  }

  private func description(of property: String) -> String? {
    var value = GValue()
    g_value_init(&value, gst_webrtc_session_description_get_type())
    defer { g_value_unset(&value) }
    g_object_get_property(element.rawPointer.assumingMemoryBound(to: GObject.self), property, &value)
    return Self.sdpText(of: &value)
  }

  /// The SDP text of a session description held by `value`, or nil when it holds none.
  fileprivate static func sdpText(of value: UnsafePointer<GValue>) -> String? {
    guard g_type_check_value_holds(value, gst_webrtc_session_description_get_type()) != 0,
      let description = g_value_get_boxed(value)?.assumingMemoryBound(to: GstWebRTCSessionDescription.self),
      let text = gst_sdp_message_as_text(description.pointee.sdp)
    else { return nil }
    defer { g_free(text) }
    return String(cString: text)
  }

  private func set(_ signal: String, _ type: DescriptionType, sdp: String) async throws(GStreamerError) {
    // GStreamer's SDP parser takes any text (skipping what it does not know); an SDP starts
    // with its version line.
    var message: UnsafeMutablePointer<GstSDPMessage>?
    guard sdp.hasPrefix("v=0"), gst_sdp_message_new_from_text(sdp, &message) == GST_SDP_OK, let message else {
      throw .queryFailed(element: element.name, query: "\(signal): not an SDP (no v=0 line first)")
    }
    // The description takes the message.
    let description = gst_webrtc_session_description_new(type.cValue, message)
    defer { gst_webrtc_session_description_free(description) }
    let reply = try await Self.await(signal, on: element.name) { promise in
      cwebrtc_set_description(element.elementPointer, signal, description, promise)
    }
    if let error = reply.error { throw .queryFailed(element: element.name, query: "\(signal): \(error)") }
  }

  private func create(_ type: DescriptionType) async throws(GStreamerError) -> String {
    let signal = type == .offer ? "create-offer" : "create-answer"
    let reply = try await Self.await(signal, on: element.name) { promise in
      cwebrtc_create_description(element.elementPointer, signal, promise)
    }
    if let error = reply.error { throw .queryFailed(element: element.name, query: "\(signal): \(error)") }
    guard let sdp = reply.description else {
      throw .queryFailed(element: element.name, query: "\(signal): no \(type.field) in the reply")
    }
    return sdp
  }

  /// Runs `emit` with a new promise and waits for its reply.
  private static func await(
    _ signal: String, on element: String, _ emit: (UnsafeMutablePointer<GstPromise>) -> Void
  ) async throws(GStreamerError) -> WebRTCBinReply {
    let reply = await withCheckedContinuation { (continuation: CheckedContinuation<WebRTCBinReply?, Never>) in
      let box = Unmanaged.passRetained(PromiseBox(continuation)).toOpaque()
      let changed: GstPromiseChangeFunc = { promise, data in
        let box = Unmanaged<PromiseBox>.fromOpaque(data!).takeUnretainedValue()
        guard let promise, gst_promise_wait(promise) == GST_PROMISE_RESULT_REPLIED else { return box.resume(nil) }
        box.resume(WebRTCBinReply(gst_promise_get_reply(promise)))
      }
      let release: GDestroyNotify = { data in Unmanaged<PromiseBox>.fromOpaque(data!).release() }
      let promise = gst_promise_new_with_change_func(changed, box, release)!
      emit(promise)
      gst_promise_unref(promise)
    }
    guard let reply else { throw .queryFailed(element: element, query: "\(signal): no reply") }
    return reply
  }
}

/// What a promise of webrtcbin replied: an error's text, or the description it made.
private struct WebRTCBinReply: Sendable {
  var error: String?
  var description: String?

  /// What a promise's reply (nil: none) says: its error, and its description (`offer` or
  /// `answer`) as SDP text.
  init(_ reply: UnsafePointer<GstStructure>?) {
    guard let reply else { return }
    error = Self.errorMessage(of: reply)
    for field in ["offer", "answer"] {
      if let value = gst_structure_get_value(reply, field), let text = WebRTCBin.sdpText(of: value) {
        description = text
      }
    }
  }

  /// The message of a promise's reply that holds an error (an `error` field), or nil.
  private static func errorMessage(of reply: UnsafePointer<GstStructure>) -> String? {
    guard let value = gst_structure_get_value(reply, "error"), g_type_check_value_holds(value, g_error_get_type()) != 0,
      let error = g_value_get_boxed(value)?.assumingMemoryBound(to: GError.self), let message = error.pointee.message
    else { return nil }
    return String(cString: message)
  }
}

/// Holds an `on-ice-candidate` handler for the C callback.
private final class CandidateBox: Sendable {
  let handler: @Sendable (Int, String) -> Void
  init(_ handler: @escaping @Sendable (Int, String) -> Void) { self.handler = handler }
}

/// Resumes a promise's waiter once.
private final class PromiseBox: @unchecked Sendable {
  // Safety (@unchecked): the continuation is resumed once, by the promise's one change.
  private var continuation: CheckedContinuation<WebRTCBinReply?, Never>?
  init(_ continuation: CheckedContinuation<WebRTCBinReply?, Never>) { self.continuation = continuation }
  func resume(_ reply: WebRTCBinReply?) {
    continuation?.resume(returning: reply)
    continuation = nil
  }
}

/// Holds a state handler, and the property it watches, for the C callback.
private final class StateBox: Sendable {
  let property: String
  let handler: @Sendable (String) -> Void
  init(property: String, _ handler: @escaping @Sendable (String) -> Void) {
    self.property = property
    self.handler = handler
  }
}
