// A port of Sora code changes its imports and Apple types only: RevueSDK's types (devices,
// formats, tracks) come with this module.
@_exported import RevueSDK
import Synchronization

/// Sora's camera error (`SoraError.cameraError(reason:)`), for what RevueSDK's own errors do not
/// say: a capturer that is not running, or no camera facing the other way.
public enum SoraError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A camera operation could not be done: why, in one line.
  case cameraError(reason: String)

  /// The reason.
  public var description: String {
    switch self {
    case .cameraError(let reason): "camera error: \(reason)"
    }
  }
}

/// Sora's camera capturer (seed 003) over RevueSDK: one camera runs at a time, and every
/// capturer feeds the same camera track, ``track`` (where Sora's `stream` receives frames), so a
/// ``flip(_:completionHandler:)`` changes the camera under a track that goes on.
///
/// Every camera operation (start, stop, restart, change, flip) runs on one camera queue, one at a
/// time in the order they were asked, whichever capturer they are for; their completion handlers
/// are called there, not on the main actor. Every read is safe from any thread. Underneath, the
/// camera is RevueSDK's `CameraCapturer` of ``track``: a start opens the capturer's device at
/// the format and frame rate given, and switching cameras keeps the track (a failed switch keeps
/// the camera that ran, which is the rollback seed 003 asks for).
public final class CameraVideoCapturer: Sendable {
  // MARK: - Shared state

  private struct Owner {
    /// The capturers of ``front`` and ``back``, made once each.
    var byPosition: [CameraPosition: CameraVideoCapturer] = [:]
    /// The capturer running, nil when none.
    var current: CameraVideoCapturer?
  }

  private static let owner = Mutex(Owner())
  private static let handlersStorage = Mutex(CameraVideoCapturerHandlers())
  private static let queue = CameraQueue()

  /// The one camera track every capturer feeds.
  private static let sharedTrack = LocalVideoTrack.createCameraTrack(name: "camera", processor: CaptureHandler())

  private static var camera: CameraCapturer {
    // The SDK's camera tracks always have a camera capturer.
    sharedTrack.capturer as! CameraCapturer
  }

  // MARK: - One capturer

  private struct Run {
    var device: CaptureDevice
    var format: CaptureFormat?
    var frameRate: Int?
  }

  /// Identifies the capturer.
  public let id: Int
  private let run: Mutex<Run>
  private static let ids = Atomic(0)

  /// A capturer of `device`. ``front`` and ``back`` are made for the built-in cameras; make one
  /// only for another camera (a USB one, which faces neither way on Linux).
  public init(device: CaptureDevice) {
    id = Self.ids.add(1, ordering: .relaxed).newValue
    run = Mutex(Run(device: device))
  }

  // MARK: - Finding capturers and formats

  /// The cameras present now.
  public static var devices: [CaptureDevice] { CameraCapturer.devices }

  /// The capturer of the first camera facing front, the same one on every read while that
  /// camera is present; nil without one.
  public static var front: CameraVideoCapturer? { capturer(for: .front) }

  /// The capturer of the first camera facing back; nil without one (most computers).
  public static var back: CameraVideoCapturer? { capturer(for: .back) }

  /// The capturer running, nil when none.
  public static var current: CameraVideoCapturer? { owner.withLock { $0.current } }

  /// The first camera facing `position`.
  public static func device(for position: CameraPosition) -> CaptureDevice? {
    devices.first { $0.position == position && !$0.isInfrared }
  }

  /// The format of `device` closest to `width`×`height` (and `frameRate`, when given).
  public static func format(width: Int32, height: Int32, for device: CaptureDevice, frameRate: Int? = nil)
    -> CaptureFormat?
  {
    CameraCapturer.format(width: width, height: height, for: device, frameRate: frameRate)
  }

  /// `frameRate` when `format` offers it, else the highest rate it offers; nil when it offers none.
  public static func maxFrameRate(_ frameRate: Int, for format: CaptureFormat) -> Int? {
    CameraCapturer.maxFrameRate(frameRate, for: format)
  }

  private static func capturer(for position: CameraPosition) -> CameraVideoCapturer? {
    guard let device = device(for: position) else { return nil }
    return owner.withLock { owner in
      if let made = owner.byPosition[position], made.device == device { return made }
      let made = CameraVideoCapturer(device: device)
      owner.byPosition[position] = made
      return made
    }
  }

  // MARK: - State

