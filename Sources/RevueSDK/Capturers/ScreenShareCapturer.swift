import Dispatch
import Foundation
import GStreamer
import Synchronization

/// What a screen share captures and how: the X11 display, the size and rate of the frames sent.
///
/// The defaults are VideoSDK's screen share default (`h720p_15fps`: 1280×720 at 15 fps, sent at
/// 1 Mb/s) with the pointer shown, as LiveKit's screen share shows it.
public struct ScreenShareCaptureOptions: Sendable, Hashable {
  /// The size of the frames sent: the screen is scaled to fit, with black bars where its shape
  /// differs.
  public var dimensions: Dimensions
  /// Frames a second.
  public var fps: Int
  /// Whether the mouse pointer is drawn.
  public var showCursor: Bool
  /// The X11 display (`:0`); nil for the process's `DISPLAY`.
  public var display: String?

  /// Options for a screen share.
  public init(dimensions: Dimensions = .h720_169, fps: Int = 15, showCursor: Bool = true, display: String? = nil) {
    self.dimensions = dimensions
    self.fps = fps
    self.showCursor = showCursor
    self.display = display
  }

  /// VideoSDK's screen share profiles (seed 002): size, frame rate and bitrate.
  public enum Profile: String, Sendable, Hashable, CaseIterable {
    /// 640×360 at 30 fps, 400 kb/s.
    case h360p_30fps
    /// 640×480 at 15 fps, 300 kb/s.
    case h480p_15fps
    /// 640×480 at 30 fps, 500 kb/s.
    case h480p_30fps
    /// 1280×720 at 5 fps, 400 kb/s.
    case h720p_5fps
    /// 1280×720 at 15 fps, 1000 kb/s: the default.
    case h720p_15fps
    /// 1280×720 at 30 fps, 1500 kb/s.
    case h720p_30fps
    /// 1920×1080 at 15 fps, 1500 kb/s.
    case h1080p_15fps
    /// 1920×1080 at 30 fps, 2000 kb/s.
    case h1080p_30fps

    /// The frame size.
    public var dimensions: Dimensions {
      switch self {
      case .h360p_30fps: Dimensions(width: 640, height: 360)
      case .h480p_15fps, .h480p_30fps: Dimensions(width: 640, height: 480)
      case .h720p_5fps, .h720p_15fps, .h720p_30fps: Dimensions(width: 1280, height: 720)
      case .h1080p_15fps, .h1080p_30fps: Dimensions(width: 1920, height: 1080)
      }
    }

    /// Frames a second.
    public var fps: Int {
      switch self {
      case .h720p_5fps: 5
      case .h480p_15fps, .h720p_15fps, .h1080p_15fps: 15
      case .h360p_30fps, .h480p_30fps, .h720p_30fps, .h1080p_30fps: 30
      }
    }

    /// The bitrate to publish at, bits a second.
    public var bitrate: Int {
      switch self {
      case .h480p_15fps: 300_000
      case .h360p_30fps, .h720p_5fps: 400_000
      case .h480p_30fps: 500_000
      case .h720p_15fps: 1_000_000
      case .h720p_30fps, .h1080p_15fps: 1_500_000
      case .h1080p_30fps: 2_000_000
      }
    }

    /// The publish options of the profile: its bitrate and frame rate, one layer (no simulcast).
    public var publishOptions: VideoPublishOptions {
      VideoPublishOptions(encoding: VideoEncoding(maxBitrate: bitrate, maxFps: fps), simulcast: false)
    }
  }

  /// The capture options of a profile.
  public init(profile: Profile, showCursor: Bool = true, display: String? = nil) {
    self.init(dimensions: profile.dimensions, fps: profile.fps, showCursor: showCursor, display: display)
  }
}

/// The capturer of ``LocalParticipant/screenShareTrack``: the whole X11 screen (`ximagesrc`),
/// scaled to ``ScreenShareCaptureOptions/dimensions`` and sent at its frame rate. The processor
/// runs on it as on any capturer.
///
/// Switch it with ``LocalParticipant/setScreenShare(enabled:)``. When it cannot start (no
/// display, or the X server refuses), its state is ``CaptureState/error``, the only capturer
/// that uses it; the next start tries again.
public final class ScreenShareCapturer: VideoCapturer, @unchecked Sendable {
  // Safety (@unchecked): every mutable field is in a Mutex.

