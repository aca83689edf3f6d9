import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import RevueVideoSDK
import Synchronization
import Testing

/// Counts the calls of an `onEnded` handler (which checks that it runs on the main actor).
final class EndedRecorder: Sendable {
  private let state = Mutex<[VideoSDKError?]>([])
  private let called: AsyncStream<Void>
  private let continuation: AsyncStream<Void>.Continuation

  init() { (called, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1)) }

  /// The handler to set as `onEnded`.
  var handler: CustomStreamTrack.EndedHandler {
    { [self] error in
      MainActor.preconditionIsolated("onEnded called off the main actor")
      state.withLock { $0.append(error) }
      continuation.yield()
    }
  }

  /// The errors the handler was called with, in order.
  var calls: [VideoSDKError?] { state.withLock { $0 } }

  /// Waits for the first call, up to 10 seconds.
  func firstCall(sourceLocation: SourceLocation = #_sourceLocation) async throws -> VideoSDKError? {
    let called = called
    if calls.isEmpty {
      try await withDeadline(10, "onEnded", sourceLocation: sourceLocation) {
        for await _ in called { return }
      }
    }
    return calls[0]
  }
}

/// A virtual microphone made for one test.
enum Devices {
  /// Runs `body` with a virtual microphone, then removes it.
  static func withMicrophone<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: (CaptureDevice) async throws -> T
  ) async throws -> T {
    let device = try await TestCameras.addMicrophone("VideoSDK Mic")
    do {
      let result = try await body(device)
      try await TestCameras.remove([device])
      return result
    } catch {
      try? await TestCameras.remove([device])
      throw error
    }
  }
}

/// Expects `body` to throw a ``VideoSDKError`` of `code`.
func expectVideoSDKError(
  _ code: Int, _ name: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () async throws -> CustomStreamTrack
) async {
  do {
    let track = try await body()
    Issue.record("expected \(name) (\(code)), got a track", sourceLocation: sourceLocation)
    track.stop()
  } catch let error as VideoSDKError {
    #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    #expect(error.name == name, sourceLocation: sourceLocation)
  } catch {
    Issue.record("expected a VideoSDKError, got \(error)", sourceLocation: sourceLocation)
  }
}
