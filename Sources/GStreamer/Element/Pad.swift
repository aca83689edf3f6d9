internal import CGStreamer

/// An element's input or output, where links are made and where Swift code can watch or change
/// the data in flight (probes).
///
/// The corresponding C type is `GstPad`.
public final class Pad: Object, @unchecked Sendable {
  var padPointer: UnsafeMutablePointer<GstPad> { rawPointer.assumingMemoryBound(to: GstPad.self) }

  /// Which way data flows through a pad.
  public enum Direction: Sendable, Hashable {
    /// The direction is not known.
    case unknown
    /// Data leaves the element here.
    case source
    /// Data enters the element here.
    case sink

    init(_ direction: GstPadDirection) {
      switch direction {
      case GST_PAD_SRC: self = .source
      case GST_PAD_SINK: self = .sink
      default: self = .unknown
      }
    }
  }

  /// The pad's direction.
  public var direction: Direction { Direction(gst_pad_get_direction(padPointer)) }

  /// Whether the pad is linked to a peer.
  public var isLinked: Bool { gst_pad_is_linked(padPointer) != 0 }

  /// The pad it is linked to, if any.
  public var peer: Pad? { gst_pad_get_peer(padPointer).map { Pad(adopting: UnsafeMutableRawPointer($0)) } }

  /// The element that owns the pad.
  public var element: Element? {
    gst_pad_get_parent_element(padPointer).map { Object.wrap(adopting: UnsafeMutableRawPointer($0)) as! Element }
  }

  /// The caps negotiated on the pad, nil before negotiation.
  ///
  /// The corresponding C function is `gst_pad_get_current_caps`.
  public var currentCaps: Caps? { gst_pad_get_current_caps(padPointer).map { Caps(adopting: $0) } }

  /// The pad's caps once it has some (at once when it has), or nil when none came within
  /// `timeout`: the format negotiated for the data to come, which may still be refined before
  /// the first buffer (see ``capsOfFirstBuffer(timeout:)``).
  public func waitForCaps(timeout: Duration) async -> Caps? {
    let caps = FirstValue<Caps?>()
    let probe = addProbe(.eventDownstream) { _, info in
      if info.eventName == "caps", let negotiated = info.event?.caps { caps.settle(negotiated) }
      return .ok
    }
    if let current = currentCaps { caps.settle(current) }
    let timer = caps.settle(nil, after: timeout)
    defer {
      timer.cancel()
      if let probe { removeProbe(probe) }
    }
    return await caps.value
  }

  /// The pad's caps once a buffer (alone or in a list) went through it, or nil when none did
  /// within `timeout`: the format of the data itself, where the first caps may be a first guess
  /// that upstream refines before its first buffer (`rtph264pay` adds the stream's parameter
  /// sets so). Payloaders push a frame of several packets as one list.
  public func capsOfFirstBuffer(timeout: Duration) async -> Caps? {
    let caps = FirstValue<Caps?>()
    // Removed below, once, whether it fired or not.
    let probe = addProbe([.buffer, .bufferList]) { pad, _ in
      caps.settle(pad.currentCaps)
      return .ok
    }
    let timer = caps.settle(nil, after: timeout)
    defer {
      timer.cancel()
      if let probe { removeProbe(probe) }
    }
    return await caps.value
  }

  /// The caps the pad could handle now.
  ///
  /// The corresponding C function is `gst_pad_query_caps`.
  public func queryCaps(filter: Caps? = nil) -> Caps {
    Caps.withPointer(filter) { Caps(adopting: gst_pad_query_caps(padPointer, $0)) }
  }

  /// Links this source pad to a sink pad.
  ///
  /// The corresponding C function is `gst_pad_link`.
  /// The element the pad belongs to, nil for a pad of none.
  ///
  /// The corresponding C function is `gst_pad_get_parent_element`.
  public var parentElement: Element? {
    gst_pad_get_parent_element(padPointer).map { Object.wrap(adopting: UnsafeMutableRawPointer($0)) as? Element }
      ?? nil
  }

  /// - Throws: ``GStreamerError/linkFailed(source:sink:reason:)`` with GStreamer's reason.
  public func link(_ sink: Pad) throws(GStreamerError) {
    let result = gst_pad_link(padPointer, sink.padPointer)
    guard result == GST_PAD_LINK_OK else {
      let reason: String =
        switch result {
        case GST_PAD_LINK_WRONG_HIERARCHY: "the pads' elements are not in the same bin"
        case GST_PAD_LINK_WAS_LINKED: "a pad is already linked"
        case GST_PAD_LINK_WRONG_DIRECTION: "the pads' directions do not fit"
        case GST_PAD_LINK_NOFORMAT: "the pads have no common format"
        case GST_PAD_LINK_NOSCHED: "the pads cannot cooperate in scheduling"
        default: "the link was refused"
        }
      throw .linkFailed(source: path, sink: sink.path, reason: reason)
    }
  }

  /// Unlinks this source pad from `sink`.
  @discardableResult
  public func unlink(_ sink: Pad) -> Bool { gst_pad_unlink(padPointer, sink.padPointer) != 0 }

  // MARK: - Probes

