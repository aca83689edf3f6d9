import Synchronization

/// A video track of this participant: the camera, the screen share, or a buffer track.
public final class LocalVideoTrack: VideoTrack, VideoFrameSink, @unchecked Sendable {
  // Safety (@unchecked): the processor and placeholder are in Mutexes.

  /// The capturer that produces the track's frames.
  public let capturer: VideoCapturer?

  private let processorBox = Mutex<(any VideoProcessor)?>(nil)
  private let placeholder = Mutex<PixelBuffer?>(nil)
  /// Where the track's frames are sent: its publications' senders, WHIP sessions, RTSP media.
  private let sinks = MediaSinks()
  /// Sends the placeholder while the camera is off.
  private let offAir = Mutex<Task<Void, Never>?>(nil)
  /// Closed the moment the camera is switched off: frames still coming from it are held back.
  let gate = DeliveryGate()

  /// How often the placeholder is sent while the camera is off.
  static let placeholderInterval: Duration = .milliseconds(200)

  init(name: String, source: Source, capturer: VideoCapturer) {
    self.capturer = capturer
    super.init(name: name, source: source)
    capturer.frameSink = self
    if capturer is CameraCapturer { followCamera(capturer) }
  }

  deinit { offAir.withLock { $0 }?.cancel() }

  /// The size a publication encodes the track at: its frames' size, else the size its camera
  /// was asked for (before the first frame), else 1280×720.
  var publishedSize: Dimensions {
    capturer?.dimensions ?? (capturer as? CameraCapturer)?.options.dimensions ?? .h720_169
  }

  /// While the camera is off, publications get the placeholder (a few times a second), so
  /// receivers show it instead of a frozen last frame; the publication never ends because of it.
  private func followCamera(_ capturer: VideoCapturer) {
    let events = capturer.events
    Task { [weak self] in
      self?.updateOffAir()
      for await event in events {
        guard let self else { return }
        if case .state = event { self.updateOffAir() }
      }
    }
  }

  /// Whether this is a camera track whose camera is off (switched off, or not capturing).
  private var isCameraOff: Bool {
    guard let camera = capturer as? CameraCapturer else { return false }
    return camera.captureState != .capturing || !gate.isOpen
  }

  /// Runs the placeholder loop exactly while a camera track is published or rendered and its
  /// camera is off; with no placeholder, views clear once.
  private func updateOffAir() {
    signalMute()
    guard capturer is CameraCapturer else { return }
    let needed = isCameraOff && (!sinks.isEmpty || !renderers.all.isEmpty)
    if needed && mutePlaceholder == nil { clearRenderers() }
    offAir.withLock { task in
      guard needed != (task != nil) else { return }
      task?.cancel()
      task = nil
      guard needed else { return }
      task = Task { [weak self] in
        // The track is only borrowed for each send, never across the sleep.
        while !Task.isCancelled, self?.sendPlaceholder() != nil {
          try? await Task.sleep(for: LocalVideoTrack.placeholderInterval)
        }
      }
    }
  }

  /// Sends the placeholder, if there is one, to every renderer and publication.
  private func sendPlaceholder() {
    guard let placeholder = mutePlaceholder else { return }
    render(placeholder)
    sinks.send(placeholder.buffer, caps: placeholder.caps, capturedAt: nil)
  }

  /// Adds a renderer; while the track is muted or its camera off, it starts with the
  /// placeholder, or (a view) empty.
  public override func add(videoRenderer: any VideoRenderer) {
    super.add(videoRenderer: videoRenderer)
    guard isMuted || isCameraOff else { return }
    if let placeholder = mutePlaceholder {
      videoRenderer.render(pixelBuffer: placeholder)
    } else if let view = videoRenderer as? any ClearingRenderer {
      view.clearPicture()
    }
    updateOffAir()
  }

  /// A track filled with the App's own frames through its ``BufferCapturer``.
  /// - Parameters:
  ///   - name: the track's name; `buffer` by default.
  ///   - source: what receivers treat it as; `.unknown` by default (`.camera` to stand for the camera).
  public static func createBufferTrack(name: String = "buffer", source: Source = .unknown) -> LocalVideoTrack {
    LocalVideoTrack(name: name, source: source, capturer: BufferCapturer())
  }

