import Dispatch
import GStreamer
import Synchronization

/// The capturer of a camera track: a V4L2 camera (or a virtual one) read through GStreamer.
///
/// Turn it on and off with ``LocalParticipant/setCamera(enabled:options:)``. Control (start,
/// stop, switch, new options) runs one operation at a time; state reads are safe from any
/// thread. Frames reach the track's processor and renderers on GStreamer's streaming thread,
/// in 4:2:0 (NV12 or I420) at exactly ``VideoCapturer/dimensions``: the SDK picks the device format
/// closest to ``options`` and never scales. A new resolution, frame rate or camera applies without
/// stopping the track. When the camera is unplugged, capture stops with
/// ``VideoCapturer/Event/interrupted(_:)``, and resumes by itself when the same camera comes back.
public final class CameraCapturer: VideoCapturer, @unchecked Sendable {
  // Safety (@unchecked): the mutable state is in a Mutex; control runs on one serial queue.

  /// How long a switch waits for a later one before it applies.
  static let switchDelay: Duration = .milliseconds(80)

  private struct State {
    var options: CameraCaptureOptions
    var position: CameraPosition
    /// The options and position the running camera uses (restored when a switch fails).
    var applied: (options: CameraCaptureOptions, position: CameraPosition)
    var session: CameraSession?
    /// Counts switch requests: only the last one applies.
    var generation: UInt64 = 0
    /// Set when the camera stopped because its device went away, until it comes back or capture stops.
    var lostDevice: String?
    var watching = false
    /// The zoom set last, and the camera it was set on.
    var zoom: (deviceID: String, value: Int)?
    /// Why the named camera was not the one opened at the last start.
    var deviceError: DeviceError?
    /// What the track's processor and sinks take (``consumers``).
    var consumers = FrameConsumers()
  }

  private let state: Mutex<State>
  private let queue = DispatchQueue(label: "revue.camera.control")

  init(options: CameraCaptureOptions) {
    state = Mutex(State(options: options, position: options.position, applied: (options, options.position)))
    super.init()
  }

  deinit {
    state.withLock { $0.session }?.stop()
  }

  // MARK: - State

  /// The options: what was asked last (changed at once by every call, even before it applies).
  public var options: CameraCaptureOptions { state.withLock { $0.options } }

  /// The camera in use, nil while stopped.
  public var device: CaptureDevice? { state.withLock { $0.session?.device } }

  /// Why the camera of ``CameraCaptureOptions/device`` is not the one capturing: what opening it
  /// threw at the last ``startCapture()``, which then opened the camera for the position in its
  /// place; nil when the camera asked for opened, when none was named, and after a switch.
  public var deviceError: DeviceError? { state.withLock { $0.deviceError } }

  /// Which way the camera should face, as asked last.
  public var position: CameraPosition { state.withLock { $0.position } }

  /// What the track's processor needs and its publications take: the capture delivers it
  /// (``CameraSession/deliveredFormat(for:consumers:)``), and changes format while capturing
  /// when a processor is set or a publication comes or goes.
  var consumers: FrameConsumers {
    get { state.withLock { $0.consumers } }
    set {
      let session = state.withLock { state in
        state.consumers = newValue
        return state.session
      }
      session?.follow(newValue)
    }
  }

  /// The pipeline that captures: read it, do not change it (the SDK rebuilds it whenever the
  /// camera or the resolution changes). nil while stopped.
  public var captureSession: Pipeline? { state.withLock { $0.session?.capturePipeline } }

  /// The values of the zoom of the camera in use (``CaptureDevice/zoomRange``), the first one
  /// no zoom; nil while stopped, or when the camera has no zoom control (most laptop cameras).
  public var zoomRange: ClosedRange<Int>? { device?.zoomRange }

  /// The zoom of the camera in use, within ``zoomRange``; nil while stopped, or when the camera
  /// has no zoom control.
  public var zoom: Int? {
    state.withLock { state in
      guard let device = state.session?.device, let range = device.zoomRange else { return nil }
      if let zoom = state.zoom, zoom.deviceID == device.id { return zoom.value }
      return device.zoom?.deviceValue ?? range.lowerBound
    }
  }

