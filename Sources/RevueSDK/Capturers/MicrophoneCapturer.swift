import Dispatch
import GStreamer
import Synchronization

/// The capturer of a microphone track: a PulseAudio or ALSA source (or a virtual microphone),
/// `source ! audioconvert ! audioresample ! [webrtcdsp] ! audioconvert ! appsink`, delivering the
/// track's format (48 kHz 16-bit, in the preset's channels) on GStreamer's streaming thread, each buffer timed by
/// its capture time on the system clock. When the pipeline fails (the device is unplugged or
/// stops working), capture stops with ``AudioCapturer/Event/interrupted(_:)``.
///
/// Turn it on and off with ``LocalParticipant/setMicrophone(enabled:)``.
public final class MicrophoneCapturer: AudioCapturer, @unchecked Sendable {
  // Safety (@unchecked): the mutable state is in a Mutex; start and stop run on one serial queue.

  /// The options: the microphone, preset and voice processing.
  public let options: AudioCaptureOptions
  private let format: AudioFormat
  private let pipeline = Mutex<MediaPipeline?>(nil)
  private let used = Mutex<CaptureDevice?>(nil)
  private let queue = DispatchQueue(label: "revue.microphone.control")

  init(options: AudioCaptureOptions, format: AudioFormat) {
    self.options = options
    self.format = format
    super.init()
  }

  deinit { pipeline.withLock { $0 }?.stop() }

  /// The microphone in use, nil while stopped.
  public var device: CaptureDevice? { used.withLock { $0 } }

  /// The pipeline that captures (read only), nil while stopped.
  public var captureSession: Pipeline? { pipeline.withLock { $0?.pipeline } }

  /// The microphones present now.
  public static func captureDevices() async throws -> [CaptureDevice] {
    DeviceWatcher.shared.all.filter { $0.kind == .microphone }
  }

  /// The microphone of `id`.
  /// - Throws: ``DeviceError`` `.invalidCustomTrackConfig` (3071) when no microphone has it.
  public static func captureDevice(id: String) async throws(DeviceError) -> CaptureDevice {
    guard let device = DeviceWatcher.shared.device(id: id, kind: .microphone) else {
      throw DeviceError(.invalidCustomTrackConfig, "no microphone has the id '\(id)'")
    }
    return device
  }

