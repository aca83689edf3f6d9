import Dispatch
import GStreamer
import Synchronization

/// One run of a camera: its capture pipeline,
/// `device ! <chosen caps> ! [jpegdec | h264parse ! decoder] ! videoconvert ! [videoflip] ! [videorate] ! appsink`,
/// delivering 4:2:0 frames (``deliveredFormat(for:consumers:)``) of exactly the chosen size on
/// the streaming thread, each timed by its capture time on the system clock (its running time
/// plus the pipeline's base time), so that the next session, after a switch or a restart, goes
/// on from where this one left off.
final class CameraSession: Sendable {
  let device: CaptureDevice
  let choice: FormatChoice
  private let pipeline: MediaPipeline
  private let progress = StartProgress()
  private let zoomCrop = PendingCrop()
  /// The format delivered now (``deliveredFormat(for:consumers:)``).
  private let delivered: Mutex<PixelFormat>

  /// Builds the pipeline (without starting it).
  /// - Parameters:
  ///   - fps: the rate sent; frames are repeated or dropped when the camera's differs.
  ///   - consumers: what the track's processor and sinks take (``follow(_:)``).
  ///   - onFrame: called on the streaming thread for every frame.
  ///   - onFault: called on the posting thread for the error that stops the pipeline once it
  ///     runs (errors while it starts make ``start(timeout:)`` throw instead), and for warnings.
  /// - Throws: ``DeviceError`` when the device cannot be opened.
  init(
    device: CaptureDevice, choice: FormatChoice, fps: Int, isMirrored: Bool,
    consumers: FrameConsumers = FrameConsumers(),
    onFrame: @escaping @Sendable (PixelBuffer) -> Void, onFault: @escaping @Sendable (MediaFault) -> Void
  ) throws(DeviceError) {
    self.device = device
    self.choice = choice
    let format = Self.deliveredFormat(for: choice.format.encoding, consumers: consumers)
    delivered = Mutex(format)
    let progress = self.progress
    pipeline = MediaPipeline(name: "camera") { fault in
      guard fault.severity == .error else { return onFault(fault) }
      if progress.failed(fault), progress.hasFrame { onFault(fault) }
    }
    let source: Element
    do {
      guard let gstDevice = device.device else { throw GStreamerError.elementNotFound(factory: "device", package: nil) }
      source = try VirtualDevices.$requestedCaps.withValue(choice.format.caps(frameRate: choice.cameraFrameRate)) {
        try gstDevice.createElement(name: "source")
      }
    } catch {
      let present = DeviceWatcher.shared.device(id: device.id, kind: .camera) != nil
      throw present
        ? DeviceError(.cameraInUse, "the camera \(device.name) is in use by another application")
        : DeviceError(.cameraNotFound, "the camera \(device.name) is gone")
    }
    var chain = ["capsfilter name=cameracaps"]
    switch choice.format.encoding {
    case .jpeg: chain.append("jpegdec")
    case .h264: chain += ["h264parse", Gst.hasElement("avdec_h264") ? "avdec_h264" : "openh264dec"]
    case .raw: break
    }
    chain.append("videoconvert")
    if isMirrored { chain.append("videoflip video-direction=horiz") }
    if Double(fps) != choice.cameraFrameRate {
      chain += ["videorate", "capsfilter name=ratecaps"]
    }
    chain += ["capsfilter name=formatcaps", "appsink name=sink sync=false enable-last-sample=false"]
    do {
      let tail = try Bin(parsing: chain.joined(separator: " ! "))
      try pipeline.pipeline.add(source, tail)
      try source.link(tail)
      try tail.element(named: "cameracaps")?.set("caps", choice.format.caps(frameRate: choice.cameraFrameRate))
      try tail.element(named: "ratecaps")?.set(
        "caps", try Caps("video/x-raw, framerate=\(CaptureFormat.fraction(Double(fps)))"))
      try tail.element(named: "formatcaps")?.set("caps", try Self.formatCaps(format, choice.dimensions))
      let sink = try tail.element(named: "sink", as: AppSink.self)
      sink.setCallbacks(newSample: { [weak pipeline] sample in
        guard let pipeline, let frame = PixelBuffer.captured(sample, baseTime: pipeline.pipeline.baseTime) else {
          return
        }
        progress.frameArrived()
        onFrame(frame)
      })
    } catch {
      throw DeviceError(.videoSourceInitiationFailed, "cannot build the capture pipeline for \(device.name): \(error)")
    }
  }

  /// The 4:2:0 format the session delivers for a camera giving `encoding` to `consumers`, so
  /// that a frame is converted at most once between the camera and any encoder
  /// (``FrameConversion``), and that conversion, if any, is made here once for every sink:
  /// - the format the processor needs, when it says (``VideoProcessor/pixelFormats``);
  /// - the camera's own NV12 or I420 when every sink takes it (`videoconvert` in passthrough:
  ///   H.264 to RTP from an NV12 camera converts nothing);
  /// - else what the sinks all take: I420 for VP8 (`vp8enc` takes only I420), NV12 for hardware
  ///   encoders; a decoder's output is I420 (`jpegdec` and `avdec_h264` give I420, whatever the
  ///   JPEG's subsampling), another raw format (YUY2, GRAY8) is converted in one step;
  /// - the camera's own format when the sinks take nothing in common (each converts itself).
  static func deliveredFormat(for encoding: CaptureFormat.Encoding, consumers: FrameConsumers) -> PixelFormat {
    let own: PixelFormat? =
      switch encoding {
      case .raw(.nv12): .nv12
      case .raw(.i420): .i420
      case .raw, .jpeg, .h264: nil
      }
    let allowed =
      consumers.processor.map { $0.intersection([.i420, .nv12]) }.flatMap { $0.isEmpty ? nil : $0 }
      ?? [.i420, .nv12]
    let taken = consumers.sinks?.intersection(allowed) ?? []
    if let own, allowed.contains(own), taken.isEmpty || taken.contains(own) { return own }
    if !taken.isEmpty { return taken == [.nv12] ? .nv12 : .i420 }
    return allowed.contains(.i420) ? .i420 : .nv12
  }