  /// Sets the camera's own zoom (V4L2's `zoom_absolute`; seed 001's pinch to zoom, which Linux
  /// has no touch for), clamped to ``zoomRange``. The camera's picture changes, so the
  /// participants the track is sent to see the zoomed picture too. The camera keeps it when
  /// capture restarts or switches back to it.
  /// - Returns: the value set.
  /// - Throws: ``RevueError`` (`.invalidState`) when no camera is capturing or it has no zoom
  ///   control; (`.gstreamer`) when the camera refused the value.
  @discardableResult
  public func set(zoom value: Int) throws(RevueError) -> Int {
    try state.withLock { state throws(RevueError) -> Int in
      guard let session = state.session else {
        throw RevueError(.invalidState, "no camera is capturing: start capture before zooming")
      }
      guard let range = session.device.zoomRange else {
        throw RevueError(.invalidState, "the camera \(session.device.name) has no zoom control")
      }
      let clamped = min(max(value, range.lowerBound), range.upperBound)
      guard session.setZoom(clamped) else {
        throw RevueError(.gstreamer, "the camera \(session.device.name) did not take the zoom \(clamped)")
      }
      state.zoom = (session.device.id, clamped)
      return clamped
    }
  }

  /// The format in use, nil while stopped.
  public var format: CaptureFormat? { state.withLock { $0.session?.choice.format } }

  // MARK: - Devices

  /// The cameras present now, infrared ones included (they are only used when named).
  public static func captureDevices() async throws -> [CaptureDevice] { devices }

  /// The cameras present now, as ``captureDevices()`` lists them, for code that cannot wait
  /// (Sora's `CameraVideoCapturer.devices`, an option's initializer).
  public static var devices: [CaptureDevice] { DeviceWatcher.shared.all.filter { $0.kind == .camera } }

  /// The camera of `id`.
  /// - Throws: ``DeviceError`` `.invalidCustomTrackConfig` (3071) when no camera has it.
  public static func captureDevice(id: String) async throws(DeviceError) -> CaptureDevice {
    guard let device = DeviceWatcher.shared.device(id: id, kind: .camera) else {
      throw DeviceError(.invalidCustomTrackConfig, "no camera has the id '\(id)'")
    }
    return device
  }

  /// Whether there are both a front and a back camera.
  public static func canSwitchPosition() async throws -> Bool {
    let cameras = DeviceWatcher.shared.all.filter { $0.kind == .camera && !$0.isInfrared }
    return cameras.contains { $0.position == .front } && cameras.contains { $0.position == .back }
  }

  /// Cameras and microphones plugged in and unplugged from now on.
  public static var deviceEvents: AsyncStream<DeviceEvent> { DeviceWatcher.shared.events() }

  // MARK: - Sora-style helpers

  /// The format of `device` closest to `width`×`height` (and `frameRate`, when given).
  public static func format(width: Int32, height: Int32, for device: CaptureDevice, frameRate: Int? = nil)
    -> CaptureFormat?
  {
    FormatSelection.choose(
      from: device.formats, dimensions: Dimensions(width: width, height: height), fps: frameRate.map(Double.init)
    )?.format
  }

  /// `frameRate` when `format` offers it, else the highest rate it offers; nil when it offers none.
  public static func maxFrameRate(_ frameRate: Int, for format: CaptureFormat) -> Int? {
    guard !format.frameRates.isEmpty else { return nil }
    if format.supports(frameRate: Double(frameRate)) { return frameRate }
    return Int(format.maxFrameRate.rounded(.down))
  }

  // MARK: - Start and stop

