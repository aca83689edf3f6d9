import Foundation
import GStreamer
import Synchronization

/// Told about a ``VideoView``'s changes, on the main actor (seed 001: "both events arrive on
/// the main thread"), held weakly. Every method is optional.
///
/// A command-line App gets these calls only while its main actor runs: from an `async` `main`
/// or after `dispatchMain()`, never from a `main` that blocks its thread (see
/// ``VideoCapturerDelegate``). Code without a main loop reads ``VideoView/events`` instead: the
/// same changes as an `AsyncStream`.
///
/// Seed 001's two methods are requirements, so a ported delegate is called: its size method
/// takes a `CGSize` in points, as the seed's does (one X11 pixel is one point).
@MainActor
public protocol VideoViewDelegate: AnyObject {
  /// ``VideoView/isRendering`` changed.
  func videoView(_ videoView: VideoView, didUpdate isRendering: Bool)
  /// The view's size changed, in points (seed 001's event): not sent when the view only moves.
  func videoView(_ videoView: VideoView, didUpdate size: CGSize)
  /// The view's size changed, in pixels: sent with the `CGSize` one, for code that works in
  /// ``Dimensions``.
  func videoView(_ videoView: VideoView, didUpdate size: Dimensions)
}

extension VideoViewDelegate {
  /// Does nothing.
  public func videoView(_ videoView: VideoView, didUpdate isRendering: Bool) {}
  /// Does nothing.
  public func videoView(_ videoView: VideoView, didUpdate size: CGSize) {}
  /// Does nothing.
  public func videoView(_ videoView: VideoView, didUpdate size: Dimensions) {}
}

/// Shows a video track (seed 001's `VideoView`, on Linux): in an X11 window of its own (a
/// Wayland window, `waylandsink`, on a Wayland session without X11), in an application's X11
/// window by its handle (GTK and Qt give one), or offscreen, where only ``snapshot()`` sees it.
///
/// Give it a ``track``, held weakly: the view draws from the track's next frame and clears when
/// the track goes. The picture is turned by ``rotationOverride`` first, then mirrored
/// (``mirrorMode``), then placed by ``layoutMode`` in the view's ``size``; the view's background
/// is black. Frames go from the track's thread to the view's pipeline without a copy.
///
/// With no display, a window view says so once in the log (`RevueLog`, an error) and draws
/// offscreen: the App goes on.
@MainActor
public final class VideoView: VideoRenderer, ClearingRenderer {
  /// How a picture whose shape differs from the view's is placed.
  public enum LayoutMode: Sendable, Hashable {
    /// Fills the whole view and crops what sticks out (the default).
    case fill
    /// Shows the whole picture, with black bars.
    case fit
  }

  /// Whether the picture is mirrored on this screen (never what is sent).
  public enum MirrorMode: Sendable, Hashable {
    /// Mirrors the local front camera only (the default).
    case auto
    /// Never mirrors.
    case off
    /// Always mirrors.
    case mirror
  }

  /// How the view draws.
  public enum RenderMode: Sendable, Hashable {
    /// X11 (`ximagesink`): the default; on a software GL (a VM, Xvfb) GL costs more than it saves.
    /// On Wayland without X11, every mode draws with `waylandsink`.
    case auto
    /// OpenGL (`glimagesink`, on the process's `DISPLAY`); falls back to X11 when GL cannot
    /// start.
    case gl
    /// X11 (`ximagesink`).
    case x11
  }

  /// Where the view draws.
  public enum Target: Sendable, Hashable {
    /// An X11 window of its own.
    case window
    /// The application's window of this handle (an X11 window id), through GStreamer's video
    /// overlay interface.
    case embedded(windowHandle: UInt)
    /// Nowhere but ``snapshot()``.
    case offscreen
  }

  /// A change of the view, as ``events`` gives it.
  public enum Event: Sendable, Hashable {
    /// ``isRendering`` changed to this value.
    case rendering(Bool)
    /// The view's size changed to this, in points.
    case size(CGSize)
  }

  /// How many pixels of the adaptive stream a point of the view counts for.
  public enum AdaptiveStreamPixelDensity: Sendable, Hashable {
    /// The screen's scale: 1 on X11, whose pixels are the points.
    case auto
    /// A density of the App's own.
    case fixed(CGFloat)

    /// The most either density counts for (3), so that a large screen does not ask for more
    /// than it needs.
    public static let maxDensity: CGFloat = 3
  }

  /// What pinch to zoom may do (seed 001); none by default: pinching does nothing.
  public struct PinchToZoomOptions: OptionSet, Sendable, Hashable {
    /// The option bits.
    public let rawValue: Int
    /// Options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The user can zoom in beyond the camera's default zoom, up to its maximum.
    public static let zoomIn = PinchToZoomOptions(rawValue: 1 << 0)
    /// The user can zoom out below the default zoom, down to the camera's minimum.
    public static let zoomOut = PinchToZoomOptions(rawValue: 1 << 1)
    /// When the gesture ends, the zoom goes back to the default.
    public static let resetOnRelease = PinchToZoomOptions(rawValue: 1 << 2)
  }

  /// The delegates, held weakly.
  public let delegates = MulticastDelegate<any VideoViewDelegate>()
  /// Where the view draws.
  public let target: Target
  /// The display of a window view: an X11 display (`:1`) or a Wayland socket (`wayland-1`, or
  /// its path); nil for the process's `DISPLAY`, else its `WAYLAND_DISPLAY`.
  public let display: String?

