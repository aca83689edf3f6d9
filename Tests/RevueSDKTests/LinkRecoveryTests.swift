import Foundation
import RevueLab
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

/// A camera stream through a link of 30 ± 10 ms each way (``LinkEmulator``) that goes down, and
/// whose receiver or sender restarts: both ends keep running, and the picture is back within a
/// second, because the receiver asks for a keyframe (RTCP PLI) rather than waiting for the
/// periodic one (every 2 s). These run alone: a keyframe asked for is a deadline.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(2))) struct LinkRecoveryTests {
  init() { TestEnvironment.prepare() }

  /// 30 ± 10 ms.
  static let wan = LinkConditions(delay: .milliseconds(30), jitter: .milliseconds(10))

  /// A camera published through a 30 ± 10 ms link to a receiver that renders into `renderer`.
  struct LinkedStream {
    let link: LinkEmulator
    let receiving: Room
    let remote: RemoteParticipant
    let renderer = FrameStream()
    let sending: Room
    let participant: LocalParticipant
    let capturer: CameraCapturer
    var publication: LocalTrackPublication

    /// Starts `device` at 360p and publishes it through a link seeded with `seed`.
    init(_ device: CaptureDevice, seed: UInt64) async throws {
      let port = FreePorts.rtp()
      receiving = Room()
      remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
      remote.videoTrack!.add(videoRenderer: renderer)
      link = try LinkEmulator(to: "127.0.0.1", port: port, forward: wan, backward: wan, seed: seed)
      (sending, participant, capturer) = try await TestCameras.sendingRoom(
        to: link.port, camera: device, dimensions: .h360_169)
      try await capturer.startCapture()
      publication = try await participant.publish(videoTrack: participant.cameraTrack)
    }

    /// Stops the camera, both rooms and the link.
    func stop() async throws {
      try await capturer.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
      link.stop()
    }
  }

  /// The time from `start` to now, in milliseconds.
  static func milliseconds(since start: ContinuousClock.Instant) -> Double {
    Double((ContinuousClock.now - start) / .microseconds(1)) / 1000
  }

  @Test(.tier(.realtime, smoke: true), .wholeProcess) func aFiveSecondOutageEndsWithThePictureBackWithinASecond()
    async throws
  {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let stream = try await LinkedStream(devices[0], seed: 5)
      let renderer = stream.renderer
      _ = try await renderer.next("frames before the outage") { _ in renderer.count > 30 }

      var restored = stream.link.cut(for: .seconds(5)).makeAsyncIterator()
      let back = try await withDeadline(10, "the link back") { await restored.next() }!
      let before = renderer.count
      _ = try await renderer.next("a frame after the outage", within: 5) { _ in renderer.count > before }
      let recovery = Self.milliseconds(since: back)
      print("outage of 5 s: the picture back \(recovery) ms after the link")
      #expect(recovery < 1000, "the picture came back \(recovery) ms after the link")
      #expect(stream.publication.state == .running && stream.remote.videoTrack!.state == .running)
      #expect(stream.publication.statistics.keyframeRequestsHonoured >= 1)
      try await stream.stop()
    }
  }

  /// The same outage as `revue-bench links` measures it: stamped frames judged against a
  /// reference receiver, from the link's return to the first intact frame.
  @Test(.tier(.realtime), .wholeProcess) func anOutageTrialHasAnIntactPictureWithinASecondOfTheLink() async throws {
    let trial = LinkTrial(
      codec: .vp8, width: 640, height: 480, link: Self.wan, recovery: .nack, frames: 330, seed: 5,
      outage: .seconds(5))
    let result = try await trial.run(port: FreePorts.rtp(pairs: 3))
    print("\(trial): \(result)")
    let outage = try #require(result.outage)
    let back = try #require(outage.recoveryTime, "no intact frame came after the link: \(result)")
    #expect(back < .seconds(1), "\(result)")
    #expect(outage.publicationRunning && outage.receiverRunning, "\(result)")
    // 5 s of frames at 30 fps left out of the verdict, from the cut on; the first frame back after them.
    let leftOut = try #require(outage.framesLeftOut)
    #expect(leftOut.lowerBound <= LinkTrial.outageFrame && leftOut.count >= 140, "\(leftOut)")
    #expect(result.verdict.leftOut == leftOut)
    #expect(try #require(outage.firstFrameBack) >= leftOut.upperBound)
    #expect(result.forward.droppedByOutage > 0 && result.backward.droppedByOutage > 0, "the link was down both ways")
  }

  @Test(.tier(.realtime), .wholeProcess) func aRestartedReceiverHasAPictureWithinASecond() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let link = try LinkEmulator(to: "127.0.0.1", port: port, forward: Self.wan, backward: Self.wan, seed: 6)
      let (sending, participant, capturer) = try await TestCameras.sendingRoom(
        to: link.port, camera: devices[0], dimensions: .h360_169)
      try await capturer.startCapture()
      let publication = try await participant.publish(videoTrack: participant.cameraTrack)
      for round in 0..<2 {
        let receiving = Room()
        let started = ContinuousClock.now
        let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
        let renderer = FrameStream()
        remote.videoTrack!.add(videoRenderer: renderer)
        _ = try await renderer.next("the first frame of receiver \(round + 1)", within: 5)
        let first = Self.milliseconds(since: started)
        print("restarted receiver \(round + 1): first frame after \(first) ms")
        #expect(first < 1000, "receiver \(round + 1) showed its first frame after \(first) ms")
        await receiving.disconnect()
      }
      #expect(publication.state == .running)
      try await capturer.stopCapture()
      await sending.disconnect()
      link.stop()
    }
  }

  @Test(.tier(.realtime), .wholeProcess) func aRestartedSenderIsFollowedWithinASecond() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      var stream = try await LinkedStream(devices[0], seed: 7)
      let renderer = stream.renderer
      _ = try await renderer.next("frames from the first sender") { _ in renderer.count > 30 }
      let ssrc = stream.publication.ssrc

      // A new publication: a new SSRC, new sequence numbers and timestamps, a new RTCP socket.
      await stream.participant.unpublish(publication: stream.publication)
      let restarted = ContinuousClock.now
      stream.publication = try await stream.participant.publish(videoTrack: stream.participant.cameraTrack)
      #expect(stream.publication.ssrc != ssrc)
      let before = renderer.count
      _ = try await renderer.next("a frame from the new sender", within: 5) { _ in renderer.count > before + 1 }
      let followed = Self.milliseconds(since: restarted)
      print("restarted sender: followed after \(followed) ms")
      #expect(followed < 1000, "the new sender's picture came \(followed) ms after it started")
      #expect(stream.remote.videoTrack!.state == .running)
      try await stream.stop()
    }
  }

}