  /// Opens the camera of ``options`` (the named device; when it cannot be opened, the camera for
  /// the position) and waits up to 2 seconds for its first frame.
  /// - Throws: ``DeviceError``: `.cameraNotFound` (3021) when there is no camera,
  ///   `.cameraInUse` (3023) when it is busy, `.videoSourceInitiationFailed` (3026) when it fails to open.
  public override func startCapture() async throws {
    try await onQueueThrowing { () throws(DeviceError) in
      guard self.state.withLock({ $0.session == nil }) else { return }
      let options = self.options
      let (session, deviceError) = try self.open(options: options, position: self.position)
      self.state.withLock { state in
        state.session = session
        state.applied = (options, state.position)
        state.lostDevice = nil
        state.deviceError = deviceError
      }
      self.setCaptureState(.capturing)
      self.reportChoice(session.choice, requested: options.dimensions)
    }
    watchDevices()
  }

  /// Stops the camera and releases the device.
  public override func stopCapture() async throws {
    await onQueue {
      let session = self.state.withLock { state in
        state.lostDevice = nil
        defer { state.session = nil }
        return state.session
      }
      session?.stop()
      self.setCaptureState(.idle)
    }
  }

  /// Records `options` without applying them (for a stopped camera).
  func record(_ options: CameraCaptureOptions) {
    state.withLock { state in
      state.options = options
      state.position = options.position
    }
  }

  // MARK: - Switch cameras

  /// Applies new options, while the camera runs or before it starts.
  ///
  /// The options change at once; the camera follows a short delay after the last call.
  /// - Returns: true when the running camera now uses them; false when the camera is stopped
  ///   (they apply when it starts), when the camera could not be opened and the old one was kept
  ///   (options and position go back), or when a later call replaced this one.
  /// - Throws: ``CameraCapturerError/deviceNotAvailable`` before anything changes, when the
  ///   camera runs and `options.device` is not present.
  public func set(options newOptions: CameraCaptureOptions) async throws -> Bool {
    if captureState == .capturing, let wanted = newOptions.device,
      DeviceWatcher.shared.device(id: wanted.id, kind: .camera) == nil
    {
      throw CameraCapturerError.deviceNotAvailable
    }
    return await requestSwitch { state in
      state.options = newOptions
      state.position = newOptions.position
    }
  }

  /// Switches between the front and the back camera: to the side the camera in use does not
  /// face (while stopped, the side ``position`` does not name; from a camera facing neither way,
  /// to the front).
  /// - Returns: as ``set(cameraPosition:)``.
  /// - Throws: ``CameraCapturerError/deviceNotAvailable`` when there is no camera facing the other way.
  public func switchCameraPosition() async throws -> Bool {
    let facing = device?.position ?? position
    return try await set(cameraPosition: facing == .front ? .back : .front)
  }

  /// Switches to the camera facing `cameraPosition`, clearing ``CameraCaptureOptions/device``.
  /// - Returns: true when that camera now captures; false when the camera is stopped (only
  ///   recorded), when it could not be opened and the old one was kept, or when a later call
  ///   replaced this one.
  /// - Throws: ``CameraCapturerError/deviceNotAvailable`` before anything changes, when no camera faces that way.
  public func set(cameraPosition: CameraPosition) async throws -> Bool {
    guard Self.camera(facing: cameraPosition, strictly: true) != nil else {
      throw CameraCapturerError.deviceNotAvailable
    }
    return await requestSwitch { state in
      state.options = state.options.copyWith(device: .some(nil), position: cameraPosition)
      state.position = cameraPosition
    }
  }

  /// Changes the options at once, then applies them after the switch delay unless a later call
  /// came. When the camera could not be opened, the options and position go back to those of
  /// the camera kept, on the main actor (as seed 000 says: an App reads them there), unless a
  /// later call changed them meanwhile.
  private func requestSwitch(_ change: (inout State) -> Void) async -> Bool {
    let (generation, running) = state.withLock { state in
      change(&state)
      state.generation += 1
      return (state.generation, state.session != nil)
    }
    guard running else { return false }
    try? await Task.sleep(for: Self.switchDelay)
    switch await onQueue({ self.applySwitch(generation: generation) }) {
    case .applied: return true
    case .replaced: return false
    case .failed:
      await MainActor.run {
        state.withLock { state in
          guard state.generation == generation else { return }
          state.options = state.applied.options
          state.position = state.applied.position
        }
      }
      return false
    }
  }

