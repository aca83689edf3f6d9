internal import CGStreamer

/// The C callbacks of this module. They live outside any actor: GStreamer calls them on its own
/// threads, and a closure formed inside `@MainActor` code would trap there.
enum Trampolines {
  /// Ends the streams of a bus's ``BusDispatcher`` and releases it (the bus's object-data destroy notify).
  static let releaseBusDispatcher: GDestroyNotify = { userData in
    let dispatcher = Unmanaged<BusDispatcher>.fromOpaque(userData!).takeRetainedValue()
    dispatcher.finish()
  }

  /// Hands a bus message to the dispatcher and drops it from the bus, so that nothing queues there.
  /// A sync handler that returns `GST_BUS_DROP` owns the message's reference: the dispatcher takes it.
  static let busSyncHandler: GstBusSyncHandler = { _, message, userData in
    let dispatcher = Unmanaged<BusDispatcher>.fromOpaque(userData!).takeUnretainedValue()
    dispatcher.dispatch(adopting: message!)
    return GST_BUS_DROP
  }

  /// Stops a pipeline on a thread of GStreamer's own, for ``Pipeline/stop(whenStopped:)``
  /// called on one of the pipeline's streaming threads. `gst_element_call_async` holds a
  /// reference to the pipeline until this has run.
  static let stopPipeline: GstElementCallAsyncFunc = { element, userData in
    Pipeline.stopNow(element!)
    Unmanaged<StopCompletion>.fromOpaque(userData!).takeUnretainedValue().whenStopped?()
  }

  /// Releases the ``StopCompletion`` of ``stopPipeline``.
  static let releaseStopCompletion: GDestroyNotify = { userData in
    Unmanaged<StopCompletion>.fromOpaque(userData!).release()
  }
}

extension Trampolines {
  /// Runs and releases the ``ReleaseBox`` of wrapped buffer memory.
  static let releaseWrappedMemory: GDestroyNotify = { userData in
    let box = Unmanaged<ReleaseBox>.fromOpaque(userData!).takeRetainedValue()
    box.release()
  }
}