  /// The track shown, held weakly; nil clears the view. Setting a track, the same one too,
  /// restarts the rendering state (first frame, ``isRendering``) and clears the view until its
  /// next frame.
  public weak var track: VideoTrack? {
    didSet {
      if oldValue !== track {
        oldValue?.remove(videoRenderer: self)
        (oldValue as? RemoteVideoTrack)?.adaptiveStream(view: ObjectIdentifier(self), size: nil, showing: false)
      }
      updateAdaptiveStream()
      shared.value.withLock { $0.generation += 1 }
      clear()
      setRendering(false)
      didRenderFirstFrame = false
      hadTrack = track != nil
      track?.add(videoRenderer: self)
      applyOrientation()
    }
  }

  /// How the picture fills the view.
  public var layoutMode = LayoutMode.fill {
    didSet {
      applyLayout()
      scheduleRedraw()
    }
  }
  /// Whether the picture is mirrored.
  public var mirrorMode = MirrorMode.auto { didSet { applyOrientation() } }
  /// An extra turn clockwise, for display only; nil and `._0` show the picture as it is. A new
  /// turn is drawn at once, on the latest frame (a frozen one too), in every render mode.
  public var rotationOverride: VideoRotation? {
    didSet {
      applyLayout()
      applyOrientation()
      scheduleRedraw()
    }
  }
  /// How the view draws; a change clears the view, and the next frame draws with the new mode.
  public var renderMode = RenderMode.auto {
    didSet {
      guard oldValue != renderMode else { return }
      rebuild()
    }
  }
  /// False drops new frames and clears the view.
  public var isEnabled = true {
    didSet {
      dropsFrames(clearing: !isEnabled)
      updateAdaptiveStream()
    }
  }
  /// True drops new frames, clears the view and hides its window: a window of its own is
  /// closed (unmapped) until the view is shown again, and draws from the next frame then. An
  /// App's window (``Target/embedded(windowHandle:)``) is the App's to hide.
  public var isHidden = false {
    didSet {
      guard oldValue != isHidden else { return }
      dropsFrames(clearing: isHidden)
      rebuild()
      updateAdaptiveStream()
    }
  }
  /// True drops new frames and keeps the last one on screen (until the track changes or the
  /// view is cleared); a new ``rotationOverride`` or ``layoutMode`` still turns or places it.
  /// The view counts as rendering until 2 s have passed since its latest frame, then as not
  /// rendering until it is unfrozen.
  public var isFrozen = false { didSet { dropsFrames(clearing: false) } }
  /// The view's size in pixels; the picture is scaled into it. A width or height of 0 means the
  /// view is not laid out: it has no window and draws nothing.
  public var size: Dimensions {
    didSet {
      guard oldValue != size else { return }
      if (oldValue.width > 0 && oldValue.height > 0) != isLaidOut {
        dropsFrames(clearing: !isLaidOut)
        rebuild()
      } else {
        applyLayout()
        scheduleRedraw()
      }
      updateAdaptiveStream()
      let points = CGSize(width: CGFloat(size.width), height: CGFloat(size.height))
      broadcast.send(.size(points))
      for delegate in delegates.all {
        delegate.videoView(self, didUpdate: points)
        delegate.videoView(self, didUpdate: size)
      }
    }
  }

  /// Where the view is and its size, in points (one X11 pixel each), as a UIView's frame: a new
  /// size is the view's ``size`` (told to the delegates); the origin is kept for the App, as
  /// a view's own window is placed by the window manager.
  public var frame: CGRect {
    get { CGRect(origin: origin, size: CGSize(width: CGFloat(size.width), height: CGFloat(size.height))) }
    set {
      origin = newValue.origin
      size = Self.dimensions(of: newValue)
    }
  }
  private var origin = CGPoint.zero

  // MARK: - Pinch to zoom

  /// What pinch to zoom may do; empty (off) by default. It drives the local camera's own zoom
  /// (``CameraCapturer/set(zoom:)``), so the participants it is sent to see it too; on a remote
  /// track, a screen share or a buffer track it does nothing. On Linux the gesture is Ctrl and
  /// the scroll wheel in the view's window (a notch up zooms in, down zooms out), and releasing
  /// Ctrl ends it. A change brings the camera's zoom back within the new bounds, or to the
  /// default with ``PinchToZoomOptions/resetOnRelease``.
  public var pinchToZoomOptions: PinchToZoomOptions = [] { didSet { applyZoomBounds() } }

  /// Whether pinching zooms: true while ``PinchToZoomOptions/zoomIn`` or
  /// ``PinchToZoomOptions/zoomOut`` is set. Setting it adds or removes `.zoomIn` only.
  public var isPinchToZoomEnabled: Bool {
    get { !pinchToZoomOptions.isDisjoint(with: [.zoomIn, .zoomOut]) }
    set { if newValue { pinchToZoomOptions.insert(.zoomIn) } else { pinchToZoomOptions.remove(.zoomIn) } }
  }

  /// Whether the zoom goes back to the default when the gesture ends: adds or removes
  /// ``PinchToZoomOptions/resetOnRelease``.
  public var isAutoZoomResetEnabled: Bool {
    get { pinchToZoomOptions.contains(.resetOnRelease) }
    set {
      if newValue { pinchToZoomOptions.insert(.resetOnRelease) } else { pinchToZoomOptions.remove(.resetOnRelease) }
    }
  }

  /// The gestures the view's window has had, pinch to zoom on or off (for tests).
  private(set) var gesturesHeard = 0

  /// The camera whose zoom pinching drives: the local camera the view shows, if any.
  private var zoomedCamera: CameraCapturer? { (track as? LocalVideoTrack)?.capturer as? CameraCapturer }

