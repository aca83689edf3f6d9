import Foundation
import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct DeviceTests {
    init() { TestEnvironment.prepare() }

    /// The device classes of this suite's providers, which no other monitor of the process
    /// filters on. A monitor takes over the bus of each provider it covers, and a provider's bus
    /// serves one monitor only (GStreamer keeps one sync handler per bus): a monitor here over
    /// `Video/Source` would silence the SDK's device watcher for the rest of the run.
    private static let videoClass = "RevueTest/Video"
    private static let audioClass = "RevueTest/Audio"

    /// A camera of a provider of this test's own: a test pattern of the caps it reports.
    private func camera(_ id: String, caps: String) throws -> DeviceProvider.DeviceInfo {
      let caps = try Caps(caps)
      return DeviceProvider.DeviceInfo(
        id: id, displayName: "Test Camera \(id)", deviceClass: Self.videoClass, caps: caps,
        properties: try Structure(name: "properties", ["device.path": "/dev/test/\(id)"])
      ) { name in
        guard let source = try? Element.make("videotestsrc", name: name) else { return nil }
        try? source.set("num-buffers", 3)
        return source
      }
    }

    private static func uniqueName() -> String { "revuetest\(UInt32.random(in: 0..<UInt32.max))" }

    @Test func monitorListsDevicesOfAClass() throws {
      let name = Self.uniqueName()
      let provider = try DeviceProvider.register(
        name: name, longName: "Test cameras", classes: Self.videoClass,
        devices: [try camera("a", caps: "video/x-raw, format=YUY2, width=640, height=480, framerate=30/1")])
      defer { provider.remove(id: "a") }
      let monitor = DeviceMonitor()
      monitor.addFilter(classes: Self.videoClass)
      let devices = monitor.devices.filter { $0.displayName == "Test Camera a" }
      let device = try #require(devices.first)
      #expect(device.deviceClass == Self.videoClass)
      #expect(device.hasClasses(Self.videoClass))
      #expect(device.caps?.structure(at: 0).get("width", as: Int.self) == 640)
      #expect(device.properties?.get("device.path", as: String.self) == "/dev/test/a")
      let microphones = try DeviceProvider.register(
        name: Self.uniqueName(), longName: "Test microphones", classes: Self.audioClass,
        devices: [
          DeviceProvider.DeviceInfo(
            id: "m", displayName: "Test Microphone m", deviceClass: Self.audioClass,
            caps: try Caps("audio/x-raw, rate=48000, channels=1")
          ) { _ in nil }
        ])
      defer { microphones.remove(id: "m") }
      let audioOnly = DeviceMonitor()
      audioOnly.addFilter(classes: Self.audioClass)
      #expect(audioOnly.devices.contains { $0.displayName == "Test Microphone m" })
      #expect(!audioOnly.devices.contains { $0.displayName == "Test Camera a" })
    }

    @Test func deviceMakesAWorkingElement() async throws {
      let name = Self.uniqueName()
      let provider = try DeviceProvider.register(
        name: name, longName: "Test cameras", classes: Self.videoClass,
        devices: [try camera("b", caps: "video/x-raw, width=320, height=240")])
      defer { provider.remove(id: "b") }
      let monitor = DeviceMonitor()
      monitor.addFilter(classes: Self.videoClass)
      let device = try #require(monitor.devices.first { $0.displayName == "Test Camera b" })
      let source = try device.createElement(name: "camera")
      #expect(source.name == "camera")
      #expect(source.factoryName == "videotestsrc")
      let pipeline = Pipeline()
      let sink = try Element.make("fakesink")
      try pipeline.addLinked(source, sink)
      try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
    }

    @Test func hotPlugEventsAddedThenRemoved() async throws {
      let name = Self.uniqueName()
      let provider = try DeviceProvider.register(name: name, longName: "Test cameras", classes: Self.videoClass)
      let monitor = DeviceMonitor()
      monitor.addFilter(classes: Self.videoClass)
      let events = monitor.events()
      try monitor.start()
      #expect(monitor.providers.contains(name))
      provider.add(try camera("c", caps: "image/jpeg, width=1280, height=720, framerate=30/1"))
      provider.remove(id: "c")
      let seen = try await withDeadline(20, "the camera to come and go") {
        var seen: [String] = []
        for await event in events {
          switch event {
          case .added(let device) where device.displayName == "Test Camera c": seen.append("added")
          case .removed(let device) where device.displayName == "Test Camera c": seen.append("removed")
          default: break
          }
          if seen.count == 2 { break }
        }
        return seen
      }
      monitor.stop()
      #expect(seen == ["added", "removed"])
    }

    @Test func registeringANameTwiceIsRefused() throws {
      let name = Self.uniqueName()
      _ = try DeviceProvider.register(name: name, longName: "Test cameras", classes: Self.videoClass)
      #expect(throws: GStreamerError.self) {
        try DeviceProvider.register(name: name, longName: "Again", classes: Self.videoClass)
      }
    }
  }
}