  /// The track the camera's frames reach (Sora's `stream`): the same for every capturer.
  public var track: LocalVideoTrack { Self.sharedTrack }

  /// Sora's output stream (`MediaStream`, set by the publisher): here every capturer feeds one
  /// track, ``track``, which the app publishes. A port that assigns a stream fails to compile,
  /// naming ``track``, instead of assigning a property nothing reads.
  @available(*, unavailable, renamed: "track", message: "every capturer feeds one LocalVideoTrack: publish `track`")
  public var stream: LocalVideoTrack? {
    get { track }
    set {}
  }

  /// Sora's `AVCaptureSession` (Apple's): on Linux the capture runs in a GStreamer pipeline of
  /// the track's capturer. A port that reads it fails to compile, saying so.
  @available(
    *, unavailable, message: "AVCaptureSession is Apple's: the capture is the GStreamer pipeline of `track.capturer`"
  )
  public var captureSession: Never { fatalError("unavailable") }

  /// The event handlers, shared by every capturer: `CameraVideoCapturer.handlers.onCapture = …`
  /// changes them in place.
  public static var handlers: CameraVideoCapturerHandlers {
    get { handlersStorage.withLock { $0 } }
    set { handlersStorage.withLock { $0 = newValue } }
  }

  /// Whether this capturer's camera runs.
  public var isRunning: Bool { Self.current === self }

  /// Which way the camera faces.
  public var position: CameraPosition { device.position }

  /// The camera: settable from any thread; an operation under way may read it before or after
  /// the change, and a running camera changes at the next start, restart or change.
  public var device: CaptureDevice {
    get { run.withLock { $0.device } }
    set { run.withLock { $0.device = newValue } }
  }

  /// The frame rate of the last start, nil before it.
  public var frameRate: Int? { run.withLock { $0.frameRate } }

  /// The format of the last start, nil before it.
  public var format: CaptureFormat? { run.withLock { $0.format } }

  // MARK: - Operations

  /// Starts the camera at `format` and `frameRate` (another capturer's camera stops: one camera
  /// runs at a time). `completionHandler` gets nil once frames come, else the error:
  /// `DeviceError` (busy, refused, no frame within 2 s) or ``SoraError``.
  public func start(
    format: CaptureFormat, frameRate: Int, completionHandler: @escaping @Sendable (Error?) -> Void
  ) {
    Self.queue.run { completionHandler(await self.open(format: format, frameRate: frameRate)) }
  }

  /// Stops the camera; `completionHandler` gets a ``SoraError`` when it was not running.
  public func stop(completionHandler: @escaping @Sendable (Error?) -> Void) {
    Self.queue.run { completionHandler(await self.close()) }
  }

  /// Stops the camera and starts it again with the format and frame rate of its last start.
  public func restart(completionHandler: @escaping @Sendable (Error?) -> Void) {
    Self.queue.run {
      guard let (format, frameRate) = self.run.withLock({ run in run.format.map { ($0, run.frameRate ?? 30) } })
      else {
        completionHandler(SoraError.cameraError(reason: "restart before any start"))
        return
      }
      if self.isRunning, let error = await self.close() {
        completionHandler(error)
        return
      }
      completionHandler(await self.open(format: format, frameRate: frameRate))
    }
  }

  /// Runs the camera at a new format or frame rate (nil keeps the current one). RevueSDK
  /// applies it without stopping the track; if the camera cannot take it, it keeps running as
  /// it was and the handler gets the error.
  public func change(
    format: CaptureFormat? = nil, frameRate: Int? = nil, completionHandler: @escaping @Sendable (Error?) -> Void
  ) {
    Self.queue.run {
      guard self.isRunning, let current = self.format else {
        completionHandler(SoraError.cameraError(reason: "the camera \(self.device.name) is not running"))
        return
      }
      completionHandler(await self.open(format: format ?? current, frameRate: frameRate ?? self.frameRate ?? 30))
    }
  }

