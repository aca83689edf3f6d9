internal import CGStreamer

/// A top-level bin with a clock and a bus: what runs.
///
/// Its bus is read without a GLib main loop: messages arrive through ``Bus/messages(_:bufferingPolicy:)`` and
/// ``Bus/addSyncHandler(_:)`` from the threads that post them.
/// The corresponding C type is `GstPipeline`.
public final class Pipeline: Bin, @unchecked Sendable {
  /// Wraps a pipeline and starts dispatching its bus.
  required init(retaining pointer: UnsafeMutableRawPointer) {
    super.init(retaining: pointer)
    attachBus()
  }

  /// Adopts a pipeline and starts dispatching its bus.
  required init(adopting pointer: UnsafeMutableRawPointer) {
    super.init(adopting: pointer)
    attachBus()
  }

  private func attachBus() {
    let bus = gst_pipeline_get_bus(rawPointer.assumingMemoryBound(to: GstPipeline.self))!
    defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
    BusDispatcher.attach(to: bus)
  }

  /// A new, empty pipeline.
  ///
  /// The corresponding C function is `gst_pipeline_new`.
  public convenience init(name: String? = nil) {
    Gst.ensureInitialized()
    self.init(retaining: UnsafeMutableRawPointer(gst_pipeline_new(name)))
  }

  /// Builds a pipeline from a `gst-launch-1.0` description, such as
  /// `videotestsrc num-buffers=10 ! videoconvert ! fakesink`.
  ///
  /// The corresponding C function is `gst_parse_launch_full`, with fatal errors.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)`` when the description names an
  ///   element that is not installed, or ``GStreamerError/parseFailed(description:error:)`` with
  ///   GStreamer's parse error (a syntax error, an unknown property, an impossible link).
  public convenience init(parsing description: String) throws(GStreamerError) {
    let element = try Gst.parse(description) { description, context, error in
      gst_parse_launch_full(description, context, GST_PARSE_FLAG_FATAL_ERRORS, &error)
    }
    if g_type_is_a(cgst_instance_type(element), cgst_type_pipeline()) != 0 {
      self.init(adopting: element)
    } else {
      // A single element or a bin: put it in a pipeline of its own.
      self.init(name: nil)
      _ = gst_bin_add(binPointer, element.assumingMemoryBound(to: GstElement.self))
    }
  }

  /// The pipeline's bus.
  ///
  /// The corresponding C function is `gst_pipeline_get_bus`.
  public var bus: Bus {
    Bus(adopting: UnsafeMutableRawPointer(gst_pipeline_get_bus(rawPointer.assumingMemoryBound(to: GstPipeline.self))))
  }

  /// Starts playing (returns while sinks may still be prerolling).
  /// - Throws: ``GStreamerError/stateChangeFailed(element:target:error:)`` with the error posted on the bus.
  public func play() throws(GStreamerError) { try setState(.playing) }

  /// Stops, releasing every resource (state ``Element/State/null``). Never fails for a well-formed pipeline.
  ///
  /// Safe from any thread. Going to null joins the pipeline's streaming threads, so on one of them
  /// (an appsink callback, a pad probe, a bus sync handler of a message posted there: see
  /// ``isStreamingThread``) the change is made on another thread, after this returns; the
  /// pipeline stays alive until it is done. Anywhere else the change is made before this returns.
  /// Messages the bus keeps for a first subscriber are dropped once stopped, as GStreamer flushes
  /// a stopped pipeline's bus.
  ///
  /// The corresponding C functions are `gst_element_set_state` and, on a streaming thread,
  /// `gst_element_call_async`.
  /// - Parameter whenStopped: called once the pipeline is in null: before this returns, or on the
  ///   thread that stopped it.
  public func stop(whenStopped: (@Sendable () -> Void)? = nil) {
    if isStreamingThread {
      let completion = Unmanaged.passRetained(StopCompletion(whenStopped)).toOpaque()
      gst_element_call_async(elementPointer, Trampolines.stopPipeline, completion, Trampolines.releaseStopCompletion)
    } else {
      Pipeline.stopNow(elementPointer)
      whenStopped?()
    }
  }

  /// Sets `pipeline` to null on the calling thread and forgets its bus's backlog and streaming threads.
  static func stopNow(_ pipeline: UnsafeMutablePointer<GstElement>) {
    _ = gst_element_set_state(pipeline, GST_STATE_NULL)
    stopped(pipeline)
  }

  /// Tells the bus dispatcher of `pipeline`, which has just been set to null, to forget its
  /// backlog and streaming threads.
  static func stopped(_ pipeline: UnsafeMutablePointer<GstElement>) {
    guard let bus = gst_element_get_bus(pipeline) else { return }
    defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
    BusDispatcher.existing(on: bus)?.pipelineStopped()
  }

  /// Whether the calling thread is one of this pipeline's streaming threads: a thread that
  /// GStreamer started for one of its elements' tasks (a source, a queue…), and on which appsink
  /// callbacks, pad probes and the bus sync handlers of the messages posted there run.
  ///
  /// The pipeline knows them from the `GST_MESSAGE_STREAM_STATUS` messages that a task posts
  /// from its thread when it enters and leaves it; a thread an element starts without posting
  /// them is not known.
  public var isStreamingThread: Bool {
    guard let bus = gst_element_get_bus(elementPointer) else { return false }
    defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
    return BusDispatcher.existing(on: bus)?.isStreamingThread ?? false
  }

  /// Plays until end of stream, then stops.
  ///
  /// - Parameter timeout: how long to wait for EOS; nil waits as long as it takes.
  /// - Throws: ``GStreamerError/bus(_:)`` with the first error posted, the state-change errors of
  ///   ``play()``, or ``GStreamerError/timedOut(_:after:)`` when EOS did
  ///   not come in time; `CancellationError` when the task is cancelled.
  public func playUntilEndOfStream(timeout: Duration? = nil) async throws {
    let messages = bus.messages([.eos, .error])
    defer { stop() }
    try play()
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask {
        for await message in messages {
          if case .error(let error) = message.kind { throw GStreamerError.bus(error) }
          if case .eos = message.kind { return }
        }
        try Task.checkCancellation()
      }
      if let timeout {
        group.addTask {
          try await Task.sleep(for: timeout)
          throw GStreamerError.timedOut("\(self.name) reaching end of stream", after: timeout)
        }
      }
      try await group.next()
      group.cancelAll()
    }
  }
}

/// The Swift side of an asynchronous ``Pipeline/stop(whenStopped:)``.
final class StopCompletion: Sendable {
  let whenStopped: (@Sendable () -> Void)?
  init(_ whenStopped: (@Sendable () -> Void)?) { self.whenStopped = whenStopped }
}
