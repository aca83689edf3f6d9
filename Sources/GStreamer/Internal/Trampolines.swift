internal import CGStreamer

/// The C callbacks of this module. They live outside any actor: GStreamer calls them on its own
/// threads, and a closure formed inside `@MainActor` code would trap there.
enum Trampolines {
  /// Ends the streams of a bus's ``BusDispatcher`` and releases it (the bus's object-data destroy notify).
  static let releaseBusDispatcher: GDestroyNotify = { userData in
    let dispatcher = Unmanaged<BusDispatcher>.fromOpaque(userData!).takeRetainedValue()
    dispatcher.finish()
  }

  /// Delivers a bus message to the dispatcher; drops it from the bus when someone received it.
  /// A sync handler that returns `GST_BUS_DROP` owns the message's reference and must release it.
  static let busSyncHandler: GstBusSyncHandler = { _, message, userData in
    let dispatcher = Unmanaged<BusDispatcher>.fromOpaque(userData!).takeUnretainedValue()
    guard dispatcher.dispatch(message!) else { return GST_BUS_PASS }
    gst_message_unref(message)
    return GST_BUS_DROP
  }
}

extension Trampolines {
  /// Runs and releases the ``ReleaseBox`` of wrapped buffer memory.
  static let releaseWrappedMemory: GDestroyNotify = { userData in
    let box = Unmanaged<ReleaseBox>.fromOpaque(userData!).takeRetainedValue()
    box.release()
  }
}
