import Foundation
import GStreamer
import Synchronization
import Testing

/// A WebRTC viewer of a Janus streaming mountpoint or VideoRoom publisher, as a browser would be
/// one: it speaks Janus's HTTP API (`watch` or `join`, the offer, `start` with its answer,
/// candidates trickled) and receives with GStreamer's `webrtcbin` (ICE, DTLS-SRTP, RTCP
/// feedback), decoding the video it gets (VP8 or H.264) and counting the frames.
public final class JanusViewer: Sendable {
  private let handle: JanusHandle
  private let pipeline: Pipeline
  private let decoded = FrameCounter()
  /// The `mid` of the video Janus offered, once it did.
  private let videoMid = Mutex<String?>(nil)

  /// Frames decoded so far.
  public var framesDecoded: Int { decoded.count }

  /// Starts watching `mountpoint` of `janus`'s streaming plugin: the viewer has answered
  /// Janus's offer when this returns; frames come once ICE and DTLS are through.
  public convenience init(_ janus: Janus, mountpoint: Int) async throws {
    try await self.init(janus, plugin: "janus.plugin.streaming", join: ["request": "watch", "id": mountpoint])
  }

  /// Subscribes to the publisher `feed` of `room` of `janus`'s VideoRoom, as
  /// ``init(_:mountpoint:)`` watches a mountpoint.
  public convenience init(_ janus: Janus, room: Int, feed: Int) async throws {
    try await self.init(
      janus, plugin: "janus.plugin.videoroom",
      join: ["request": "join", "ptype": "subscriber", "room": room, "streams": [["feed": feed]]])
  }

  /// Attaches to `plugin`, sends `join`, answers the offer that follows and sends `start`.
  private init(_ janus: Janus, plugin: String, join: [String: Any]) async throws {
    handle = try await janus.attach(plugin)
    pipeline = Pipeline()
    do {
      try await watch(join)
    } catch {
      await stop()
      throw error
    }
  }

  private func watch(_ join: [String: Any]) async throws {
    try await handle.message(join)
    var offer: String?
    while offer == nil {
      let event = try await handle.nextEvent()
      if let jsep = event["jsep"] as? [String: Any], jsep["type"] as? String == "offer" {
        offer = jsep["sdp"] as? String
      }
    }

    videoMid.withLock { $0 = Self.firstVideoMid(in: offer!) }
    let webrtc = try WebRTCBin()
    try pipeline.add(webrtc.element)
    // Weakly: the pipeline holds webrtcbin, which holds this handler.
    webrtc.element.onPadAdded { [weak pipeline, decoded] pad in
      guard let pipeline else { return }
      Self.decode(pad, in: pipeline, decoded.add)
    }
    // Candidates go to Janus once it has the answer: it drops those of a handle with none.
    let trickle = Mutex<(answered: Bool, queued: [(Int, String)])>((false, []))
    webrtc.onICECandidate { [handle] line, candidate in
      let ready = trickle.withLock { state in
        if !state.answered { state.queued.append((line, candidate)) }
        return state.answered
      }
      if ready { Task { await Self.send(candidate, line: line, to: handle) } }
    }
    try pipeline.play()
    try await webrtc.setRemoteDescription(.offer, sdp: offer!)
    let answer = try await webrtc.createAnswer()
    try await webrtc.setLocalDescription(.answer, sdp: answer)
    try await handle.message(["request": "start"], jsep: ("answer", answer))
    let queued = trickle.withLock { state in
      state.answered = true
      return state.queued
    }
    for (line, candidate) in queued { await Self.send(candidate, line: line, to: handle) }
  }

  /// The `a=mid` of the first video section of `sdp`.
  private static func firstVideoMid(in sdp: String) -> String? {
    let lines = sdp.split(whereSeparator: \.isNewline)
    guard let video = lines.firstIndex(where: { $0.hasPrefix("m=video") }) else { return nil }
    return lines[video...].dropFirst().prefix { !$0.hasPrefix("m=") }.first { $0.hasPrefix("a=mid:") }
      .map { String($0.dropFirst("a=mid:".count)) }
  }

  /// Asks Janus for simulcast layer `substream` of the video (0 the smallest, 2 the largest),
  /// as a VideoRoom subscriber's `configure` does; Janus switches at the layer's next keyframe.
  public func choose(substream: Int) async throws {
    guard let mid = videoMid.withLock({ $0 }) else { throw Janus.APIError(description: "Janus offered no video") }
    try await handle.message(["request": "configure", "streams": [["mid": mid, "substream": substream]]])
  }

