import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.timeLimit(.minutes(1))) struct BusTests {
    init() { TestEnvironment.prepare() }

    @Test func elementErrorArrivesWithItsPath() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc ! identity name=breaker error-after=5 ! fakesink")
      let messages = pipeline.bus.messages([.error])
      try pipeline.play()
      let received: BusError? = try await withDeadline(20, "the identity's error") {
        for await message in messages {
          if case .error(let error) = message.kind { return error }
        }
        return nil
      }
      pipeline.stop()
      let error = try #require(received)
      #expect(error.source.hasSuffix("/GstIdentity:breaker"))
      #expect(error.source.hasPrefix("/GstPipeline:"))
      #expect(!error.error.message.isEmpty)
      #expect(error.debug?.isEmpty == false)
    }

    @Test func warningsCarryPathMessageAndDebug() async throws {
      let pipeline = try Pipeline(parsing: "fakesrc ! identity name=grumpy ! fakesink")
      let messages = pipeline.bus.messages([.warning])
      try pipeline.setState(.ready)
      try #require(pipeline.element(named: "grumpy")).postWarning("running low", debug: "details here")
      let warning = try await withDeadline(20, "the posted warning") {
        for await message in messages {
          if case .warning(let warning) = message.kind { return warning }
        }
        throw CancellationError()
      }
      #expect(warning.source.hasSuffix("/GstIdentity:grumpy"))
      #expect(warning.error.message == "running low")
      #expect(warning.debug?.contains("details here") == true)
      pipeline.stop()
    }

    @Test func stateChangeThatCannotCompleteTimesOut() async throws {
      // A non-live appsrc that is never fed cannot preroll.
      let pipeline = try Pipeline(parsing: "appsrc name=src ! fakesink")
      await #expect(
        throws: GStreamerError.stateChangeTimedOut(
          element: pipeline.name, target: .playing, timeout: .milliseconds(200))
      ) { try await pipeline.changeState(to: .playing, timeout: .milliseconds(200)) }
      pipeline.stop()
    }

    @Test func playUntilEndOfStreamThrowsTheBusError() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc ! identity name=breaker error-after=3 ! fakesink")
      let error = try await #require(throws: GStreamerError.self) {
        try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
      }
      guard case .bus(let busError) = error else {
        Issue.record("expected a bus error, got \(error)")
        return
      }
      #expect(busError.source.contains("breaker"))
    }

    @Test func endOfStreamAndStateChangesInOrder() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc num-buffers=3 ! fakesink")
      let messages = pipeline.bus.messages([.eos, .stateChanged])
      try pipeline.play()
      let states = try await withDeadline(20, "end of stream") {
        var states: [Element.State] = []
        for await message in messages {
          if case .stateChanged(_, let new, _) = message.kind, message.source == pipeline { states.append(new) }
          if case .eos = message.kind { break }
        }
        return states
      }
      pipeline.stop()
      #expect(states == [.ready, .paused, .playing])
    }

    @Test func messagesPostedBeforeAnyoneListensAreKept() async throws {
      let pipeline = Pipeline()
      let bus = pipeline.bus
      try pipeline.setState(.ready)
      let structure = try Structure(name: "revue-test", ["n": 7])
      #expect(bus.post(.application(structure, from: pipeline)))
      let messages = bus.messages([.application])
      let message = try await withDeadline(20, "the application message") {
        for await message in messages { return message }
        throw CancellationError()
      }
      #expect(message.structure?.get("n", as: Int.self) == 7)
      pipeline.stop()
    }

    @Test func syncHandlerRunsForEveryMessage() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc num-buffers=2 ! fakesink")
      let seen = Mutex<[String]>([])
      let token = pipeline.bus.addSyncHandler { message in seen.withLock { $0.append(message.typeName) } }
      try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
      pipeline.bus.removeSyncHandler(token)
      let names = seen.withLock { $0 }
      #expect(names.contains("state-changed"))
      #expect(names.contains("stream-start"))
      #expect(names.contains("eos"))
    }

    @Test func streamEndsWhenThePipelineIsDestroyed() async throws {
      var pipeline: Pipeline? = Pipeline()
      let messages = pipeline!.bus.messages()
      pipeline = nil
      let count = try await withDeadline(20, "the stream to end") {
        var count = 0
        for await _ in messages { count += 1 }
        return count
      }
      #expect(count == 0)
    }

    @Test func queriesOnAPlayingPipeline() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc is-live=true ! fakesink sync=true")
      try await pipeline.changeState(to: .playing)
      let latency = try pipeline.queryLatency()
      #expect(latency.isLive)
      #expect(pipeline.position != nil)
      #expect(pipeline.duration == nil)
      #expect(try pipeline.state().current == .playing)
      pipeline.stop()
    }
  }
}
