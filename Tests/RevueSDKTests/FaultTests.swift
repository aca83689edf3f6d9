import Foundation
import GStreamer
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Faults injected mid-stream, one kind at a time (an element of a running pipeline posts an
/// error, as a failing element does): each ends only what it touches, says why in an event
/// with GStreamer's text and the element's path, and the rest of the node keeps running.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct FaultTests {
  init() { TestEnvironment.prepare() }

  /// A node: the virtual camera and a virtual microphone published, and a receiver of both.
  struct Node {
    let room: Room
    let camera: CameraCapturer
    let microphone: LocalAudioTrack
    let video: LocalTrackPublication
    let audio: LocalTrackPublication
    let receiving: Room
    let remote: RemoteParticipant
    let videoReceived = RenderRecorder()
    let audioReceived = RenderRecorder()

    static func start(camera device: CaptureDevice) async throws -> Node {
      let port = FreePorts.rtp(pairs: 2)
      let (room, participant, camera) = try await TestCameras.sendingRoom(
        to: port, camera: device, dimensions: .h360_169)
      let microphoneDevice = try await VirtualDevices.microphone(name: "Fault \(port)")
      let microphone = LocalAudioTrack.createMicrophoneTrack(
        options: .preset(.musicStandard, device: microphoneDevice))
      try await camera.startCapture()
      try await microphone.capturer!.startCapture()
      let video = try await participant.publish(videoTrack: participant.cameraTrack)
      let audio = try await participant.publish(audioTrack: microphone)
      let receiving = Room()
      let remote = try await receiving.listen(sdp: room.sdp, on: "127.0.0.1")
      let node = Node(
        room: room, camera: camera, microphone: microphone, video: video, audio: audio, receiving: receiving,
        remote: remote)
      remote.videoTrack!.add(videoRenderer: node.videoReceived)
      remote.audioTrack!.add(audioRenderer: node.audioReceived)
      try await node.videoReceived.advances(by: 3, "the first video frames at the receiver")
      try await node.audioReceived.advances(by: 3, "the first audio at the receiver")
      return node
    }

    func stop() async throws {
      try await camera.stopCapture()
      try await microphone.capturer?.stopCapture()
      await room.disconnect()
      await receiving.disconnect()
      // The options' device: the capturer's own is nil once it stopped.
      VirtualDevices.remove((microphone.capturer as? MicrophoneCapturer)?.options.device?.id ?? "")
    }
  }

  /// The element `name` of `pipeline`, which must exist.
  private static func element(_ name: String, of pipeline: Pipeline?) throws -> Element {
    try #require(pipeline?.element(named: name), "no element \(name)")
  }

  /// The first `StreamState.failed` a stream's events report.
  private static func failure(_ events: AsyncStream<StreamEvent>, _ what: String) async throws -> MediaFault {
    try await withDeadline(5, what) {
      for await event in events {
        if case .state(.failed(let fault)) = event { return fault }
      }
      throw DeadlineExceeded("\(what): the stream ended")
    }
  }

  @Test func aFailingCameraStopsItsCaptureOnly() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let node = try await Node.start(camera: cameras[0])
      let events = node.camera.events
      try Self.element("source", of: node.camera.captureSession).postError("injected camera failure")
      let (fault, reason) = try await withDeadline(5, "the camera's fault and interruption") {
        var fault: MediaFault?
        for await event in events {
          if case .fault(let posted) = event { fault = posted }
          if case .interrupted(let reason) = event, let fault { return (fault, reason) }
        }
        throw CancellationError()
      }
      #expect(fault.severity == .error && fault.message == "injected camera failure")
      #expect(fault.element.contains("camera"), "\(fault.element)")
      #expect(reason.contains("injected camera failure"))
      #expect(node.camera.captureState == .idle)
      #expect(node.video.state == .running)
      try await node.audioReceived.advances(by: 20, "audio after the camera failed")
      #expect(node.microphone.capturer?.captureState == .capturing)
      try await node.stop()
    }
  }

  @Test func aFailingMicrophoneStopsItsCaptureOnly() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let node = try await Node.start(camera: cameras[0])
      let capturer = try #require(node.microphone.capturer as? MicrophoneCapturer)
      let events = capturer.events
      try Self.element("source", of: capturer.captureSession).postError("injected microphone failure")
      let reason = try await withDeadline(5, "the microphone's interruption") {
        for await event in events { if case .interrupted(let reason) = event { return reason } }
        throw CancellationError()
      }
      #expect(reason.contains("injected microphone failure"))
      #expect(capturer.captureState == .idle)
      #expect(capturer.captureSession == nil)
      try await node.videoReceived.advances(by: 15, "video after the microphone failed")
      #expect(node.camera.captureState == .capturing)
      try await node.stop()
    }
  }

  @Test func aFailingEncoderEndsItsPublicationOnly() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let node = try await Node.start(camera: cameras[0])
      let events = node.video.events
      try Self.element("encoder", of: node.video.sender!.pipeline.pipeline).postError("injected encoder failure")
      let fault = try await Self.failure(events, "the video publication's failure")
      #expect(fault.elementName == "encoder" && fault.message == "injected encoder failure")
      #expect(node.video.state == .failed(fault))
      #expect(node.audio.state == .running)
      #expect(node.camera.captureState == .capturing)
      // The failed publication sends nothing more, while the audio goes on.
      try await node.audioReceived.advances(by: 10, "audio after the video encoder failed")
      let sent = node.video.statistics.packetsSent
      try await node.audioReceived.advances(by: 20, "more audio after the video encoder failed")
      #expect(node.video.statistics.packetsSent == sent)
      try await node.stop()
    }
  }

  @Test func aFailingNetworkSinkEndsItsPublicationOnly() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let node = try await Node.start(camera: cameras[0])
      let events = node.audio.events
      try Self.element("rtpout0", of: node.audio.sender!.pipeline.pipeline).postError("injected socket failure")
      let fault = try await Self.failure(events, "the audio publication's failure")
      #expect(fault.elementName == "rtpout0")
      #expect(node.video.state == .running)
      try await node.videoReceived.advances(by: 15, "video after the audio socket failed")
      try await node.stop()
    }
  }

  @Test func aFailingDecoderEndsItsTrackOnly() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let node = try await Node.start(camera: cameras[0])
      let track = try #require(node.remote.videoTrack)
      let events = track.events
      try Self.element("decoder", of: track.receiver.pipeline.pipeline).postError("injected decoder failure")
      let fault = try await Self.failure(events, "the received video's failure")
      #expect(fault.elementName == "decoder")
      #expect(track.state == .failed(fault))
      #expect(node.remote.audioTrack?.state == .running)
      try await node.audioReceived.advances(by: 20, "audio after the video decoder failed")
      #expect(node.video.state == .running)
      try await node.stop()
    }
  }

  @Test func aReceiverThatCannotStartReleasesWhatItHadOpened() async throws {
    let port = FreePorts.rtp(pairs: 2)
    // Another receiver holds the RTCP port: this one binds its RTP port, then fails on RTCP's.
    let holder = Room()
    try await holder.listen(on: URL(string: "rtp://127.0.0.1:\(port + 1)")!)
    let failing = Room()
    await #expect(throws: RevueError.self) { try await failing.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!) }
    await holder.disconnect()
    // The half-built pipeline went to NULL and closed its RTP socket: the ports open again.
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    #expect(remote.videoTrack?.state == .running)
    await receiving.disconnect()
    #expect(remote.videoTrack?.state == .stopped)
  }
}
