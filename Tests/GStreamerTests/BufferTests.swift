import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.timeLimit(.minutes(1))) struct BufferTests {
    init() { TestEnvironment.prepare() }

    @Test func bytesAndTimestamps() throws {
      var buffer = Buffer(copying: [1, 2, 3, 4])
      #expect(buffer.size == 4)
      #expect(buffer.bytes == [1, 2, 3, 4])
      #expect(buffer.pts == nil && buffer.dts == nil && buffer.duration == nil && buffer.offset == nil)
      buffer.pts = .milliseconds(40)
      buffer.dts = .milliseconds(33)
      buffer.duration = .milliseconds(33)
      buffer.offset = 9
      buffer.flags = [.deltaUnit, .marker]
      #expect(buffer.pts == .milliseconds(40))
      #expect(buffer.dts == .milliseconds(33))
      #expect(buffer.duration == ClockTime(nanoseconds: 33_000_000))
      #expect(buffer.offset == 9)
      #expect(buffer.flags == [.deltaUnit, .marker])
      let sum = try buffer.withUnsafeBytes { $0.reduce(0) { $0 + Int($1) } }
      #expect(sum == 10)
    }

    @Test func writingACopyLeavesTheOriginal() throws {
      let original = Buffer(copying: [0, 0, 0, 0])
      var copy = original
      try copy.withUnsafeMutableBytes { $0[0] = 9 }
      copy.pts = .seconds(1)
      #expect(original.bytes == [0, 0, 0, 0])
      #expect(original.pts == nil)
      #expect(copy.bytes == [9, 0, 0, 0])
    }

    @Test func writingAUniqueBufferWritesInPlace() throws {
      var buffer = Buffer(size: 16)
      let before = buffer.dataAddress
      _ = try buffer.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 7) }
      #expect(buffer.dataAddress == before)
      #expect(buffer.bytes == [UInt8](repeating: 7, count: 16))
    }

    @Test func wrappedMemoryIsNotCopiedAndIsReleased() throws {
      let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 16)
      memory.initializeMemory(as: UInt8.self, repeating: 3)
      let released = Mutex(false)
      do {
        let buffer = Buffer(wrapping: memory) { released.withLock { $0 = true } }
        #expect(buffer.dataAddress == UnsafeRawPointer(memory.baseAddress))
        #expect(buffer.bytes.allSatisfy { $0 == 3 })
        #expect(!released.withLock { $0 })
      }
      #expect(released.withLock { $0 })
      memory.deallocate()
    }

    @Test func videoMetaDescribesPlanes() throws {
      var buffer = Buffer(size: 640 * 480 * 3 / 2)
      #expect(buffer.videoMeta == nil)
      let layout = Buffer.VideoMeta(
        format: "NV12", width: 640, height: 480, offsets: [0, 640 * 480], strides: [640, 640])
      try buffer.addVideoMeta(layout)
      #expect(buffer.videoMeta == layout)
      #expect(throws: GStreamerError.self) {
        try buffer.addVideoMeta(.init(format: "NV12", width: 640, height: 480, offsets: [0], strides: [640]))
      }
      #expect(throws: GStreamerError.self) {
        try buffer.addVideoMeta(.init(format: "NOPE", width: 640, height: 480, offsets: [0], strides: [640]))
      }
      #expect(throws: GStreamerError.self) {
        try buffer.addVideoMeta(
          .init(format: "NV12", width: 640, height: 480, offsets: [0, 10_000_000], strides: [640, 640]))
      }
    }

    @Test func samplesCarryBufferAndCaps() throws {
      let caps = try Caps("application/x-test")
      let sample = Sample(buffer: Buffer(copying: [5]), caps: caps)
      #expect(sample.buffer?.bytes == [5])
      #expect(sample.caps == caps)
    }
  }
}
