import Foundation
import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct BusTests {
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

    // MARK: - Dispatching

    /// An application message naming its posting thread and its place in that thread's sequence.
    private static func numbered(thread: Int, sequence: Int) throws -> Message {
      .application(try Structure(name: "revue-test", ["thread": thread, "sequence": sequence]))
    }

    /// The thread and sequence number of a ``numbered(thread:sequence:)`` message.
    private static func number(of message: Message) -> (thread: Int, sequence: Int)? {
      guard case .application(let structure?) = message.kind, let thread = structure.get("thread", as: Int.self),
        let sequence = structure.get("sequence", as: Int.self)
      else { return nil }
      return (thread, sequence)
    }

    @Test func concurrentPostsReachASteadySubscriberOnceInEachThreadsOrder() async throws {
      let pipeline = Pipeline()
      let bus = pipeline.bus
      let threads = 8
      let perThread = 2_000
      let stream = bus.messages([.application], bufferingPolicy: .unbounded)
      let handled = Mutex([[Int]](repeating: [], count: threads))
      let steady = bus.addSyncHandler { message in
        guard let (thread, sequence) = Self.number(of: message) else { return }
        handled.withLock { $0[thread].append(sequence) }
      }
      // Subscribers come and go while the posts run: each sees every thread's messages in order.
      let posting = Atomic(true)
      let disorder = Mutex<[String]>([])
      let churn = Task.detached {
        try await onThreads(2, within: 50, "subscribers coming and going") { churner in
          var rounds = 0
          while posting.load(ordering: .relaxed) {
            let last = Mutex([Int](repeating: -1, count: threads))
            let token = bus.addSyncHandler { message in
              guard let (thread, sequence) = Self.number(of: message) else { return }
              let inOrder = last.withLock { last in
                defer { last[thread] = sequence }
                return sequence > last[thread]
              }
              if !inOrder { disorder.withLock { $0.append("\(thread):\(sequence) after a later one") } }
            }
            if churner == 1 { _ = bus.messages([.application]) }  // a stream made and dropped
            bus.removeSyncHandler(token)
            rounds += 1
          }
          return rounds
        }
      }
      _ = try await onThreads(threads, within: 50, "\(threads) threads posting \(perThread) messages") {
        thread in
        for sequence in 0..<perThread { bus.post(try Self.numbered(thread: thread, sequence: sequence)) }
      }
      posting.store(false, ordering: .relaxed)
      let rounds = try await withDeadline(10, "the subscribers coming and going to stop") { try await churn.value }
      let streamed = try await collect(
        threads * perThread, of: stream, within: 30, "every message on the steady stream")
      bus.removeSyncHandler(steady)
      pipeline.stop()

      var streamedByThread = [[Int]](repeating: [], count: threads)
      for message in streamed {
        if let (thread, sequence) = Self.number(of: message) { streamedByThread[thread].append(sequence) }
      }
      let expected = [[Int]](repeating: Array(0..<perThread), count: threads)
      #expect(streamedByThread == expected, "the stream lost, repeated or reordered messages")
      #expect(handled.withLock { $0 } == expected, "the sync handler lost, repeated or reordered messages")
      #expect(disorder.withLock { $0 }.isEmpty, "passing subscribers saw: \(disorder.withLock { $0.prefix(5) })")
      #expect(rounds.reduce(0, +) > 0)
    }

    @Test func firstSubscriberGetsTheBacklogInOrder() async throws {
      let pipeline = Pipeline()
      let bus = pipeline.bus
      for sequence in 0..<10 { #expect(bus.post(try Self.numbered(thread: 0, sequence: sequence))) }
      let messages = try await collect(
        10, of: bus.messages([.application]), within: 10, "the messages posted before anyone listened")
      #expect(messages.compactMap { Self.number(of: $0)?.sequence } == Array(0..<10))
      pipeline.stop()
    }

    @Test func messagesPostedAsTheFirstSubscriberArrivesAreNeverLost() async throws {
      for round in 0..<300 {
        let pipeline = Pipeline()
        let bus = pipeline.bus
        bus.post(try Self.numbered(thread: 0, sequence: 0))
        let seen = Mutex<[Int]>([])
        let ready = Atomic(0)
        let tokens = try await onThreads(2, within: 10, "round \(round) of posting against subscribing") {
          index -> Bus.SubscriptionToken? in
          // Both threads start together, to race the posts against the subscription.
          ready.add(1, ordering: .relaxed)
          while ready.load(ordering: .relaxed) < 2 { sched_yield() }
          if index == 0 {
            for sequence in 1...3 { bus.post(try Self.numbered(thread: 0, sequence: sequence)) }
            return nil
          }
          return bus.addSyncHandler { message in
            if let (_, sequence) = Self.number(of: message) { seen.withLock { $0.append(sequence) } }
          }
        }
        let received = seen.withLock { $0 }
        if let token = tokens[1] { bus.removeSyncHandler(token) }
        pipeline.stop()
        #expect(received == [0, 1, 2, 3], "round \(round)")
        if received != [0, 1, 2, 3] { break }
      }
    }

    @Test func backlogKeepsOnlyTheLatestMessages() async throws {
      let pipeline = Pipeline()
      let bus = pipeline.bus
      let count = 10_000
      for sequence in 0..<count { bus.post(try Self.numbered(thread: 0, sequence: sequence)) }
      let stream = bus.messages([.application])
      bus.post(try Self.numbered(thread: 1, sequence: 0))
      let messages = try await collect(
        Bus.backlogLimit + 1, of: stream, within: 10, "the backlog, then a message posted after it")
      let numbers = messages.compactMap { Self.number(of: $0) }
      #expect(numbers.dropLast().map(\.sequence) == Array((count - Bus.backlogLimit)..<count))
      #expect(numbers.last.map { [$0.thread, $0.sequence] } == [1, 0], "the backlog held more than its limit")
      pipeline.stop()
    }

    @Test func popTakesFromTheBacklogAndWaitsForAPost() async throws {
      let pipeline = Pipeline()
      let bus = pipeline.bus
      try pipeline.setState(.ready)
      bus.post(try Self.numbered(thread: 0, sequence: 0))
      #expect(bus.pop(.application).flatMap(Self.number(of:))?.sequence == 0)
      #expect(bus.pop(.application) == nil)
      let popped = try await onThreads(2, within: 10, "a pop waiting for a message posted meanwhile") {
        index -> Int? in
        if index == 1 {
          bus.post(try Self.numbered(thread: 1, sequence: 1))
          return nil
        }
        return bus.pop(.application, timeout: .seconds(8)).flatMap(Self.number(of:))?.sequence
      }
      #expect(popped[0] == 1)
      pipeline.stop()
    }

    @Test func syncHandlersMayReenterTheBusAndChangeState() async throws {
      let pipeline = try Pipeline(parsing: "fakesrc ! fakesink")
      let bus = pipeline.bus
      // A message in the backlog: the first handler runs while it is being added, then again for a live one.
      bus.post(try Self.numbered(thread: 0, sequence: 0))
      let states = Mutex<[Element.State]>([])
      let handled = Mutex(0)
      try await onThread(within: 10, "sync handlers that subscribe, unsubscribe and change state") {
        let token = bus.addSyncHandler { [weak pipeline] message in
          guard let pipeline else { return }
          if case .stateChanged(_, let new, _) = message.kind, message.source == pipeline {
            states.withLock { $0.append(new) }
          }
          guard let (_, sequence) = Self.number(of: message) else { return }
          let inner = bus.addSyncHandler { _ in }
          bus.removeSyncHandler(inner)
          _ = bus.messages()
          if sequence == 0 { _ = try? pipeline.setState(.ready) } else { pipeline.stop() }
          handled.withLock { $0 += 1 }
        }
        bus.post(try Self.numbered(thread: 0, sequence: 1))
        bus.removeSyncHandler(token)
      }
      #expect(handled.withLock { $0 } == 2)
      #expect(states.withLock { $0 } == [.ready], "the handler missed the state change it made")
      #expect(try pipeline.state().current == .null)
    }

    // MARK: - Stopping from streaming threads

    @Test func stopFromAnAppSinkCallbackReturnsAndStops() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc ! appsink name=sink")
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      let (events, event) = AsyncStream.makeStream(of: String.self)
      let first = Atomic(true)
      sink.setCallbacks(newSample: { [weak pipeline] _ in
        guard let pipeline, first.exchange(false, ordering: .relaxed) else { return }
        let streaming = pipeline.isStreamingThread
        pipeline.stop { event.yield("stopped") }
        event.yield(streaming ? "returned on a streaming thread" : "returned on another thread")
      })
      #expect(!pipeline.isStreamingThread)
      try pipeline.play()
      let seen = try await collect(2, of: events, within: 10, "stop() in the appsink callback")
      #expect(Set(seen) == ["returned on a streaming thread", "stopped"])
      #expect(try pipeline.state().current == .null)
    }

    @Test func stopFromASyncHandlerOfAStreamingThreadErrorReturnsAndStops() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc ! identity error-after=3 ! fakesink")
      let (events, event) = AsyncStream.makeStream(of: String.self)
      let first = Atomic(true)
      pipeline.bus.addSyncHandler { [weak pipeline] message in
        guard let pipeline, case .error = message.kind, first.exchange(false, ordering: .relaxed) else { return }
        let streaming = pipeline.isStreamingThread
        pipeline.stop { event.yield("stopped") }
        event.yield(streaming ? "returned on a streaming thread" : "returned on another thread")
      }
      try pipeline.play()
      let seen = try await collect(2, of: events, within: 10, "stop() in the error's sync handler")
      #expect(Set(seen) == ["returned on a streaming thread", "stopped"])
      #expect(try pipeline.state().current == .null)
    }
  }
}