  /// Links a new pad of `webrtcbin` to a depayloader and decoder for its codec, calling
  /// `decoded` with each frame's size.
  private static func decode(
    _ pad: Pad, in pipeline: Pipeline, _ decoded: @escaping @Sendable (_ width: Int, _ height: Int) -> Void
  ) {
    let caps = pad.currentCaps ?? pad.queryCaps()
    guard caps.count > 0, let name = caps.structure(at: 0).get("encoding-name", as: String.self) else { return }
    let chain =
      switch name {
      case "VP8": "rtpvp8depay ! vp8dec"
      case "H264": "rtph264depay ! h264parse ! avdec_h264"
      default: "fakesink"
      }
    guard let bin = try? Bin(parsing: "queue ! \(chain) ! fakesink name=sink sync=false") else { return }
    bin.element(named: "sink")?.staticPad("sink")?.addProbe(.buffer) { pad, _ in
      let size = pad.currentCaps.map { $0.structure(at: 0) }
      decoded(size?.get("width", as: Int.self) ?? 0, size?.get("height", as: Int.self) ?? 0)
      return .ok
    }
    guard (try? pipeline.add(bin)) != nil, let sink = bin.staticPad("sink") else { return }
    bin.syncStateWithParent()
    try? pad.link(sink)
  }

  private static func send(_ candidate: String, line: Int, to handle: JanusHandle) async {
    _ = try? await handle.janus.request(
      "/\(handle.session)/\(handle.handle)",
      ["janus": "trickle", "candidate": ["candidate": candidate, "sdpMLineIndex": line]])
  }

  /// Waits until `count` frames in all were decoded, within `seconds`.
  public func waitForFrames(_ count: Int, within seconds: Double) async throws {
    try await withDeadline(seconds, "\(count) frames decoded through Janus") { [decoded] in
      await decoded.wait(for: count)
    }
  }

  /// Waits until `count` frames of `width`×`height` were decoded, within `seconds`.
  public func waitForFrames(_ count: Int, width: Int, height: Int, within seconds: Double) async throws {
    do {
      try await withDeadline(seconds, "\(count) frames of \(width)x\(height) decoded through Janus") { [decoded] in
        await decoded.wait(for: count, ofSize: "\(width)x\(height)")
      }
    } catch {
      throw Janus.APIError(description: "\(error); frames decoded by size: \(decoded.sizes)")
    }
  }

  /// Leaves: Janus destroys the session, the pipeline stops.
  public func stop() async {
    await handle.destroy()
    pipeline.stop()
  }
}

/// Counts frames, in all and by size, and wakes those waiting for a number of them.
private final class FrameCounter: Sendable {
  private struct Waiter {
    let id: UUID
    /// The size counted (`WIDTHxHEIGHT`), or nil for every frame.
    let size: String?
    let count: Int
    let continuation: CheckedContinuation<Void, Never>
  }

  private struct State {
    var count = 0
    var sizes: [String: Int] = [:]
    var waiters: [Waiter] = []

    func reached(_ count: Int, ofSize size: String?) -> Bool {
      (size.map { sizes[$0] ?? 0 } ?? self.count) >= count
    }
  }

  private let state = Mutex(State())

  var count: Int { state.withLock { $0.count } }
  /// The frames counted by size (`WIDTHxHEIGHT`).
  var sizes: [String: Int] { state.withLock { $0.sizes } }

  @Sendable func add(width: Int, height: Int) {
    let ready = state.withLock { state in
      state.count += 1
      state.sizes["\(width)x\(height)", default: 0] += 1
      let (ready, waiting) = (
        state.waiters.filter { state.reached($0.count, ofSize: $0.size) },
        state.waiters.filter { !state.reached($0.count, ofSize: $0.size) }
      )
      state.waiters = waiting
      return ready
    }
    for waiter in ready { waiter.continuation.resume() }
  }

  /// Returns once `count` frames (of `size`, if given) were counted, or at once when the task is
  /// cancelled (a deadline passed: the waiter must not be left behind).
  func wait(for count: Int, ofSize size: String? = nil) async {
    let id = UUID()
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state in
          let ready = state.reached(count, ofSize: size) || Task.isCancelled
          if !ready { state.waiters.append(Waiter(id: id, size: size, count: count, continuation: continuation)) }
          return ready
        }
        if ready { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state in
        defer { state.waiters.removeAll { $0.id == id } }
        return state.waiters.first { $0.id == id }
      }
      waiter?.continuation.resume()
    }
  }
}