  /// Stops `capturer` (pass ``current``) and starts the capturer of the camera facing the other
  /// way, with the format closest to `capturer`'s and its frame rate (or the nearest the other
  /// camera offers); the track goes on. Flips run one after another. When the other camera
  /// cannot start, `capturer` keeps running and the handler gets the error.
  public static func flip(_ capturer: CameraVideoCapturer, completionHandler: @escaping @Sendable (Error?) -> Void) {
    queue.run {
      guard capturer.isRunning, let format = capturer.format, let frameRate = capturer.frameRate else {
        completionHandler(SoraError.cameraError(reason: "flip of a camera that is not running"))
        return
      }
      let side: CameraPosition = capturer.position == .front ? .back : .front
      guard let target = Self.capturer(for: side),
        let targetFormat = Self.format(
          width: format.dimensions.width, height: format.dimensions.height, for: target.device, frameRate: frameRate)
      else {
        completionHandler(SoraError.cameraError(reason: "there is no camera facing \(side)"))
        return
      }
      let targetRate = Self.maxFrameRate(frameRate, for: targetFormat) ?? frameRate
      completionHandler(await target.open(format: targetFormat, frameRate: targetRate))
    }
  }

  /// Runs on the camera queue: opens this capturer's camera, or switches the running camera to
  /// it; nil when it runs.
  private func open(format: CaptureFormat, frameRate: Int) async -> Error? {
    let device = self.device
    let camera = Self.camera
    let options = camera.options.copyWith(
      device: device, position: device.position, preferredFormat: format, dimensions: format.dimensions,
      fps: frameRate)
    do {
      if camera.captureState == .capturing {
        guard try await camera.set(options: options) else {
          return SoraError.cameraError(reason: "the camera \(device.name) could not be started: the previous one runs")
        }
      } else {
        _ = try await camera.set(options: options)  // recorded, applied by the start
        try await camera.startCapture()
        guard camera.device == device else {
          // RevueSDK opened another camera in its place: this one could not be opened.
          try? await camera.stopCapture()
          return SoraError.cameraError(reason: "the camera \(device.name) could not be opened")
        }
      }
    } catch {
      return error
    }
    run.withLock { run in
      run.format = format
      run.frameRate = frameRate
    }
    Self.owner.withLock { $0.current = self }
    Self.handlers.onStart?(self)
    return nil
  }

  /// Runs on the camera queue: stops the camera when this capturer runs it.
  private func close() async -> Error? {
    guard isRunning else { return SoraError.cameraError(reason: "the camera \(device.name) is not running") }
    do {
      try await Self.camera.stopCapture()
    } catch {
      return error
    }
    Self.owner.withLock { owner in
      if owner.current === self { owner.current = nil }
    }
    Self.handlers.onStop?(self)
    return nil
  }
}

/// The event handlers of ``CameraVideoCapturer``, each safe to read and set from any thread.
public final class CameraVideoCapturerHandlers: Sendable {
  private let capture = Mutex<(@Sendable (CameraVideoCapturer, PixelBuffer) -> PixelBuffer?)?>(nil)
  private let started = Mutex<(@Sendable (CameraVideoCapturer) -> Void)?>(nil)
  private let stopped = Mutex<(@Sendable (CameraVideoCapturer) -> Void)?>(nil)

  /// Handlers that do nothing.
  public init() {}

  /// Called for every frame, on the capture thread, with the capturer running: the frame it
  /// returns is shown and sent instead (nil drops it).
  public var onCapture: (@Sendable (CameraVideoCapturer, PixelBuffer) -> PixelBuffer?)? {
    get { capture.withLock { $0 } }
    set { capture.withLock { $0 = newValue } }
  }

  /// Called on the camera queue when a capturer has started (by a start, restart, change or flip).
  public var onStart: (@Sendable (CameraVideoCapturer) -> Void)? {
    get { started.withLock { $0 } }
    set { started.withLock { $0 = newValue } }
  }

  /// Called on the camera queue when a capturer has stopped.
  public var onStop: (@Sendable (CameraVideoCapturer) -> Void)? {
    get { stopped.withLock { $0 } }
    set { stopped.withLock { $0 = newValue } }
  }
}

/// The shared track's processor: hands each frame to ``CameraVideoCapturerHandlers/onCapture``.
private final class CaptureHandler: VideoProcessor {
  func process(pixelBuffer: PixelBuffer) -> PixelBuffer? {
    guard let onCapture = CameraVideoCapturer.handlers.onCapture, let current = CameraVideoCapturer.current else {
      return pixelBuffer
    }
    return onCapture(current, pixelBuffer)
  }
}

/// Sora's camera queue: operations run one at a time, in the order they were asked.
private final class CameraQueue: Sendable {
  private let last = Mutex<Task<Void, Never>?>(nil)

  /// Runs `operation` after every operation asked before it.
  func run(_ operation: @escaping @Sendable () async -> Void) {
    last.withLock { last in
      let previous = last
      last = Task {
        await previous?.value
        await operation()
      }
    }
  }
}