  /// The default zoom and the zoom the options allow, of the camera capturing now; nil without
  /// one, or when it has no zoom control. A Linux camera's default is its first value (no zoom):
  /// no camera here is made of several lenses whose 1× is the ultra wide one.
  private var zoomBounds: (default: Int, allowed: ClosedRange<Int>)? {
    guard let range = zoomedCamera?.zoomRange else { return nil }
    let standard = range.lowerBound
    let low = pinchToZoomOptions.contains(.zoomOut) ? range.lowerBound : standard
    let high = pinchToZoomOptions.contains(.zoomIn) ? range.upperBound : standard
    return (standard, low...high)
  }

  /// Brings the camera's zoom within the options' bounds, or to the default with
  /// ``PinchToZoomOptions/resetOnRelease``.
  private func applyZoomBounds() {
    guard let camera = zoomedCamera, let zoom = camera.zoom, let bounds = zoomBounds else { return }
    let wanted =
      pinchToZoomOptions.contains(.resetOnRelease)
      ? bounds.default : min(max(zoom, bounds.allowed.lowerBound), bounds.allowed.upperBound)
    if wanted != zoom { _ = try? camera.set(zoom: wanted) }
  }

  /// A gesture in the view's window: `steps` notches of zoom (positive: in), or the end of the
  /// gesture (`steps` 0, `released`).
  private func pinch(steps: Int, released: Bool) {
    gesturesHeard += 1
    guard isPinchToZoomEnabled, let camera = zoomedCamera, let zoom = camera.zoom, let bounds = zoomBounds,
      let range = camera.zoomRange
    else { return }
    if released {
      if pinchToZoomOptions.contains(.resetOnRelease), zoom != bounds.default {
        _ = try? camera.set(zoom: bounds.default)
      }
      return
    }
    // A tenth of the camera's range a notch.
    let step = max(1, (range.upperBound - range.lowerBound) / 10)
    let wanted = min(max(zoom + steps * step, bounds.allowed.lowerBound), bounds.allowed.upperBound)
    if wanted != zoom { _ = try? camera.set(zoom: wanted) }
  }

  /// Reads a navigation event of the sink's window (GStreamer's `application/x-gst-navigation`):
  /// the scroll wheel with Ctrl held (buttons 4 and 5, or a `mouse-scroll`), and Ctrl released.
  /// Called on the sink's event thread.
  nonisolated private static func gesture(of structure: Structure) -> (steps: Int, released: Bool)? {
    guard structure.name == "application/x-gst-navigation", let kind = structure.get("event", as: String.self)
    else { return nil }
    let control: Bool
    switch structure["state"] {
    case .flags(let names)?: control = names.contains { $0.lowercased().contains("control") }
    case .uint(let bits)?: control = bits & 4 != 0  // GST_NAVIGATION_MODIFIER_CONTROL_MASK
    default: control = false
    }
    switch kind {
    case "mouse-button-press" where control:
      switch structure.get("button", as: Int.self) {
      case 4?: return (1, false)
      case 5?: return (-1, false)
      default: return nil
      }
    case "mouse-scroll" where control:
      let delta = structure.get("delta_pointer_y", as: Double.self) ?? 0
      return delta == 0 ? nil : (delta > 0 ? 1 : -1, false)
    case "key-release":
      let key = structure.get("key", as: String.self) ?? ""
      return key.hasPrefix("Control") ? (0, true) : nil
    default: return nil
    }
  }

  /// Whether the view has a size to draw in (neither side 0).
  public var isLaidOut: Bool { size.width > 0 && size.height > 0 }

  /// The view's changes from now on (``isRendering`` and its size), for code without a main
  /// loop; the latest 16 wait for a reader that is behind.
  public nonisolated var events: AsyncStream<Event> { broadcast.subscribe(bufferingPolicy: .bufferingNewest(16)) }
  private nonisolated let broadcast = Broadcast<Event>()

  // MARK: - Adaptive stream

  /// Whether the view counts for the adaptive stream of the track it shows (seed 001): false
  /// while the view is not laid out, is hidden or has ``isEnabled`` false. Where the sender
  /// offers layers (a WHEP broadcast with simulcast: ``WebRTCBroadcast``'s, through WHEP's
  /// layer selection), the views of a remote track ask it for the smallest layer that covers
  /// the largest ``adaptiveStreamSize`` of those that count, and the smallest when none does;
  /// elsewhere (RTP, a WHEP server without layers) the sender sends its own size whatever the
  /// view's, and these members only report, as the seed says.
  public var isAdaptiveStreamEnabled: Bool { isLaidOut && !isHidden && isEnabled }

  /// How many pixels a point of the view counts for; ``AdaptiveStreamPixelDensity/auto`` by
  /// default.
  public var adaptiveStreamPixelDensity = AdaptiveStreamPixelDensity.auto { didSet { updateAdaptiveStream() } }

  /// Tells the remote track shown the size the view asks for (``adaptiveStreamSize``, or
  /// nothing while ``isAdaptiveStreamEnabled`` is false).
  private func updateAdaptiveStream() {
    guard let remote = track as? RemoteVideoTrack else { return }
    let size = adaptiveStreamSize
    remote.adaptiveStream(
      view: ObjectIdentifier(self),
      size: isAdaptiveStreamEnabled
        ? Dimensions(
          width: Int32(clamping: Int(size.width.rounded(.up))), height: Int32(clamping: Int(size.height.rounded(.up))))
        : nil)
  }