  /// How a switch ended.
  private enum SwitchOutcome: Sendable {
    /// The camera asked for captures.
    case applied
    /// A later call came, or the camera stopped, before it ran.
    case replaced
    /// The camera could not be opened: the old one was kept.
    case failed
  }

  /// Runs on the control queue: reopens the camera with the current options, or keeps the old
  /// one when the new one cannot be opened.
  private func applySwitch(generation: UInt64) -> SwitchOutcome {
    guard
      let (options, position, old) = state.withLock({ state in
        state.generation == generation && state.session != nil
          ? (state.options, state.position, state.session!) : nil
      })
    else { return .replaced }
    let target = Self.device(for: options, position: position)
    do {
      guard let target else { throw DeviceError(.cameraNotFound, "no camera for \(position)") }
      // A device opens once: free it first when the switch keeps the same camera.
      if target == old.device { old.stop() }
      let session = try open(device: target, options: options)
      if target != old.device { old.stop() }
      state.withLock { state in
        state.session = session
        state.applied = (options, position)
        state.deviceError = nil
      }
      reportChoice(session.choice, requested: options.dimensions)
      return .applied
    } catch {
      RevueLog.log(.warning, "CameraCapturer", "switch failed, keeping the previous camera: \(error)")
      if target == old.device {
        do {
          try old.start()
        } catch {
          lose(old, reason: "the camera could not be reopened: \(error)")
        }
      }
      return .failed
    }
  }

  // MARK: - Opening

  /// Opens the camera for `options`: the named device, else the one for `position`.
  /// - Returns: the camera's session, and what the named device threw when another one opened.
  private func open(
    options: CameraCaptureOptions, position: CameraPosition
  ) throws(DeviceError) -> (CameraSession, DeviceError?) {
    let cameras = DeviceWatcher.shared.all.filter { $0.kind == .camera }
    guard !cameras.isEmpty else { throw DeviceError(.cameraNotFound, "there is no camera") }
    var namedError: DeviceError?
    if let named = options.device, let present = cameras.first(where: { $0 == named }) {
      do {
        return (try open(device: present, options: options), nil)
      } catch {
        RevueLog.log(.warning, "CameraCapturer", "\(error); using the camera for position \(position)")
        namedError = error
      }
    }
    guard let fallback = Self.camera(for: options.deviceType, facing: position), fallback != options.device else {
      throw namedError ?? DeviceError(.cameraNotFound, "there is no colour camera with a usable format")
    }
    do {
      return (try open(device: fallback, options: options), namedError)
    } catch {
      // The camera asked for says more than the stand-in.
      throw namedError ?? error
    }
  }

  private func open(device: CaptureDevice, options: CameraCaptureOptions) throws(DeviceError) -> CameraSession {
    guard
      let choice = FormatSelection.choose(
        from: device.formats, dimensions: options.dimensions, fps: Double(options.fps),
        preferred: options.preferredFormat)
    else { throw DeviceError(.videoSourceInitiationFailed, "the camera \(device.name) lists no usable format") }
    let session = try CameraSession(
      device: device, choice: choice, fps: options.fps, isMirrored: options.isMirrored, consumers: consumers,
      onFrame: { [weak self] frame in self?.send(frame) },
      onFault: { [weak self] fault in
        guard let self else { return }
        self.report(fault)
        guard fault.severity == .error else { return }
        self.queue.async { self.lostSession(deviceID: device.id, reason: fault.message) }
      })
    try session.start()
    if let zoom = state.withLock({ $0.zoom }), zoom.deviceID == device.id, !session.setZoom(zoom.value) {
      RevueLog.log(.warning, "CameraCapturer", "\(device.name): the zoom \(zoom.value) could not be set again")
    }
    RevueLog.log(
      .info, "CameraCapturer",
      "\(device.name): \(choice.format.encoding) \(choice.dimensions) at \(FrameRateRange.format(choice.cameraFrameRate)) fps"
    )
    return session
  }

