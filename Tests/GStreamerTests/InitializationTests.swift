import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct InitializationTests {
    init() { TestEnvironment.prepare() }

    @Test func initializeIsIdempotentAndThreadSafe() async throws {
      try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<32 { group.addTask { try Gst.initialize() } }
        try await group.waitForAll()
      }
      #expect(Gst.isInitialized)
    }

    @Test func versionOfTheLibraryInUse() {
      let version = Gst.version
      #expect(version.major == 1)
      #expect(version >= Gst.Version(major: 1, minor: 20, micro: 0))
      #expect(Gst.versionString == "GStreamer \(version)")
    }

    @Test func registryLookups() {
      #expect(Gst.hasElement("fakesink"))
      #expect(!Gst.hasElement("nosuchelement"))
      let info = Gst.elementInfo("vp8enc")
      #expect(info?.plugin == "vpx")
      #expect(info?.klass.contains("Encoder") == true)
    }
  }
}
