import CX11
import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Issue 15's ``VideoView`` (seed 001's rules), offscreen: the picture it shows, read back as
/// drawn (``VideoView/shownPicture``, what ``VideoView/snapshot()`` encodes), pixel by pixel.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct VideoViewTests {
  init() { TestEnvironment.prepare() }

  /// A 320×180 frame, red on the left half and blue on the right, or all green.
  static func frame(green: Bool = false) throws -> PixelBuffer {
    let (width, height) = (320, 180)
    // BT.601 video range: red (81, 90, 240), blue (41, 240, 110), green (145, 54, 34).
    let left: (UInt8, UInt8, UInt8) = green ? (145, 54, 34) : (81, 90, 240)
    let right: (UInt8, UInt8, UInt8) = green ? (145, 54, 34) : (41, 240, 110)
    var luma = [UInt8](), u = [UInt8](), v = [UInt8]()
    for _ in 0..<height { for x in 0..<width { luma.append(x < width / 2 ? left.0 : right.0) } }
    for _ in 0..<height / 2 {
      for x in 0..<width / 2 {
        u.append(x < width / 4 ? left.1 : right.1)
        v.append(x < width / 4 ? left.2 : right.2)
      }
    }
    return try PixelBuffer(width: width, height: height, format: .i420, bytes: luma + u + v)
  }

  /// The colour at (`x`, `y`) of an I420 picture: "red", "blue", "green", "black" or "other".
  static func color(_ picture: PixelBuffer, _ x: Int, _ y: Int) -> String {
    guard let luma = try? picture.planeBytes(0), let u = try? picture.planeBytes(1), let v = try? picture.planeBytes(2)
    else { return "none" }
    let sample = (
      Int(luma[y * picture.planes[0].stride + x]), Int(u[(y / 2) * picture.planes[1].stride + x / 2]),
      Int(v[(y / 2) * picture.planes[2].stride + x / 2])
    )
    let known = ["red": (81, 90, 240), "blue": (41, 240, 110), "green": (145, 54, 34), "black": (16, 128, 128)]
    for (name, value) in known
    where abs(sample.0 - value.0) < 20 && abs(sample.1 - value.1) < 20 && abs(sample.2 - value.2) < 20 {
      return name
    }
    return "other \(sample)"
  }

  /// Waits, within `seconds`, until `view` shows a picture that satisfies `condition` (given
  /// nil while it shows nothing), and returns it; with `feeding`, pushes the frame once and
  /// again after each picture drawn.
  @discardableResult static func picture(
    of view: VideoView, _ what: String, within seconds: Double = 10,
    feeding: (capturer: BufferCapturer, frame: PixelBuffer)? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, until condition: @escaping @Sendable (PixelBuffer?) -> Bool
  ) async throws -> PixelBuffer? {
    let pictures = view.pictures.subscribe()
    feeding.map { $0.capturer.capture($0.frame) }
    if condition(view.shownPicture) { return view.shownPicture }
    do {
      return try await withDeadline(seconds, what, sourceLocation: sourceLocation) {
        for await _ in pictures {
          let shown = view.shownPicture
          if condition(shown) { return shown }
          feeding.map { $0.capturer.capture($0.frame) }
        }
        throw CancellationError()
      }
    } catch {
      let last = view.shownPicture.map { picture in
        "\(picture.width)x\(picture.height), "
          + [(10, 100), (100, 5), (100, 100), (190, 100)].map {
            "(\($0.0), \($0.1)) \(color(picture, $0.0, $0.1))"
          }.joined(separator: ", ")
      }
      throw DeadlineExceeded("\(error); the view shows \(last ?? "nothing")")
    }
  }

  /// A view of 200×200 showing a buffer track, and a way to push frames into it.
  final class Stage {
    let track = LocalVideoTrack.createBufferTrack(name: "test", source: .camera)
    let view: VideoView
    var capturer: BufferCapturer { track.capturer as! BufferCapturer }

    @MainActor init(size: Dimensions = Dimensions(width: 200, height: 200)) async throws {
      view = VideoView(size: size, target: .offscreen)
      view.track = track
      try await capturer.startCapture()
    }

    /// Pushes `frame`, again after each picture drawn, until the view shows a picture that
    /// satisfies `condition`, within 10 s.
    @MainActor func show(
      _ frame: PixelBuffer, _ what: String, until condition: @escaping @Sendable (PixelBuffer) -> Bool
    ) async throws -> PixelBuffer {
      try await VideoViewTests.picture(of: view, what, feeding: (capturer, frame)) { $0.map(condition) ?? false }!
    }
  }

  @MainActor @Test func fitShowsBlackBarsAndFillCrops() async throws {
    let stage = try await Stage()
    let frame = try Self.frame()
    stage.view.layoutMode = .fit
    // 320×180 in 200×200: 200×112 in the middle, 44 rows of black above and below.
    let fit = try await stage.show(frame, "the fitted picture") { Self.color($0, 100, 5) == "black" }
    #expect(fit.width == 200 && fit.height == 200)
    #expect(Self.color(fit, 50, 100) == "red" && Self.color(fit, 150, 100) == "blue")
    stage.view.layoutMode = .fill
    // Cropped to a square: the middle 180×180 of the frame, no bars.
    let fill = try await stage.show(frame, "the filled picture") { Self.color($0, 100, 5) != "black" }
    #expect(Self.color(fill, 10, 5) == "red" && Self.color(fill, 190, 195) == "blue")
    let png = try #require(try await stage.view.snapshot())
    #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
    #expect(Array(png[16..<24]) == [0, 0, 0, 200, 0, 0, 0, 200], "the PNG is the view's 200×200")
    try await stage.capturer.stopCapture()
  }

  @MainActor @Test func mirroringAndRotationTurnFirstThenMirror() async throws {
    let stage = try await Stage()
    let frame = try Self.frame()
    stage.view.layoutMode = .fill
    #expect(stage.view.mirrorMode == .auto)
    // A buffer track is not mirrored in .auto: red stays on the left.
    _ = try await stage.show(frame, "the picture as it is") { Self.color($0, 10, 100) == "red" }
    stage.view.mirrorMode = .mirror
    _ = try await stage.show(frame, "the mirrored picture") {
      Self.color($0, 10, 100) == "blue" && Self.color($0, 190, 100) == "red"
    }
    stage.view.mirrorMode = .off
    stage.view.rotationOverride = ._90
    stage.view.layoutMode = .fit
    // Turned a quarter clockwise, the left half (red) is on top; the 180×320 picture fits
    // 200×200 as 112×200, with bars left and right.
    let turned = try await stage.show(frame, "the turned picture") {
      Self.color($0, 100, 20) == "red" && Self.color($0, 100, 180) == "blue"
    }
    #expect(Self.color(turned, 5, 100) == "black" && Self.color(turned, 195, 100) == "black")
    stage.view.mirrorMode = .mirror
    // Turned, then mirrored left to right: still red on top.
    _ = try await stage.show(frame, "the turned, mirrored picture") {
      Self.color($0, 100, 20) == "red" && Self.color($0, 100, 180) == "blue"
    }
    stage.view.rotationOverride = ._180
    _ = try await stage.show(frame, "the half-turned, mirrored picture") {
      Self.color($0, 100, 60) == "red" || Self.color($0, 60, 100) == "red"
    }
    try await stage.capturer.stopCapture()
  }

  @MainActor @Test func frozenKeepsTheLastPictureDisabledAndHiddenClear() async throws {
    let stage = try await Stage()
    stage.view.layoutMode = .fill
    _ = try await stage.show(try Self.frame(), "the split picture") { Self.color($0, 10, 100) == "red" }
    stage.view.isFrozen = true
    let green = try Self.frame(green: true)
    for _ in 0..<10 { stage.capturer.capture(green) }
    let frozen = try #require(stage.view.shownPicture)
    #expect(Self.color(frozen, 10, 100) == "red", "a frozen view keeps its picture")
    // The track set again while frozen: the frozen picture goes, isFrozen stays, and the view
    // stays blank until it is unfrozen.
    stage.view.track = stage.track
    #expect(stage.view.isFrozen && stage.view.shownPicture == nil && !stage.view.didRenderFirstFrame)
    for _ in 0..<5 { stage.capturer.capture(green) }
    #expect(stage.view.shownPicture == nil, "a frozen view with a new track stays blank")
    stage.view.isFrozen = false
    _ = try await stage.show(green, "the next frame after the freeze") { Self.color($0, 10, 100) == "green" }
    // A new render mode clears the view; the next frame draws.
    stage.view.renderMode = .x11
    #expect(stage.view.shownPicture == nil)
    _ = try await stage.show(green, "a frame in the new mode") { Self.color($0, 10, 100) == "green" }
    for hide in [false, true] {
      if hide { stage.view.isHidden = true } else { stage.view.isEnabled = false }
      #expect(stage.view.shownPicture == nil && !stage.view.isRendering, "cleared")
      for _ in 0..<5 { stage.capturer.capture(green) }
      #expect(stage.view.shownPicture == nil, "new frames are dropped")
      (stage.view.isEnabled, stage.view.isHidden) = (true, false)
      _ = try await stage.show(green, "frames again") { Self.color($0, 10, 100) == "green" }
    }
    try await stage.capturer.stopCapture()
  }

  /// Records ``VideoView/isRendering`` as the delegate hears it.
  final class RenderingWatch: VideoViewDelegate {
    let changes: AsyncStream<Bool>
    private let continuation: AsyncStream<Bool>.Continuation
    init() { (changes, continuation) = AsyncStream.makeStream() }
    func videoView(_ videoView: VideoView, didUpdate isRendering: Bool) { continuation.yield(isRendering) }
  }

  @MainActor @Test func isRenderingFollowsFramesAndTheTrackIsHeldWeakly() async throws {
    var stage: Stage? = try await Stage()
    let view = try #require(stage?.view)
    let watch = RenderingWatch()
    view.add(delegate: watch)
    let changes = watch.changes
    _ = try await stage?.show(try Self.frame(), "a picture") { _ in true }
    try await withDeadline(5, "isRendering to turn true") { for await rendering in changes where rendering { return } }
    #expect(view.isRendering && view.didRenderFirstFrame)
    // No frame for 2 s: not rendering.
    let quiet = ContinuousClock.now
    try await withDeadline(10, "isRendering to turn false") {
      for await rendering in changes where !rendering { return }
    }
    #expect(ContinuousClock.now - quiet >= .milliseconds(1900))
    #expect(view.shownPicture != nil, "a view that stopped getting frames keeps its picture")
    // The track goes: the view's track is nil and the view clears.
    try await stage?.capturer.stopCapture()
    stage = nil
    #expect(view.track == nil)
    try await Self.picture(of: view, "the view to clear when its track goes", within: 5) { $0 == nil }
  }

  @MainActor @Test func withNoDisplayAWindowViewDrawsOffscreen() async throws {
    let view = VideoView(size: Dimensions(width: 64, height: 64), target: .window)
    if Display.current() == nil {
      #expect(view.renderer == "fakesink")
    } else {
      #expect(view.renderer == "ximagesink")
    }
    #expect(view.renderMode == .auto)
  }

  /// The debug overlay: lines of white text at the top left, in a border green while
  /// rendering and red once it is not.
  @MainActor @Test func theDebugOverlayHasItsLinesAndAGreenOrRedBorder() async throws {
    let stage = try await Stage()
    stage.view.layoutMode = .fill
    stage.view.isDebugMode = true
    let split = try Self.frame()
    /// Whether the top left of `picture` has light (text) on the red picture (luma 81).
    let hasText = { @Sendable (picture: PixelBuffer) -> Bool in
      guard let luma = try? picture.planeBytes(0) else { return false }
      return (20..<70).contains { y in (20..<110).contains { x in luma[y * picture.planes[0].stride + x] > 150 } }
    }
    let shown = try await stage.show(split, "the overlay: its lines in a green border") {
      Self.color($0, 1, 1) == "green" && Self.color($0, 198, 198) == "green" && hasText($0)
    }
    #expect(Self.color(shown, 10, 150) == "red", "the picture inside the border")
    // No frame for 2 s: not rendering, and the border turns red.
    try await Self.picture(of: stage.view, "the border to turn red") { $0.map { Self.color($0, 1, 1) } == "red" }
    #expect(!stage.view.isRendering)
    stage.view.isDebugMode = false
    _ = try await stage.show(split, "the picture without the overlay") {
      Self.color($0, 1, 1) == "red" && Self.color($0, 198, 198) == "blue"
    }
    try await stage.capturer.stopCapture()
  }

  /// Seed 001, "When your camera is muted": the placeholder while muted, nothing without one,
  /// a new placeholder at once, frames again once unmuted; a view attached while muted starts
  /// with the placeholder.
  @MainActor @Test func aMutedTrackShowsItsPlaceholderOrNothing() async throws {
    let stage = try await Stage()
    stage.view.layoutMode = .fill
    let split = try Self.frame()
    _ = try await stage.show(split, "the picture") { Self.color($0, 10, 100) == "red" }
    let green = try Self.frame(green: true)
    stage.track.mutePlaceholder = green
    try await stage.track.mute()
    _ = try await stage.show(split, "the placeholder while muted") { Self.color($0, 10, 100) == "green" }
    stage.track.mutePlaceholder = nil
    try await Self.picture(of: stage.view, "the view to clear: no placeholder", within: 5) { $0 == nil }
    for _ in 0..<5 { stage.capturer.capture(split) }
    #expect(stage.view.shownPicture == nil, "frames do not show while muted")
    stage.track.mutePlaceholder = green
    _ = try await stage.show(split, "the new placeholder") { Self.color($0, 10, 100) == "green" }
    let late = VideoView(size: Dimensions(width: 100, height: 100), target: .offscreen)
    late.track = stage.track
    try await Self.picture(of: late, "a view attached while muted to show the placeholder", within: 5) {
      $0.map { Self.color($0, 50, 50) } == "green"
    }
    try await stage.track.unmute()
    _ = try await stage.show(split, "frames once unmuted") { Self.color($0, 10, 100) == "red" }
    try await stage.capturer.stopCapture()
  }

  /// While the camera is off, custom renderers get the placeholder too, a few times a second.
  @Test func aCameraThatIsOffSendsItsPlaceholderToRenderers() async throws {
    let track = LocalVideoTrack.createCameraTrack()
    track.mutePlaceholder = try Self.frame(green: true)
    let renderer = FrameStream()
    track.add(videoRenderer: renderer)
    _ = try await renderer.next("the placeholder, three times") { _ in renderer.count >= 3 }
    #expect(track.capturer?.captureState == .idle)
  }

  /// A window view on Xvfb, read back from the screen itself (``ScreenShareCapturer``, which
  /// captures the display): the window shows the picture, mirrored as asked.
  @MainActor @Test func aWindowViewShowsThePictureOnTheScreen() async throws {
    let display = try await VirtualDisplay(width: 320, height: 240)
    let track = LocalVideoTrack.createBufferTrack(name: "test", source: .camera)
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    var view: VideoView! = VideoView(
      size: Dimensions(width: 320, height: 240), target: .window, display: display.display)
    #expect(view.renderer == "ximagesink")
    view.track = track
    view.layoutMode = .fill

    let screen = LocalVideoTrack.createScreenShareTrack(
      options: ScreenShareCaptureOptions(
        dimensions: Dimensions(width: 320, height: 240), fps: 15, showCursor: false, display: display.display))
    let seen = FrameStream()
    screen.add(videoRenderer: seen)
    try await screen.capturer?.startCapture()
    let frame = try Self.frame()
    let feeding = Task { @MainActor in
      while !Task.isCancelled {
        capturer.capture(frame)
        try? await Task.sleep(for: .milliseconds(33))  // A 30 fps source.
      }
    }
    defer { feeding.cancel() }
    _ = try await seen.next("the window, red on the left and blue on the right") {
      Self.color($0, 20, 120) == "red" && Self.color($0, 300, 120) == "blue"
    }
    view.mirrorMode = .mirror
    _ = try await seen.next("the window, mirrored") {
      Self.color($0, 20, 120) == "blue" && Self.color($0, 300, 120) == "red"
    }
    feeding.cancel()
    try await screen.capturer?.stopCapture()
    try await capturer.stopCapture()
    // The view lets go of the X server before it goes (Xlib ends a process whose server dies).
    view = nil
    try await display.stop()
  }

  /// An application's own X11 window, made with Xlib as GTK or Qt would, and read back from
  /// the X server.
  final class HostWindow: @unchecked Sendable {
    // Safety (@unchecked): the connection is used by one task at a time (the test's).
    let connection: OpaquePointer
    let window: Window
    let size: (width: Int32, height: Int32)

    init(on display: String, width: Int32, height: Int32) throws {
      connection = try #require(XOpenDisplay(display), "cannot open display \(display)")
      let screen = XDefaultScreen(connection)
      let black = XBlackPixel(connection, screen)
      window = XCreateSimpleWindow(
        connection, XRootWindow(connection, screen), 0, 0, UInt32(width), UInt32(height), 0, black, black)
      size = (width, height)
      XMapWindow(connection, window)
      XSync(connection, 0)
    }

    /// The colour at (`x`, `y`) of the window as the server has it: "red", "green", "blue",
    /// "black" or "other".
    func color(_ x: Int32, _ y: Int32) -> String {
      guard let image = XGetImage(connection, window, 0, 0, UInt32(size.width), UInt32(size.height), ~0, ZPixmap)
      else { return "none" }
      defer { _ = image.pointee.f.destroy_image(image) }
      let pixel = image.pointee.f.get_pixel(image, x, y)
      let (red, green, blue) = (Int(pixel >> 16 & 0xFF), Int(pixel >> 8 & 0xFF), Int(pixel & 0xFF))
      switch (red, green, blue) {
      case (200..., ..<60, ..<60): return "red"
      case (..<60, 200..., ..<60): return "green"
      case (..<60, ..<60, 200...): return "blue"
      case (..<30, ..<30, ..<30): return "black"
      default: return "other (\(red), \(green), \(blue))"
      }
    }

    /// Closes the window and the connection.
    func close() {
      XDestroyWindow(connection, window)
      XCloseDisplay(connection)
    }
  }

  /// Seed 001's rules on a real window of the X server, read back from it pixel by pixel: fit
  /// (black bars) and fill, mirroring, rotation, freezing, the debug border's colour and the
  /// mute placeholder. The view is `.embedded(windowHandle:)` in the application's own window
  /// (GStreamer's video overlay), which shows the picture only when the embedding works.
  @MainActor @Test func theRulesHoldInARealWindow() async throws {
    let display = try await VirtualDisplay(width: 320, height: 240)
    let host = try HostWindow(on: display.display, width: 200, height: 150)
    let track = LocalVideoTrack.createBufferTrack(name: "test", source: .camera)
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    var view: VideoView! = VideoView(
      size: Dimensions(width: 200, height: 150), target: .embedded(windowHandle: UInt(host.window)),
      display: display.display)
    view.track = track
    // A failed check lets go of the view and the window before the X server stops: Xlib ends
    // the process (and every test in it) when its server goes away under an open connection.
    var failure: (any Error)?
    do {
      let (frame, green) = (try Self.frame(), try Self.frame(green: true))
      /// Waits until the window satisfies `condition`, pushing `frame` after each picture drawn.
      func window(_ what: String, showing frame: PixelBuffer, until condition: @escaping @Sendable () -> Bool)
        async throws
      {
        try await Self.picture(of: view, "the window: \(what)", feeding: (capturer, frame)) { _ in condition() }
      }
      // The 16:9 picture in a 4:3 window: fit adds bars above and below, fill crops the sides.
      view.layoutMode = .fit
      try await window("fit, black bars", showing: frame) {
        host.color(100, 4) == "black" && host.color(100, 145) == "black" && host.color(20, 75) == "red"
          && host.color(180, 75) == "blue"
      }
      view.layoutMode = .fill
      try await window("fill, no bars", showing: frame) { host.color(20, 4) == "red" && host.color(180, 145) == "blue" }
      view.mirrorMode = .mirror
      try await window("mirrored", showing: frame) { host.color(20, 75) == "blue" && host.color(180, 75) == "red" }
      view.mirrorMode = .off
      view.rotationOverride = ._90
      try await window("turned a quarter: red on top", showing: frame) {
        host.color(100, 20) == "red" && host.color(100, 130) == "blue"
      }
      view.rotationOverride = nil
      try await window("upright again", showing: frame) { host.color(20, 75) == "red" }
      // Frozen: green frames come, the window keeps the red and blue picture.
      view.isFrozen = true
      let seen = FrameStream()
      track.add(videoRenderer: seen)
      for _ in 0..<5 { capturer.capture(green) }
      _ = try await seen.next("the green frames at the track") { _ in seen.count >= 5 }
      #expect(host.color(20, 75) == "red" && host.color(180, 75) == "blue", "a frozen view keeps its picture")
      view.isFrozen = false
      try await window("green once unfrozen", showing: green) { host.color(100, 75) == "green" }
      // Debug mode: a green border while rendering.
      view.isDebugMode = true
      try await window("the debug border, green", showing: frame) {
        host.color(1, 1) == "green" && host.color(198, 148) == "green" && host.color(20, 75) == "red"
      }
      view.isDebugMode = false
      // Muted: the placeholder, in place of the frames still pushed.
      track.mutePlaceholder = green
      try await track.mute()
      try await window("the placeholder while muted", showing: frame) {
        host.color(20, 75) == "green" && host.color(180, 75) == "green"
      }
      try await track.unmute()
      try await window("the picture again", showing: frame) { host.color(20, 75) == "red" }
    } catch {
      failure = error
    }
    try await capturer.stopCapture()
    // Closed, the view lets go of the window at once: the App may destroy it next. Only the
    // App's own connection is left.
    view.close()
    let connections = try await display.connections()
    #expect(connections == 1, "the view's sink has closed its connection: \(connections) open")
    #expect(view.renderer == "none" && !view.isRendering && view.track == nil)
    view = nil
    host.close()
    try await display.stop()
    if let failure { throw failure }
  }

  /// An I420 frame of the view's size is drawn in the memory it came in, up to the sink's own
  /// conversion; turning it is the view's first copy.
  @MainActor @Test func anI420FrameOfTheViewsSizeIsNotCopied() async throws {
    VideoView.countsCopiedBytes = true
    let stage = try await Stage(size: Dimensions(width: 320, height: 180))
    let frame = try Self.frame()
    _ = try await stage.show(frame, "the picture") { Self.color($0, 10, 90) == "red" }
    #expect(stage.view.bytesCopiedPerFrame == 0)
    stage.view.mirrorMode = .mirror
    _ = try await stage.show(frame, "the mirrored picture") { Self.color($0, 10, 90) == "blue" }
    #expect((stage.view.bytesCopiedPerFrame ?? 0) > 0, "a mirrored picture is a new one")
    try await stage.capturer.stopCapture()
  }

  /// On a Wayland session (Weston, headless) a window view draws with `waylandsink`: the sink
  /// draws the frames. (Weston gives no way to read its screen back here.)
  @MainActor @Test func aWindowViewDrawsOnWayland() async throws {
    let compositor = try await VirtualWaylandDisplay()
    let track = LocalVideoTrack.createBufferTrack(name: "test", source: .camera)
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    var view: VideoView! = VideoView(size: Dimensions(width: 320, height: 180), display: compositor.socket)
    #expect(view.renderer == "waylandsink")
    view.track = track
    let frame = try Self.frame()
    let drawn = Mutex(0)
    try await Self.picture(of: view, "ten pictures drawn on Wayland", feeding: (capturer, frame)) { _ in
      drawn.withLock { count in
        count += 1
        return count >= 10
      }
    }
    #expect(view.renderer == "waylandsink" && view.isRendering && view.didRenderFirstFrame)
    #expect(view.framesDrawnBySink >= 5, "\(view.framesDrawnBySink) frames drawn by waylandsink")
    try await capturer.stopCapture()
    view = nil
    await compositor.stop()
  }

  /// `.auto` mirrors the local front camera only: not its back camera, not a buffer track.
  @MainActor @Test func autoMirrorsTheFrontCameraOnly() {
    let view = VideoView(size: Dimensions(width: 64, height: 64), target: .offscreen)
    let front = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(position: .front))
    let back = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(position: .back))
    let buffer = LocalVideoTrack.createBufferTrack(name: "test", source: .camera)
    view.track = front
    #expect(view.appliedMirror)
    view.track = back
    #expect(!view.appliedMirror)
    view.track = buffer
    #expect(!view.appliedMirror)
    view.mirrorMode = .mirror
    #expect(view.appliedMirror)
    view.mirrorMode = .off
    view.track = front
    #expect(!view.appliedMirror)
  }

  /// Records the sizes a view's delegate hears.
  final class SizeWatch: VideoViewDelegate {
    var sizes: [Dimensions] = []
    func videoView(_ videoView: VideoView, didUpdate size: Dimensions) { sizes.append(size) }
  }

  /// A new size is told to the delegates (not the same size again) and the picture follows.
  @MainActor @Test func aNewSizeIsToldAndDrawn() async throws {
    let stage = try await Stage()
    let watch = SizeWatch()
    stage.view.add(delegate: watch)
    stage.view.size = Dimensions(width: 120, height: 80)
    stage.view.size = Dimensions(width: 120, height: 80)
    #expect(watch.sizes == [Dimensions(width: 120, height: 80)])
    _ = try await stage.show(try Self.frame(), "the picture at the new size") { $0.width == 120 && $0.height == 80 }
    stage.view.remove(delegate: watch)
    stage.view.size = Dimensions(width: 64, height: 64)
    #expect(watch.sizes.count == 1)
    stage.view.add(delegate: watch)
    stage.view.removeAllDelegates()
    stage.view.size = Dimensions(width: 96, height: 64)
    #expect(watch.sizes.count == 1 && stage.view.delegates.all.isEmpty)
    try await stage.capturer.stopCapture()
  }

  /// `.gl` draws with `glimagesink` where OpenGL can, and falls back to X11 where it cannot;
  /// either way the window shows frames.
  @MainActor @Test func theGLModeDrawsOrFallsBackToX11() async throws {
    let display = try await VirtualDisplay(width: 320, height: 240)
    let track = LocalVideoTrack.createBufferTrack(name: "test", source: .camera)
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    var view: VideoView! = VideoView(
      size: Dimensions(width: 320, height: 240), target: .window, display: display.display)
    view.renderMode = .gl
    #expect(["glimagesink", "ximagesink"].contains(view.renderer), "\(view.renderer)")
    view.track = track
    let frame = try Self.frame()
    let drawn = try await Self.picture(of: view, "a picture drawn with \(view.renderer)", feeding: (capturer, frame)) {
      $0.map { Self.color($0, 20, 120) } == "red"
    }
    #expect(drawn != nil)
    print("renderMode .gl draws with \(view.renderer)")
    try await capturer.stopCapture()
    view = nil
    try await display.stop()
  }
}