  /// The device `options` name when it is present, else the camera for `position`.
  private static func device(for options: CameraCaptureOptions, position: CameraPosition) -> CaptureDevice? {
    if let named = options.device, let present = DeviceWatcher.shared.device(id: named.id, kind: .camera) {
      return present
    }
    return camera(for: options.deviceType, facing: position)
  }

  /// The first camera of `type` present facing `position`, else the first of `type`; with no
  /// type, or none of it present, the camera for `position` (not strictly).
  static func camera(for type: CaptureDevice.DeviceType?, facing position: CameraPosition) -> CaptureDevice? {
    if let type {
      let cameras = DeviceWatcher.shared.all.filter {
        $0.kind == .camera && !$0.formats.isEmpty && $0.deviceType == type
      }
      if let camera = cameras.first(where: { $0.position == position }) ?? cameras.first { return camera }
    }
    return camera(facing: position, strictly: false)
  }

  /// The first colour camera with a usable format facing `position` (any for `.unspecified`); when not `strictly`,
  /// any colour camera when none faces that way.
  static func camera(facing position: CameraPosition, strictly: Bool) -> CaptureDevice? {
    let cameras = DeviceWatcher.shared.all.filter { $0.kind == .camera && !$0.isInfrared && !$0.formats.isEmpty }
    if position == .unspecified { return cameras.first }
    return cameras.first { $0.position == position } ?? (strictly ? nil : cameras.first)
  }

  private func reportChoice(_ choice: FormatChoice, requested: Dimensions) {
    if FormatSelection.isDowngrade(choice, requested: requested) {
      emitDowngrade(requested: requested, actual: choice.dimensions)
    }
  }

  // MARK: - Unplug and replug

  /// Runs on the control queue when the running session failed.
  private func lostSession(deviceID: String, reason: String) {
    guard let session = state.withLock({ $0.session }), session.device.id == deviceID else { return }
    lose(session, reason: reason)
  }

  /// Stops capture because the device is gone or failed; capture resumes when it comes back.
  private func lose(_ session: CameraSession, reason: String) {
    session.stop()
    state.withLock { state in
      state.session = nil
      state.lostDevice = session.device.id
    }
    RevueLog.log(.warning, "CameraCapturer", "\(session.device.name) stopped: \(reason)")
    interrupt(reason: "\(session.device.name): \(reason)")
  }

  private func watchDevices() {
    let start = state.withLock { state in
      defer { state.watching = true }
      return !state.watching
    }
    guard start else { return }
    let events = DeviceWatcher.shared.events()
    Task { [weak self] in
      for await event in events {
        guard let self else { return }
        self.queue.async { self.handle(event) }
      }
    }
  }

  /// Runs on the control queue for every device event.
  private func handle(_ event: DeviceEvent) {
    switch event {
    case .removed(let device):
      guard let session = state.withLock({ $0.session }), session.device == device else { return }
      lose(session, reason: "the camera was unplugged")
    case .added(let device):
      guard device.kind == .camera, state.withLock({ $0.lostDevice == device.id && $0.session == nil }) else { return }
      let options = state.withLock { $0.applied.options }
      do {
        let session = try open(device: device, options: options)
        state.withLock { state in
          state.session = session
          state.lostDevice = nil
        }
        RevueLog.log(.info, "CameraCapturer", "\(device.name) is back: capture resumed")
        setCaptureState(.capturing)
        reportChoice(session.choice, requested: options.dimensions)
      } catch {
        RevueLog.log(.warning, "CameraCapturer", "\(device.name) came back but cannot be opened: \(error)")
      }
    }
  }

  // MARK: - The control queue

  private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in queue.async { continuation.resume(returning: body()) } }
  }

  private func onQueueThrowing(_ body: @escaping @Sendable () throws(DeviceError) -> Void) async throws(DeviceError) {
    let result: Result<Void, DeviceError> = await onQueue {
      do throws(DeviceError) {
        try body()
        return .success(())
      } catch {
        return .failure(error)
      }
    }
    try result.get()
  }
}