  /// What a probe watches.
  ///
  /// The corresponding C type is `GstPadProbeType`.
  public struct ProbeType: OptionSet, Sendable, Hashable {
    /// The `GstPadProbeType` bits.
    public let rawValue: UInt32
    /// Probe types from `GstPadProbeType` bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Buffers.
    public static let buffer = ProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue)
    /// Buffer lists.
    public static let bufferList = ProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
    /// Downstream events (caps, segment, EOS…).
    public static let eventDownstream = ProbeType(rawValue: GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue)
    /// Upstream events (seeks, keyframe requests, QoS…).
    public static let eventUpstream = ProbeType(rawValue: GST_PAD_PROBE_TYPE_EVENT_UPSTREAM.rawValue)
    /// Block the data flow while the probe is installed.
    public static let block = ProbeType(rawValue: GST_PAD_PROBE_TYPE_BLOCK.rawValue)
    /// Call once when the pad is idle.
    public static let idle = ProbeType(rawValue: GST_PAD_PROBE_TYPE_IDLE.rawValue)
  }

  /// What a probe decides about the data.
  ///
  /// The corresponding C type is `GstPadProbeReturn`.
  public enum ProbeReturn: Sendable, Hashable {
    /// Let the data pass; keep the probe.
    case ok
    /// Drop the data; keep the probe.
    case drop
    /// Let the data pass and remove the probe.
    case remove
    /// Let the data pass through a blocking probe without unblocking.
    case pass
    /// The probe handled the data (and the event or query result) itself.
    case handled

    var gstValue: GstPadProbeReturn {
      switch self {
      case .ok: GST_PAD_PROBE_OK
      case .drop: GST_PAD_PROBE_DROP
      case .remove: GST_PAD_PROBE_REMOVE
      case .pass: GST_PAD_PROBE_PASS
      case .handled: GST_PAD_PROBE_HANDLED
      }
    }
  }

  /// The data a probe sees.
  public struct ProbeInfo: Sendable {
    /// Why the probe was called.
    public var type: ProbeType
    /// The buffer in flight, for buffer probes. Replace it to send a different buffer on.
    public var buffer: Buffer?
    /// The event's type name (`eos`, `caps`, `segment`…), for event probes.
    public var eventName: String?
    /// The event, for event probes; set another one to pass it on in place of this one.
    public var event: Event?
    /// The sizes in bytes of the buffers of a buffer list, for buffer-list probes (payloaders
    /// push lists).
    public var listSizes: [Int]?
  }

  /// Calls `handler` on the streaming thread for the data `type` selects, until it returns
  /// ``ProbeReturn/remove`` or ``removeProbe(_:)`` is called.
  ///
  /// The corresponding C function is `gst_pad_add_probe`.
  /// - Returns: the probe's id, or nil when an idle probe already ran (the pad was idle).
  @discardableResult
  public func addProbe(
    _ type: ProbeType, _ handler: @escaping @Sendable (Pad, inout ProbeInfo) -> ProbeReturn
  ) -> UInt? {
    let box = Unmanaged.passRetained(ProbeBox(handler)).toOpaque()
    let id = gst_pad_add_probe(
      padPointer, GstPadProbeType(rawValue: type.rawValue), Trampolines.padProbe, box, Trampolines.releaseProbeBox)
    return id == 0 ? nil : UInt(id)
  }

  /// Removes a probe added with ``addProbe(_:_:)``.
  public func removeProbe(_ id: UInt) { gst_pad_remove_probe(padPointer, gulong(id)) }
}

/// Holds a probe's Swift handler for the C callback.
final class ProbeBox: Sendable {
  let handler: @Sendable (Pad, inout Pad.ProbeInfo) -> Pad.ProbeReturn
  init(_ handler: @escaping @Sendable (Pad, inout Pad.ProbeInfo) -> Pad.ProbeReturn) { self.handler = handler }
}

extension Trampolines {
  /// Runs a probe's handler and puts a replaced buffer back into the probe info.
  static let padProbe: GstPadProbeCallback = { pad, info, userData in
    let box = Unmanaged<ProbeBox>.fromOpaque(userData!).takeUnretainedValue()
    let info = info!
    let type = Pad.ProbeType(rawValue: info.pointee.type.rawValue)
    var probe = Pad.ProbeInfo(type: type, buffer: nil, eventName: nil, event: nil, listSizes: nil)
    let original = info.pointee.data
    if type.contains(.buffer), let data = original {
      probe.buffer = Buffer(retaining: data.assumingMemoryBound(to: GstBuffer.self))
    } else if type.contains(.bufferList), let data = original {
      let list = OpaquePointer(data)
      probe.listSizes = (0..<gst_buffer_list_length(list)).map {
        Int(gst_buffer_get_size(gst_buffer_list_get(list, $0)))
      }
    } else if !type.isDisjoint(with: [.eventDownstream, .eventUpstream]), let data = original {
      let event = data.assumingMemoryBound(to: GstEvent.self)
      probe.eventName = String(cString: gst_event_type_get_name(event.pointee.type))
      probe.event = Event(retaining: event)
    }
    let result = box.handler(Pad(retaining: UnsafeMutableRawPointer(pad!)), &probe)
    if type.contains(.buffer), let buffer = probe.buffer, UnsafeMutableRawPointer(buffer.pointer) != original {
      // The handler sent a different buffer: pass it on in place of the original.
      gst_buffer_unref(original!.assumingMemoryBound(to: GstBuffer.self))
      info.pointee.data = UnsafeMutableRawPointer(buffer.take())
    }
    if probe.eventName != nil, let event = probe.event, UnsafeMutableRawPointer(event.pointer) != original {
      // The handler sent a different event: pass it on in place of the original.
      gst_event_unref(original!.assumingMemoryBound(to: GstEvent.self))
      info.pointee.data = UnsafeMutableRawPointer(event.newReference())
    }
    return result.gstValue
  }

  /// Releases a probe's ``ProbeBox``.
  static let releaseProbeBox: GDestroyNotify = { userData in
    Unmanaged<ProbeBox>.fromOpaque(userData!).release()
  }
}