/// ``PixelBuffer/cropped(x:y:width:height:)``, the crop of a view's fill: the same bytes,
/// described from another origin, for both 4:2:0 layouts.
@Suite(.tier(.pipeline), .sharedProcess) struct PixelBufferCropTests {
  @Test(arguments: [PixelFormat.i420, .nv12]) func aCropIsTheSameBytesFromAnotherOrigin(format: PixelFormat) throws {
    let (width, height) = (16, 8)
    // Luma is 16 * row + column; chroma 100 + 10 * row + byte.
    let luma = (0..<height).flatMap { row in (0..<width).map { UInt8(16 * row + $0) } }
    let chromaRows = (0..<height / 2).map { row in (0..<width).map { UInt8(100 + 10 * row + $0) } }
    let chroma: [UInt8] =
      format == .nv12
      ? chromaRows.flatMap { $0 }
      : chromaRows.map { Array($0.prefix(width / 2)) }.flatMap { $0 }
        + chromaRows.map { Array($0.prefix(width / 2)) }.flatMap { $0 }
    let frame = try PixelBuffer(width: width, height: height, format: format, bytes: luma + chroma)
    let part = try #require(frame.cropped(x: 4, y: 2, width: 8, height: 4))
    #expect(part.width == 8 && part.height == 4 && part.buffer.size == frame.buffer.size, "no copy")
    try part.withPlane(0) { bytes, plane in
      #expect(bytes[0] == UInt8(16 * 2 + 4))
      #expect(bytes[plane.stride + 7] == UInt8(16 * 3 + 11))
    }
    try part.withPlane(1) { bytes, plane in
      // Chroma row 1; byte 4 in NV12's interleaved plane, 2 in I420's.
      #expect(bytes[0] == UInt8(100 + 10 + (format == .nv12 ? 4 : 2)))
    }
    #expect(frame.cropped(x: 1, y: 0, width: 8, height: 4) == nil, "odd origins cannot be described")
    #expect(frame.cropped(x: 12, y: 0, width: 8, height: 4) == nil, "outside the picture")
  }
}