  /// The caps of the frames delivered: `format` at `size`.
  private static func formatCaps(_ format: PixelFormat, _ size: Dimensions) throws(GStreamerError) -> Caps {
    try Caps("video/x-raw, format=\(format.gstreamerName), width=\(size.width), height=\(size.height)")
  }

  /// Delivers the format for `consumers` from the next frame on
  /// (``deliveredFormat(for:consumers:)``): the capture's conversion renegotiates while it runs.
  func follow(_ consumers: FrameConsumers) {
    let format = Self.deliveredFormat(for: choice.format.encoding, consumers: consumers)
    let changed = delivered.withLock { delivered in
      defer { delivered = format }
      return delivered != format
    }
    guard changed else { return }
    do {
      try pipeline.pipeline.element(named: "formatcaps")?.set("caps", try Self.formatCaps(format, choice.dimensions))
    } catch {
      RevueLog.log(.warning, "CameraCapturer", "\(device.name): cannot deliver \(format): \(error)")
    }
  }

  /// The capture pipeline (read only).
  var capturePipeline: Pipeline { pipeline.pipeline }

  /// Starts the pipeline and waits up to `timeout` for the first frame.
  /// - Throws: ``DeviceError``: `.cameraInUse` when the device is busy, `.cameraAccessDenied` when it
  ///   refuses access, `.videoSourceInitiationFailed` when it fails or gives no frame in time. The
  ///   pipeline is stopped then.
  func start(timeout: Duration = .seconds(2)) throws(DeviceError) {
    progress.reset()
    do {
      try pipeline.play()
    } catch {
      throw Self.classify(error, device: device)
    }
    let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
    let waited = progress.started.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
    if let fault = progress.failure, !progress.hasFrame {
      pipeline.stop()
      throw Self.classify(fault, device: device)
    }
    if waited == .timedOut {
      pipeline.stop()
      throw DeviceError(.videoSourceInitiationFailed, "the camera \(device.name) gave no frame within \(timeout)")
    }
  }

  /// Stops the pipeline, releasing the device.
  func stop() { pipeline.stop() }

  /// Sets the camera's own zoom (``CameraZoom``) to `value`; returns whether it was set.
  func setZoom(_ value: Int) -> Bool {
    guard let zoom = device.zoom else { return false }
    let size = choice.format.dimensions
    return zoom.apply(
      value, crop: pipeline.pipeline.element(named: "zoom"), pending: zoomCrop, width: Int(size.width),
      height: Int(size.height))
  }

  private static func classify(_ error: GStreamerError, device: CaptureDevice) -> DeviceError {
    if case .stateChangeFailed(_, _, let busError?) = error {
      if busError.error.domain == "gst-resource-error-quark", busError.error.code == 4 {  // GST_RESOURCE_ERROR_BUSY
        return DeviceError(.cameraInUse, "the camera \(device.name) is in use by another application")
      }
      return classify(MediaFault(.error, busError), device: device)
    }
    return DeviceError(.videoSourceInitiationFailed, "the camera \(device.name) could not be opened: \(error)")
  }

  /// The error of a camera that failed before its first frame.
  private static func classify(_ fault: MediaFault, device: CaptureDevice) -> DeviceError {
    DeviceError.isAccessDenial(fault)
      ? DeviceError(
        .cameraAccessDenied,
        "the camera \(device.name) refused access (\(fault.debug ?? fault.message)): add the user to the video group")
      : DeviceError(.videoSourceInitiationFailed, "the camera \(device.name) failed to start: \(fault.message)")
  }
}

/// How far a run of a session got: its first frame, or its first error.
private final class StartProgress: Sendable {
  /// Signalled at the first frame or the first error of a run.
  let started = DispatchSemaphore(value: 0)
  private let frame = Atomic<Bool>(false)
  private let reason = Mutex<MediaFault?>(nil)

  /// Starts a new run (a session restarted on the same device waits for its new first frame).
  func reset() {
    while started.wait(timeout: .now()) == .success {}
    frame.store(false, ordering: .releasing)
    reason.withLock { $0 = nil }
  }

  var hasFrame: Bool { frame.load(ordering: .acquiring) }
  var failure: MediaFault? { reason.withLock { $0 } }

  func frameArrived() {
    if !frame.exchange(true, ordering: .acquiringAndReleasing) { started.signal() }
  }

  /// Records an error; true for the first one.
  func failed(_ fault: MediaFault) -> Bool {
    let first = reason.withLock { reason in
      guard reason == nil else { return false }
      reason = fault
      return true
    }
    if first { started.signal() }
    return first
  }
}

/// What a camera track's frames go to, for the format its capture delivers
/// (``CameraSession/deliveredFormat(for:consumers:)``).
struct FrameConsumers: Sendable, Hashable {
  /// The formats the track's processor needs (``VideoProcessor/pixelFormats``); nil for any.
  var processor: Set<PixelFormat>?
  /// The raw formats every sink's encoders take as they come (``MediaSink/rawFormats``); nil
  /// when none says.
  var sinks: Set<PixelFormat>?
}