  /// The size the view would ask the sender for: its size in points times the pixel density
  /// (capped at ``AdaptiveStreamPixelDensity/maxDensity``), in pixels.
  public var adaptiveStreamSize: CGSize {
    let asked: CGFloat =
      switch adaptiveStreamPixelDensity {
      case .auto: 1
      case .fixed(let density): density
      }
    let density = min(max(asked, 0), AdaptiveStreamPixelDensity.maxDensity)
    return CGSize(width: CGFloat(size.width) * density, height: CGFloat(size.height) * density)
  }

  /// Seed 001's way to tell the adaptive stream a size: it has no effect, as in the seed: the
  /// view follows its own size (``size`` or ``frame``), which is what it asks for.
  public func set(size: CGSize) {
    RevueLog.log(.debug, "VideoView", "set(size: \(size)): the view asks for its own size")
  }

  /// Draws seed 001's debug overlay: the track's sid, the resolution of the last frame, whether
  /// the first frame was drawn, ``isRendering``, the render mode (asked, and the sink used), the
  /// track's renderer count and the frames drawn in the last second, in a border green while
  /// rendering and red when not.
  public var isDebugMode = false {
    didSet {
      guard oldValue != isDebugMode else { return }
      rebuild(keepingPicture: true)
    }
  }

  /// True while frames are drawn: from the first frame until 2 s pass without one, the view
  /// is cleared, or the track changes. Always false while the view is hidden, disabled
  /// (``isEnabled`` false) or not laid out (``isLaidOut``).
  public private(set) var isRendering = false
  /// True from the first frame drawn until the track changes.
  public private(set) var didRenderFirstFrame = false
  /// The sink the view draws with (`ximagesink`, `glimagesink`, or `fakesink` offscreen).
  public private(set) var renderer = "none"

  /// What the render thread and the main actor share.
  private struct Shared {
    var source: AppSrc?
    var drops = false
    var generation = 0
    /// The latest frame drawn: when, and which generation of the track.
    var drawn: (at: ContinuousClock.Instant, generation: Int)?
    /// The picture as shown (after turning, mirroring and scaling), for snapshots.
    var shown: Buffer?
    var shownCaps: Caps?
    /// Cleared since the latest frame: what reaches the sink now is black, not a picture.
    var cleared = true
    /// Frames drawn so far (for the debug overlay's frame rate).
    var framesDrawn = 0
    /// The latest buffer pushed (a frame, or black), pushed again to redraw the debug overlay.
    var lastBuffer: Buffer?
    /// The latest frame drawn as the track gave it (before the crop of ``LayoutMode/fill``):
    /// drawn again at once when the turn, the layout or the size changes.
    var lastFrame: PixelBuffer?
    /// The shape frames are cropped to (``LayoutMode/fill``), as seen before the turn; nil
    /// for ``LayoutMode/fit``.
    var fill: (width: Int, height: Int)?
    var lastCaps: Caps?
    /// The memory of the frame pushed last, while copies are counted (``countsCopiedBytes``).
    var pushedAddress: Int?
    /// Frames that reached the sink's side, and the bytes of those that came in other memory.
    var copies = (frames: 0, bytes: 0)
  }
  private nonisolated let shared = Locked(Shared())
  /// Told each time the picture shown changes (a picture drawn, or the view cleared): what
  /// tests wait on.
  nonisolated let pictures = Broadcast<Void>()
  private var pipeline: MediaPipeline?
  private var hadTrack = false
  /// ``close()`` was called: the view draws no more.
  private var closed = false
  /// Whether the picture is mirrored now (``MirrorMode/auto`` follows the camera's position).
  private(set) var appliedMirror = false
  /// The pipeline's errors so far.
  private var failures = 0
  /// Pipelines built so far: the latest is the one whose errors count.
  private var builds = 0
  /// OpenGL failed to start here once: `.gl` draws with X11 from then on.
  private var glFailed = false
  /// The Wayland socket the view draws on, when it draws on Wayland.
  private var waylandSocket: String?
  private var watch: Task<Void, Never>?
  /// How long without a new frame before the view counts as not rendering.
  static let renderingTimeout = Duration.seconds(2)

  /// A view of `size` drawing to `target`, on `display`: an X11 display (`:1`) or a Wayland
  /// socket (`wayland-1`, or its path); nil: `DISPLAY`, else `WAYLAND_DISPLAY`.
  public init(size: Dimensions = .h360_169, target: Target = .window, display: String? = nil) {
    self.size = size
    self.target = target
    self.display = display
    start()
  }

  /// A window view of `frame`'s size in points (one X11 pixel each), as seed 001's
  /// `VideoView(frame:)`: `.zero` makes a view that is not laid out yet, which has no window
  /// and draws nothing until it gets a size (``frame`` or ``size``).
  public convenience init(frame: CGRect) {
    self.init(size: Self.dimensions(of: frame))
    origin = frame.origin
  }

  /// The size of `rect` in whole pixels (0 for a negative or empty side).
  private static func dimensions(of rect: CGRect) -> Dimensions {
    let side = { (value: CGFloat) in value.isNaN ? 0 : Int32(min(max(0, value.rounded()), 16_384)) }
    return Dimensions(width: side(rect.width), height: side(rect.height))
  }