  /// Opens the microphone of ``AudioCaptureOptions/device`` (the first one when nil) and waits
  /// up to 2 seconds for its first buffer.
  /// - Throws: ``DeviceError``: `.microphoneNotFound` (3022) when there is none,
  ///   `.invalidCustomTrackConfig` (3071) when the microphone named is not present,
  ///   `.microphoneAccessDenied` (3018) when it refuses access, `.microphoneInUse` (3024) when it
  ///   cannot be opened.
  public override func startCapture() async throws {
    let result: Result<Void, DeviceError> = await withCheckedContinuation { continuation in
      queue.async {
        do throws(DeviceError) {
          try self.open()
          continuation.resume(returning: .success(()))
        } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    try result.get()
    setCaptureState(.capturing)
  }

  /// Stops the microphone and releases it.
  public override func stopCapture() async throws {
    await withCheckedContinuation { continuation in
      queue.async {
        self.pipeline.withLock { pipeline in
          pipeline?.stop()
          pipeline = nil
        }
        self.used.withLock { $0 = nil }
        continuation.resume()
      }
    }
    setCaptureState(.idle)
  }

  /// Runs on the control queue.
  private func open() throws(DeviceError) {
    guard pipeline.withLock({ $0 == nil }) else { return }
    let microphones = DeviceWatcher.shared.all.filter { $0.kind == .microphone }
    if let named = options.device, !microphones.contains(named) {
      throw DeviceError(.invalidCustomTrackConfig, "no microphone has the id '\(named.id)' (\(named.name))")
    }
    guard let device = options.device ?? microphones.first, let gstDevice = device.device else {
      throw DeviceError(.microphoneNotFound, "there is no microphone")
    }
    let first = DispatchSemaphore(value: 0)
    let started = Atomic<Bool>(false)
    let built = MediaPipeline(name: "microphone") { [weak self] fault in
      guard let self else { return }
      self.report(fault)
      // Failures while it starts make the start throw; after that they end the capture.
      guard fault.severity == .error, started.load(ordering: .acquiring) else {
        if fault.severity == .error { first.signal() }
        return
      }
      self.queue.async { self.lost(reason: fault.message) }
    }
    do {
      let source: Element
      do {
        source = try gstDevice.createElement(name: "source")
      } catch {
        throw DeviceError(.microphoneInUse, "the microphone \(device.name) cannot be opened")
      }
      let tail = try Bin(parsing: Self.chain(options.processing, channels: options.preset.channelCount))
      try tail.element(named: "formatcaps")?.set("caps", format.caps)
      try built.pipeline.add(source, tail)
      try source.link(tail)
      let sink = try tail.element(named: "sink", as: AppSink.self)
      let format = self.format
      sink.setCallbacks(newSample: { [weak self, weak built] sample in
        guard let built, var buffer = sample.buffer else { return }
        buffer.stampCaptureTime(baseTime: built.pipeline.baseTime)
        guard
          let pcm = try? AudioPCMBuffer(
            wrapping: buffer, sampleRate: format.sampleRate, channelCount: format.channelCount,
            format: format.sampleFormat)
        else { return }
        if !started.exchange(true, ordering: .acquiringAndReleasing) { first.signal() }
        self?.bufferSink?.deliver(pcm)
      })
      try built.play()
    } catch let error as DeviceError {
      built.stop()
      throw error
    } catch {
      built.stop()
      throw DeviceError(.microphoneInUse, "the microphone \(device.name) failed to start: \(error)")
    }
    guard first.wait(timeout: .now() + .seconds(2)) == .success, started.load(ordering: .acquiring) else {
      built.stop()
      if let fault = built.fault, DeviceError.isAccessDenial(fault) {
        throw DeviceError(.microphoneAccessDenied, "the microphone \(device.name) refused access: \(fault)")
      }
      let reason = built.fault.map { ": \($0)" } ?? " within 2 s"
      throw DeviceError(.microphoneInUse, "the microphone \(device.name) gave no audio\(reason)")
    }
    pipeline.withLock { $0 = built }
    used.withLock { $0 = device }
  }

  /// Runs on the control queue when the running pipeline failed: capture stops, and says why.
  private func lost(reason: String) {
    guard let failed = pipeline.withLock({ $0 }), failed.fault != nil else { return }
    failed.stop()
    pipeline.withLock { $0 = nil }
    let name = used.withLock { used in
      defer { used = nil }
      return used?.name ?? "the microphone"
    }
    RevueLog.log(.warning, "MicrophoneCapturer", "\(name) stopped: \(reason)")
    interrupt(reason: "\(name): \(reason)")
  }

  /// The chain after the source. Echo cancellation needs the far end's audio: with no playback
  /// in the process, the chain gives it a silent one of its own.
  static func chain(_ processing: AudioCaptureOptions.Processing, channels: Int) -> String {
    var chain = "audioconvert ! audioresample"
    if processing.isEnabled {
      let probe = "revueprobe\(UInt32.random(in: 0..<UInt32.max))"
      chain +=
        " ! audio/x-raw,format=S16LE,rate=48000,channels=\(channels) ! webrtcdsp name=dsp probe=\(probe)"
        + " echo-cancel=\(processing.echoCancellation) noise-suppression=\(processing.noiseSuppression)"
        + " gain-control=\(processing.autoGainControl) high-pass-filter=\(processing.highpassFilter)"
      if processing.echoCancellation {
        chain =
          "audiotestsrc is-live=true wave=silence ! audio/x-raw,format=S16LE,rate=48000,channels=\(channels)"
          + " ! webrtcechoprobe name=\(probe) ! fakesink sync=false async=false  " + chain
      }
    } else {
      chain += " ! audio/x-raw,channels=\(channels)"
    }
    return chain
      + " ! audioconvert ! capsfilter name=formatcaps ! appsink name=sink sync=false enable-last-sample=false"
  }
}