  /// A screen share track, capturing the X11 screen with `options` (``ScreenShareCapturer``);
  /// ``LocalParticipant/screenShareTrack`` is one.
  public static func createScreenShareTrack(
    name: String = "screen", options: ScreenShareCaptureOptions = ScreenShareCaptureOptions()
  ) -> LocalVideoTrack {
    LocalVideoTrack(name: name, source: .screenShareVideo, capturer: ScreenShareCapturer(options: options))
  }

  /// The camera's track; the camera starts with ``LocalParticipant/setCamera(enabled:options:)``
  /// (or its capturer's ``VideoCapturer/startCapture()``).
  /// - Parameters:
  ///   - name: the track's name; `camera` by default.
  ///   - options: what the camera produces.
  ///   - processor: changes each frame before it is shown and sent.
  public static func createCameraTrack(
    name: String = "camera", options: CameraCaptureOptions = CameraCaptureOptions(),
    processor: (any VideoProcessor)? = nil
  ) -> LocalVideoTrack {
    let track = LocalVideoTrack(name: name, source: .camera, capturer: CameraCapturer(options: options))
    track.processor = processor
    return track
  }

  /// Changes each frame before it is shown and sent; settable at any time, from any thread.
  public var processor: (any VideoProcessor)? {
    get { processorBox.withLock { $0 } }
    set {
      processorBox.withLock { $0 = newValue }
      followConsumers()
    }
  }

  /// The picture renderers and receivers get instead of frames while the track is muted or the
  /// camera is off; nil sends nothing, and views clear (custom renderers keep what they drew
  /// last). It does not go through the processor.
  public var mutePlaceholder: PixelBuffer? {
    get { placeholder.withLock { $0 } }
    set {
      placeholder.withLock { $0 = newValue }
      guard isMuted || isCameraOff else { return }
      if let newValue { render(newValue) } else { clearRenderers() }
    }
  }

  /// Tells the publications whether receivers see the track as muted: while it is muted or its
  /// camera off (``RemoteVideoTrack`` then says ``Track/isMuted``).
  private func signalMute() {
    let muted = isMuted || isCameraOff
    sinks.signal(muted: muted)
  }

  override func didChangeMute(_ isMuted: Bool) {
    signalMute()
    guard isMuted else { return }
    if let placeholder = mutePlaceholder { render(placeholder) } else { clearRenderers() }
  }

  func process(_ frame: PixelBuffer) -> PixelBuffer? {
    guard let processor else { return frame }
    return processor.process(pixelBuffer: frame)
  }

  /// Hands a frame (or the placeholder, while muted or switched off) to the renderers and publications.
  func deliver(_ frame: PixelBuffer) {
    gate.pass { isOpen in
      let sent: PixelBuffer
      if isMuted || !isOpen {
        guard let placeholder = mutePlaceholder else { return }
        sent = placeholder
      } else {
        sent = frame
      }
      render(sent)
      sinks.send(sent.buffer, caps: sent.caps, capturedAt: frame.timestamp)
    }
  }

  /// Whether a publication sends the track: one of a room's, a ``WHIPPublication`` or an
  /// ``RTSPBroadcast``.
  public var isPublished: Bool { !sinks.isEmpty }

  /// Starts handing every delivered frame to `sink` (a publication's), and tells it now whether
  /// the track is muted.
  func attach(_ sink: any MediaSink) {
    sinks.attach(sink)
    updateOffAir()
    followConsumers()
  }

  /// Stops handing frames to `sink`.
  func detach(_ sink: any MediaSink) {
    sinks.detach(sink)
    updateOffAir()
    followConsumers()
  }

  /// Tells a camera the formats its processor needs and the raw formats every sink's encoders
  /// take as they come, so that its capture delivers one of them (``CameraCapturer/consumers``):
  /// one conversion there, if any, shared by every sink, instead of one in each.
  private func followConsumers() {
    (capturer as? CameraCapturer)?.consumers = FrameConsumers(
      processor: processor?.pixelFormats, sinks: sinks.rawFormats)
  }
}