  private let settings: Mutex<ScreenShareCaptureOptions>
  private let running = Mutex<MediaPipeline?>(nil)

  init(options: ScreenShareCaptureOptions = ScreenShareCaptureOptions()) {
    settings = Mutex(options)
    super.init()
  }

  /// The options the next start uses.
  public var options: ScreenShareCaptureOptions {
    get { settings.withLock { $0 } }
    set { settings.withLock { $0 = newValue } }
  }

  /// Starts sharing the screen, and returns once the first frame came (within 2 s).
  /// - Throws: ``RevueError`` (`.invalidState`) when there is no display or the capture fails;
  ///   the state is ``CaptureState/error`` then.
  public override func startCapture() async throws {
    guard running.withLock({ $0 == nil }) else { return }
    let options = self.options
    do {
      let pipeline = try start(options)
      running.withLock { $0 = pipeline }
      setCaptureState(.capturing)
    } catch {
      RevueLog.log(.warning, "ScreenShareCapturer", "\(error)")
      setCaptureState(.error)
      throw error
    }
  }

  /// Stops sharing the screen.
  public override func stopCapture() async throws {
    running.withLock { pipeline in
      pipeline?.stop()
      pipeline = nil
    }
    setCaptureState(.idle)
  }

  /// Builds and plays the capture pipeline, and waits for its first frame.
  private func start(_ options: ScreenShareCaptureOptions) throws(RevueError) -> MediaPipeline {
    let display = options.display ?? ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
    guard Display.x11(display) != nil else {
      throw RevueError(
        .invalidState,
        "cannot share the screen: no X11 display (\(display.isEmpty ? "DISPLAY is not set" : "no server at \(display)"))"
      )
    }
    let fps = max(1, options.fps)
    let (width, height) = (options.dimensions.width, options.dimensions.height)
    let description =
      "ximagesrc name=source display-name=\"\(display)\" show-pointer=\(options.showCursor) use-damage=false"
      + " ! video/x-raw,framerate=\(fps)/1 ! videoconvert ! videoscale add-borders=true"
      + " ! video/x-raw,format=I420,width=\(width),height=\(height),pixel-aspect-ratio=1/1"
      + " ! appsink name=sink sync=false enable-last-sample=false max-buffers=2 drop=true"
    let first = DispatchSemaphore(value: 0)
    let started = Atomic<Bool>(false)
    let failure = Mutex<String?>(nil)
    let pipeline: MediaPipeline
    do {
      pipeline = try MediaPipeline(parsing: description) { [weak self] fault in
        guard fault.severity == .error else {
          self?.report(fault)
          return
        }
        if started.load(ordering: .acquiring) {
          self?.report(fault)
          self?.stopAfterFailure(fault.message)
        } else {
          failure.withLock { $0 = $0 ?? fault.message }
          first.signal()
        }
      }
      let sink = try pipeline.pipeline.element(named: "sink", as: AppSink.self)
      sink.setCallbacks(newSample: { [weak self, weak pipeline] sample in
        guard let self, let pipeline, let frame = PixelBuffer.captured(sample, baseTime: pipeline.pipeline.baseTime)
        else {
          return
        }
        if !started.exchange(true, ordering: .acquiringAndReleasing) { first.signal() }
        self.send(frame)
      })
      try pipeline.play()
    } catch {
      throw RevueError(.invalidState, "cannot share the screen of \(display)", underlying: error)
    }
    if first.wait(timeout: .now() + .seconds(2)) == .timedOut || !started.load(ordering: .acquiring) {
      pipeline.stop()
      let reason = failure.withLock { $0 } ?? "no frame within 2 s"
      throw RevueError(.invalidState, "cannot share the screen of \(display): \(reason)")
    }
    return pipeline
  }

  /// Capture failed after it started: it stops, and says why.
  private func stopAfterFailure(_ reason: String) {
    let pipeline = running.withLock { pipeline in
      defer { pipeline = nil }
      return pipeline
    }
    // Stopped from another thread: the failing element's own thread posted the error.
    DispatchQueue.global().async { pipeline?.stop() }
    interrupt(reason: "the screen share stopped: \(reason)")
  }
}