  /// Builds the pipeline and starts the rendering check.
  private func start() {
    shared.value.withLock { $0.drops = !isLaidOut }
    rebuild()
    watch = Task { @MainActor [weak self] in
      while !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(250))
        self?.checkRendering()
      }
    }
  }

  isolated deinit {
    watch?.cancel()
    pipeline?.stop()
    (track as? RemoteVideoTrack)?.adaptiveStream(view: ObjectIdentifier(self), size: nil, showing: false)
  }

  /// Stops drawing and lets go of the window and the display at once, for good: an App that
  /// embedded the view in a window of its own calls it before destroying that window (Xlib
  /// ends a process that draws into a window gone). Letting go of the view does the same, but
  /// only when its last reference goes, which may be a moment later, on another thread (the
  /// track's, drawing a frame).
  public func close() {
    guard !closed else { return }
    closed = true
    watch?.cancel()
    pipeline?.stop()
    pipeline = nil
    shared.value.withLock { $0.source = nil }
    renderer = "none"
    track = nil
  }

  // MARK: - Frames (the track's thread)

  /// Draws a frame: called by the track on its delivering thread; an App never calls it.
  public nonisolated func render(pixelBuffer: PixelBuffer) {
    // Caps and buffer go in under the lock, so that a clear (a black frame of other caps) from
    // the main actor never comes between them.
    let first = shared.value.withLock { state -> Bool? in
      guard !state.drops, let source = state.source else { return nil }
      state.lastFrame = pixelBuffer
      let pixelBuffer = state.fill.flatMap { Self.crop(pixelBuffer, to: $0) } ?? pixelBuffer
      let caps = pixelBuffer.caps
      if state.lastCaps != caps {
        source.caps = caps
        state.lastCaps = caps
      }
      state.lastBuffer = pixelBuffer.buffer
      if Self.countsCopiedBytes { state.pushedAddress = pixelBuffer.buffer.dataAddress.map { Int(bitPattern: $0) } }
      do {
        try source.push(pixelBuffer.buffer)
      } catch {
        RevueLog.log(.debug, "VideoView", "frame dropped: \(error)")
        return nil
      }
      let first = state.drawn?.generation != state.generation
      state.drawn = (.now, state.generation)
      state.cleared = false
      state.framesDrawn += 1
      return first
    }
    if first == true { Task { @MainActor [weak self] in self?.firstFrameDrawn() } }
  }

  /// Clears the view: its track is muted, or its camera off, with no placeholder.
  nonisolated func clearPicture() {
    Task { @MainActor [weak self] in self?.clear() }
  }

  /// Lets go of `track` (its owner released it: a participant left, or was destroyed) and
  /// clears, when the view shows it.
  nonisolated func trackReleased(_ track: VideoTrack) {
    Task { @MainActor [weak self, weak track] in
      guard let self, let track, self.track === track else { return }
      self.track = nil
    }
  }

  /// The middle of `frame` in the shape of `ratio`, over the same bytes; nil when it has that
  /// shape already, or cannot be cropped without a copy (formats other than I420 and NV12,
  /// which are shown whole, as ``LayoutMode/fit`` shows them).
  nonisolated static func crop(_ frame: PixelBuffer, to ratio: (width: Int, height: Int)) -> PixelBuffer? {
    let (width, height) = (frame.width, frame.height)
    // Compare width/height with the ratio without dividing.
    let wide = width * ratio.height, tall = height * ratio.width
    guard wide != tall else { return nil }
    let even = { (value: Int) in value / 2 * 2 }
    if wide > tall {
      let cropped = max(2, even(height * ratio.width / ratio.height))
      return frame.cropped(x: even((width - cropped) / 2), y: 0, width: cropped, height: even(height))
    }
    let cropped = max(2, even(width * ratio.height / ratio.width))
    return frame.cropped(x: 0, y: even((height - cropped) / 2), width: even(width), height: cropped)
  }

  // MARK: - Snapshot

  /// The picture as the view shows it (turned, mirrored, placed in the view's size, black
  /// bars included), as a PNG; nil before a frame was drawn or after the view was cleared.
  public func snapshot() async throws -> Data? {
    try await shownPicture?.pngData()
  }

  /// The picture as shown (I420; NV12 when the sink takes NV12 and the frame was), nil before
  /// a frame or after the view was cleared.
  nonisolated var shownPicture: PixelBuffer? {
    shared.value.withLock { state -> PixelBuffer? in
      guard let buffer = state.shown, let structure = state.shownCaps?.structure(at: 0),
        let width = structure.get("width", as: Int.self), let height = structure.get("height", as: Int.self),
        let format = structure.get("format", as: String.self).flatMap(PixelFormat.init(gstreamerName:))
      else { return nil }
      return try? PixelBuffer(wrapping: buffer, width: width, height: height, format: format)
    }
  }

  /// The frames the sink drew (its `stats`' `rendered`): what a test that cannot read the
  /// screen back checks.
  var framesDrawnBySink: Int {
    let stats = try? pipeline?.pipeline.element(named: "sink")?.get("stats", as: Structure.self)
    return stats?.get("rendered", as: UInt64.self).map { Int($0) } ?? 0
  }

  /// Whether views measure ``bytesCopiedPerFrame``: off by default, as it costs a look at each
  /// frame's memory (the bench turns it on).
  public nonisolated static var countsCopiedBytes: Bool {
    get { copyCounting.load(ordering: .relaxed) }
    set { copyCounting.store(newValue, ordering: .relaxed) }
  }
  private nonisolated static let copyCounting = Atomic(false)

  /// The bytes per frame of the pictures that reached the sink's side (turned, mirrored, cropped
  /// and scaled to the view) in other memory than the frame was rendered in, since the view was
  /// made: 0 when frames are drawn as they come (I420 of the view's size, not turned, mirrored
  /// or cropped; NV12 too where the sink takes it: OpenGL), up to the sink's own conversion
  /// (`ximagesink` takes RGB only). Nil unless ``countsCopiedBytes`` was on.
  public nonisolated var bytesCopiedPerFrame: Double? {
    shared.value.withLock { state in
      state.pushedAddress == nil ? nil : Double(state.copies.bytes) / Double(max(1, state.copies.frames))
    }
  }

  // MARK: - Delegates

  /// Adds a delegate, held weakly.
  public func add(delegate: any VideoViewDelegate) { delegates.add(delegate: delegate) }
  /// Removes a delegate.
  public func remove(delegate: any VideoViewDelegate) { delegates.remove(delegate: delegate) }
  /// Removes every delegate.
  public func removeAllDelegates() { delegates.removeAll() }

  // MARK: - The pipeline

  /// The sink of `renderMode` for the target; nil for offscreen.
  private func sinkFactory(gl: Bool) -> String {
    if case .offscreen = target { return "fakesink" }
    return gl ? "glimagesink" : "ximagesink"
  }

  /// (Re)builds the view's pipeline for the current mode and target, drawing black, or the
  /// picture it showed when `keepingPicture`.
  private func rebuild(keepingPicture: Bool = false) {
    guard !closed else { return }
    let kept = shared.value.withLock { state in
      state.cleared ? nil : state.lastBuffer.flatMap { buffer in state.lastCaps.map { (buffer, $0) } }
    }
    pipeline?.stop()
    pipeline = nil
    shared.value.withLock { $0.source = nil }
    guard isLaidOut, !isHidden else {
      // No window while hidden or not laid out: stopping the sink closes its own window.
      renderer = "none"
      return clear()
    }
    var factory = failures >= 3 ? "fakesink" : sinkFactory(gl: renderMode == .gl && !glFailed)
    let wayland = factory == "fakesink" ? nil : Display.wayland(display)
    waylandSocket = wayland
    if wayland != nil {
      // Wayland: the compositor's own sink; an X11 window handle means nothing there.
      if case .embedded = target {
        RevueLog.log(.warning, "VideoView", "on Wayland the view draws in a window of its own, not in \(target)")
      }
      factory = "waylandsink"
    } else if factory != "fakesink", Display.x11(display) == nil {
      RevueLog.log(
        .error, "VideoView",
        "no display (\(Display.missing(environment: Display.x11Environment(display)))): the view draws offscreen;"
          + " run in a desktop session or under Xvfb")
      factory = "fakesink"
    }
    do {
      pipeline = try build(sink: factory)
    } catch  where factory == "glimagesink" {
      RevueLog.log(.warning, "VideoView", "OpenGL cannot draw here (\(error)): drawing with X11")
      glFailed = true
      factory = "ximagesink"
      pipeline = try? build(sink: factory)
    } catch {
      RevueLog.log(.error, "VideoView", "cannot draw: \(error)")
    }
    renderer = pipeline == nil ? "none" : factory
    applyLayout()
    applyOrientation()
    updateDebugOverlay()
    guard keepingPicture, let (buffer, caps) = kept else { return clear() }
    shared.value.withLock { state in
      guard let source = state.source else { return }
      source.caps = caps
      (state.lastCaps, state.lastBuffer) = (caps, buffer)
      try? source.push(buffer)
    }
  }

  /// `appsrc ! videoconvert ! videoflip ! videoscale ! I420 of the view's size ! videoconvert !
  /// sink` (not synchronised, and without quality-of-service: a frame drawn again, with its
  /// time again, would be dropped as late before the sink by `ximagesink`'s), and in debug mode `videobox` (the border) and `textoverlay` (the lines) before the
  /// last `videoconvert`: only then, since they cost a copy of every frame even with no border
  /// (`videobox` converts frames whose colorimetry its output caps do not carry). The crop of
  /// ``LayoutMode/fill`` is made on each frame before it goes in (``render(pixelBuffer:)``).
  private func build(sink factory: String) throws -> MediaPipeline {
    let debug =
      isDebugMode
      ? " ! videobox name=border ! textoverlay name=debug silent=true valignment=top halignment=left"
        + " line-alignment=left font-desc=\"Sans 9\"" : ""
    let description =
      "appsrc name=source format=time is-live=true do-timestamp=true max-buffers=2 leaky-type=downstream"
      + " ! videoconvert ! videoflip name=flip ! videoscale add-borders=true"
      + " ! capsfilter name=size\(debug) ! videoconvert ! \(factory) name=sink sync=false qos=false"
    builds += 1
    let build = builds
    let made = try MediaPipeline(parsing: description) { [weak self] fault in
      RevueLog.log(fault.severity == .error ? .error : .warning, "VideoView", "\(fault)")
      // A view that fails once drawing draws again from the next frame, in a new pipeline
      // (a pipeline that fails to start throws instead).
      if fault.severity == .error { Task { @MainActor in self?.recover(build: build) } }
    }
    let sink = try made.pipeline.element(named: "sink", as: Element.self)
    // Pinch to zoom: the window's Ctrl + scroll wheel, as the sink's navigation events.
    sink.staticPad("sink")?.addProbe(.eventUpstream) { [weak self] _, info in
      guard let structure = info.event?.structure, let gesture = Self.gesture(of: structure) else { return .ok }
      Task { @MainActor in self?.pinch(steps: gesture.steps, released: gesture.released) }
      return .ok
    }
    if let display = factory == "waylandsink" ? waylandSocket : display, sink.hasProperty("display") {
      try sink.set("display", display)
    }
    if case .embedded(let handle) = target, factory != "waylandsink" { sink.setWindowHandle(handle) }
    let box = shared
    let pictures = self.pictures
    // The picture as shown, still I420 (the sink may take RGB).
    // videoflip lets frames through untouched only once its direction has changed to identity
    // (GStreamer 1.22 sets the passthrough on a change only): from mirrored, to what
    // applyOrientation() sets next.
    try made.pipeline.element(named: "flip", as: Element.self).set("video-direction", Value.enumeration("horiz"))
    let shownAt = try made.pipeline.element(named: isDebugMode ? "debug" : "size", as: Element.self)
    shownAt.staticPad("src")?.addProbe(.buffer) { pad, info in
      guard let buffer = info.buffer else { return .ok }
      let caps = pad.currentCaps
      // A clear's black frame (marked by its offset, which every element here keeps) is no
      // picture, even when it reaches the sink after a frame pushed later was let in.
      guard buffer.offset != VideoView.blackMark else { return .ok }
      let shown = box.value.withLock { state in
        if !state.cleared { (state.shown, state.shownCaps) = (buffer, caps) }
        if let pushed = state.pushedAddress {
          state.copies.frames += 1
          if buffer.dataAddress.map({ Int(bitPattern: $0) }) != pushed { state.copies.bytes += buffer.size }
        }
        return !state.cleared
      }
      if shown { pictures.send(()) }
      return .ok
    }
    let source = try made.pipeline.element(named: "source", as: AppSrc.self)
    try made.play()
    // The last frame went into the previous source, with caps this one has not had: a redraw
    // of it here would come before any caps and fail the pipeline (not-negotiated).
    shared.value.withLock { state in
      state.source = source
      (state.lastCaps, state.lastBuffer) = (nil, nil)
    }
    return made
  }

  /// Builds the pipeline again after an error of the running one; after three, draws
  /// offscreen (said in the log).
  private func recover(build: Int) {
    guard build == builds, pipeline != nil else { return }
    failures += 1
    if failures == 3 {
      RevueLog.log(.error, "VideoView", "the view failed three times: it draws offscreen from now on")
    }
    rebuild()
  }

  /// Sets the view's size and the crop of ``LayoutMode/fill`` (on the turned picture).
  private func applyLayout() {
    guard let pipeline = pipeline?.pipeline else { return }
    // The debug border takes 4 pixels on each side.
    let border = isDebugMode ? 4 : 0
    let (width, height) = (Int(size.width) - 2 * border, Int(size.height) - 2 * border)
    if let box = pipeline.element(named: "border") {
      for side in ["left", "right", "top", "bottom"] { try? box.set(side, -border) }
    }
    // I420 for X11 (the cheaper way to its RGB: NV12 through I420 costs less than straight
    // conversion) and offscreen; OpenGL takes NV12 as it comes.
    let formats = renderer == "glimagesink" ? "{ I420, NV12 }" : "I420"
    try? pipeline.element(named: "size")?.set(
      "caps", try Caps("video/x-raw,format=\(formats),width=\(width),height=\(height),pixel-aspect-ratio=1/1"))
    // The crop is made on the picture before it is turned: a quarter turn swaps the ratio.
    let turned = (rotationOverride ?? ._0).swapsDimensions
    let ratio = turned ? (width: height, height: width) : (width: width, height: height)
    shared.value.withLock { $0.fill = layoutMode == .fill ? ratio : nil }
  }

  /// Sets the turn, then the mirror, as one `videoflip` direction.
  private func applyOrientation() {
    let mirrored = Self.mirrors(track, mode: mirrorMode)
    appliedMirror = mirrored
    let direction: String
    switch (rotationOverride ?? ._0, mirrored) {
    case (._0, false): direction = "identity"
    case (._90, false): direction = "90r"
    case (._180, false): direction = "180"
    case (._270, false): direction = "90l"
    // Turned first, then mirrored left to right.
    case (._0, true): direction = "horiz"
    case (._90, true): direction = "ul-lr"
    case (._180, true): direction = "vert"
    case (._270, true): direction = "ur-ll"
    }
    try? pipeline?.pipeline.element(named: "flip")?.set("video-direction", Value.enumeration(direction))
  }

  /// Whether the view mirrors `track` in `mode`: ``MirrorMode/auto`` mirrors the local front camera.
  private static func mirrors(_ track: VideoTrack?, mode: MirrorMode) -> Bool {
    switch mode {
    case .off: false
    case .mirror: true
    case .auto:
      ((track as? LocalVideoTrack)?.capturer as? CameraCapturer)?.position == .front
    }
  }

  /// Whether the view shows nothing: disabled, hidden or not laid out.
  private var isBlank: Bool { !isEnabled || isHidden || !isLaidOut }

  /// Drops frames while disabled, hidden, not laid out or frozen; clears when asked. A frozen
  /// view still counts as rendering until 2 s after its latest frame (``checkRendering()``).
  private func dropsFrames(clearing: Bool) {
    shared.value.withLock { $0.drops = isBlank || isFrozen }
    if clearing { clear() }
    if isBlank { setRendering(false) }
  }

  /// Whether a redraw of the latest frame is scheduled.
  private var redrawScheduled = false

  /// Draws the latest frame again on the main actor's next turn: the changes made together
  /// (a turn, a layout and a size set one after another) are drawn once, as they end up.
  private func scheduleRedraw() {
    guard !redrawScheduled else { return }
    redrawScheduled = true
    Task { @MainActor [weak self] in
      self?.redrawScheduled = false
      self?.redrawLastFrame()
    }
  }

  /// Draws the latest frame again, as the track gave it, with the current crop, turn and size
  /// (a new ``rotationOverride``, ``layoutMode`` or ``size`` shows at once, with no new frame);
  /// the rendering state does not count it. Nothing when the view is cleared.
  private func redrawLastFrame() {
    shared.value.withLock { state in
      guard !state.cleared, let source = state.source, let frame = state.lastFrame else { return }
      let cropped = state.fill.flatMap { Self.crop(frame, to: $0) } ?? frame
      let caps = cropped.caps
      if state.lastCaps != caps {
        source.caps = caps
        state.lastCaps = caps
      }
      state.lastBuffer = cropped.buffer
      try? source.push(cropped.buffer)
    }
  }

  /// Draws black (a black frame of the size of the latest, so that nothing downstream has to
  /// negotiate again) and forgets the picture shown.
  private func clear() {
    shared.value.withLock { state in
      state.drawn = nil
      state.cleared = true
      state.lastFrame = nil
      (state.shown, state.shownCaps) = (nil, nil)
      pictures.send(())
      guard let source = state.source else { return }
      let structure = state.lastCaps?.structure(at: 0)
      let width = structure?.get("width", as: Int.self) ?? 16
      let height = structure?.get("height", as: Int.self) ?? 16
      guard let black = Self.black(width: width, height: height) else { return }
      if state.lastCaps != black.caps {
        source.caps = black.caps
        state.lastCaps = black.caps
      }
      state.lastBuffer = black.buffer
      try? source.push(black.buffer)
    }
    setRendering(false)
  }

  /// A black I420 frame of `width`×`height` (rounded up to even), in the caps of the frames a
  /// track sends, its buffer marked with ``blackMark``.
  private nonisolated static func black(width: Int, height: Int) -> PixelBuffer? {
    let (width, height) = ((width + 1) / 2 * 2, (height + 1) / 2 * 2)
    let bytes = [UInt8](repeating: 16, count: width * height) + [UInt8](repeating: 128, count: width * height / 2)
    guard let frame = try? PixelBuffer(width: width, height: height, format: .i420, bytes: bytes) else { return nil }
    var buffer = frame.buffer
    buffer.offset = blackMark
    return frame.replacingBuffer(buffer)
  }

  /// The offset of a clear's black frames.
  nonisolated static let blackMark: UInt64 = 0x7EEE_B1AC

  private func firstFrameDrawn() {
    guard shared.value.withLock({ $0.drawn?.generation == $0.generation }) else { return }
    didRenderFirstFrame = true
    if !isBlank && !isFrozen { setRendering(true) }
  }

  /// Every quarter second: no frame for 2 s turns ``isRendering`` off; a track that went away
  /// clears the view.
  private func checkRendering() {
    defer { if isDebugMode { updateDebugOverlay() } }
    // A camera switched from front to back (or back) is mirrored (or not) from now on.
    if Self.mirrors(track, mode: mirrorMode) != appliedMirror { applyOrientation() }
    if hadTrack, track == nil {
      hadTrack = false
      clear()
      didRenderFirstFrame = false
    }
    let drawn = shared.value.withLock { $0.drawn }
    if let drawn, ContinuousClock.now - drawn.at < Self.renderingTimeout {
      // Frozen, hidden, disabled or not laid out, the view does not turn rendering again.
      if !isRendering && didRenderFirstFrame && !isBlank && !isFrozen { setRendering(true) }
    } else {
      setRendering(false)
    }
  }

  private func setRendering(_ rendering: Bool) {
    guard isRendering != rendering else { return }
    isRendering = rendering
    broadcast.send(.rendering(rendering))
    updateDebugOverlay()
    for delegate in delegates.all { delegate.videoView(self, didUpdate: rendering) }
  }

  /// Frames drawn at the start of the current second, and when it started.
  private var fpsMark = (frames: 0, at: ContinuousClock.now)
  /// Frames drawn in the last whole second.
  private var framesPerSecond = 0

  /// Shows, updates or hides the debug lines and border.
  private func updateDebugOverlay() {
    guard let pipeline = pipeline?.pipeline else { return }
    try? pipeline.element(named: "border")?.set("fill", Value.enumeration(isRendering ? "green" : "red"))
    guard let overlay = pipeline.element(named: "debug") else { return }
    guard isDebugMode else {
      try? overlay.set("silent", true)
      return
    }
    let (frames, caps) = shared.value.withLock { ($0.framesDrawn, $0.lastCaps) }
    if ContinuousClock.now - fpsMark.at >= .seconds(1) {
      framesPerSecond = frames - fpsMark.frames
      fpsMark = (frames, .now)
    }
    let structure = caps?.structure(at: 0)
    let resolution =
      didRenderFirstFrame
      ? "\(structure?.get("width", as: Int.self) ?? 0)x\(structure?.get("height", as: Int.self) ?? 0)" : "-"
    let lines = [
      "sid: \(track?.sid ?? "nil")", "resolution: \(resolution)", "firstFrame: \(didRenderFirstFrame)",
      "isRendering: \(isRendering)", "renderMode: \(renderMode) (\(renderer))",
      "renderers: \(track?.renderers.all.count ?? 0)", "FPS: \(framesPerSecond)",
    ]
    try? overlay.set("text", lines.joined(separator: "\n"))
    try? overlay.set("silent", false)
    redraw()
  }

  /// Draws the latest picture again (the debug overlay changed while no frame comes); the
  /// rendering state does not count it.
  private func redraw() {
    shared.value.withLock { state in
      guard let source = state.source, let buffer = state.lastBuffer else { return }
      try? source.push(buffer)
    }
  }
}
