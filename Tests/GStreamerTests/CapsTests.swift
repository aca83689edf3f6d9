import Foundation
import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct CapsTests {
    init() { TestEnvironment.prepare() }

    @Test func parseAndSerialize() throws {
      let caps = try Caps("video/x-raw, format=NV12, width=1280, height=720, framerate=30/1")
      #expect(caps.count == 1)
      #expect(caps.isFixed)
      #expect(try Caps(caps.description) == caps)
      let structure = caps.structure(at: 0)
      #expect(structure.name == "video/x-raw")
      #expect(structure["format"] == .string("NV12"))
      #expect(structure.get("width", as: Int32.self) == 1280)
      #expect(structure["framerate"] == .fraction(Fraction(30, 1)))
    }

    @Test func rangesAndLists() throws {
      let caps = try Caps(
        "video/x-raw, format={ NV12, I420 }, width=[ 16, 4096 ], framerate=[ 0/1, 60/1 ], "
          + "views=< 1, 2 >, gain=[ 0.5, 2.0 ]")
      let structure = caps.structure(at: 0)
      #expect(structure["format"] == .list([.string("NV12"), .string("I420")]))
      #expect(structure["width"] == .intRange(min: 16, max: 4096, step: 1))
      #expect(structure["framerate"] == .fractionRange(min: Fraction(0, 1), max: Fraction(60, 1)))
      #expect(structure["views"] == .array([.int(1), .int(2)]))
      #expect(structure["gain"] == .doubleRange(min: 0.5, max: 2.0))
      #expect(!caps.isFixed)
      #expect(try Caps(caps.description) == caps)
    }

    @Test func buildStructuresFieldByField() throws {
      var structure = Structure(name: "video/x-raw")
      try structure.set("format", "BGRA")
      try structure.set("width", 640)
      try structure.set("height", Int32(480))
      try structure.set("framerate", Fraction(15, 2))
      try structure.set("interlaced", false)
      try structure.set("widths", Value.list([.int(320), .int(640)]))
      #expect(structure.fieldNames == ["format", "width", "height", "framerate", "interlaced", "widths"])
      let parsed = try Structure(structure.description)
      #expect(parsed == structure)
      var copy = structure
      copy.removeField("widths")
      #expect(structure.hasField("widths"))
      #expect(!copy.hasField("widths"))
      #expect(throws: GStreamerError.self) { try structure.set("rate", Fraction(1, 0)) }
    }

    @Test func intersectAndFixate() throws {
      let camera = try Caps(
        "video/x-raw, format=YUY2, width=[ 160, 1280 ], height=[ 120, 720 ], framerate={ 30/1, 15/1 }")
      let wanted = try Caps("video/x-raw, width=640, height=480")
      let common = camera.intersection(wanted)
      #expect(!common.isEmpty)
      #expect(common.canIntersect(camera))
      #expect(common.isSubset(of: camera))
      let fixed = common.fixated()
      #expect(fixed.isFixed)
      let structure = fixed.structure(at: 0)
      #expect(structure.get("width", as: Int.self) == 640)
      #expect(structure.get("format", as: String.self) == "YUY2")
      #expect(structure.get("framerate", as: Fraction.self) == Fraction(30, 1))
      #expect(camera.intersection(try Caps("audio/x-raw")).isEmpty)
    }

    @Test func copyOnWrite() throws {
      let original = try Caps("video/x-raw, width=640")
      var changed = original
      try changed.setField("width", 320)
      #expect(original.structure(at: 0).get("width", as: Int.self) == 640)
      #expect(changed.structure(at: 0).get("width", as: Int.self) == 320)
      changed.append(try Structure("image/jpeg, width=320"))
      #expect(changed.count == 2)
      #expect(original.count == 1)
    }

    /// Every caps line of every shipped virtual camera profile parses, serializes and parses back
    /// to the same caps, and the whole profile does too as one caps.
    @Test(arguments: TestEnvironment.cameraProfiles)
    func cameraProfileRoundTrips(profile: URL) throws {
      let lines = try String(contentsOf: profile, encoding: .utf8).split(separator: "\n").map {
        $0.trimmingCharacters(in: .whitespaces)
      }
      let capsLines = lines.filter { $0.hasPrefix("video/") || $0.hasPrefix("image/") }
      #expect(!capsLines.isEmpty, "no caps in \(profile.lastPathComponent)")
      var all: [Structure] = []
      for line in capsLines {
        let caps = try Caps(line)
        #expect(caps.count == 1, "\(line)")
        #expect(try Caps(caps.description) == caps, "\(line)")
        let structure = caps.structure(at: 0)
        #expect(structure.get("width", as: Int.self).map { $0 > 0 } == true, "\(line)")
        #expect(structure.get("height", as: Int.self).map { $0 > 0 } == true, "\(line)")
        #expect(structure["framerate"] != nil, "\(line)")
        all.append(structure)
      }
      let whole = Caps(all)
      #expect(whole.count == capsLines.count)
      #expect(try Caps(whole.description) == whole)
    }

    @Test func everyProfileIsShipped() {
      let names = Set(TestEnvironment.cameraProfiles.map(\.lastPathComponent))
      #expect(
        names == [
          "csi-camera-module.caps", "laptop-integrated.caps", "laptop-ir.caps", "usb-1080p-webcam.caps",
          "usb-720p-webcam.caps",
        ])
    }
  }
}
