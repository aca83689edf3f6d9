import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct BufferTests {
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
      // GstVideoMeta's strides are gints and its size guints: larger ones are refused, not
      // trapped on (fuzzing found it: Fuzz/Corpus/pixel-buffer/crash-meta-stride-over-int32).
      #expect(throws: GStreamerError.self) {
        try buffer.addVideoMeta(
          .init(format: "NV12", width: 640, height: 480, offsets: [0, 640], strides: [640, Int(Int32.max) + 1]))
      }
      #expect(throws: GStreamerError.self) {
        try buffer.addVideoMeta(.init(format: "GRAY8", width: 1 << 33, height: 1, offsets: [0], strides: [640]))
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

@Suite(.tier(.pipeline), .sharedProcess) struct RTCPFeedbackTests {
  /// The 32-bit words of `bytes`, big-endian.
  static func words(_ bytes: [UInt8]) -> [UInt32] {
    stride(from: 0, to: bytes.count, by: 4).map { index in
      bytes[index..<index + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
  }

  @Test func aNACKPacksNearbyNumbersIntoOneEntry() {
    let packet = RTCPFeedback.nack(from: 0x1111_1111, media: 0x2222_2222, sequenceNumbers: [100, 101, 116, 117, 65535])
    let words = Self.words(packet)
    // An empty receiver report, then the generic NACK (65535 sorts last: an entry of its own).
    #expect(words[0] == 0x80C9_0001 && words[1] == 0x1111_1111)
    #expect(words[2] >> 16 == 0x81CD && Int(words[2] & 0xFFFF) == words.count - 3)
    #expect(words[3] == 0x1111_1111 && words[4] == 0x2222_2222)
    // 100 with 101 (bit 0) and 116 (bit 15); 117 is 17 after 100: an entry of its own.
    #expect(words[5] == 100 << 16 | 1 << 0 | 1 << 15)
    #expect(words[6] == 117 << 16)
    #expect(words[7] == 65535 << 16)
  }

  @Test func aPictureLossIndicationNamesBothStreams() {
    let words = Self.words(RTCPFeedback.pictureLoss(from: 7, media: 9))
    #expect(words == [0x80C9_0001, 7, 0x81CE_0002, 7, 9])
  }

  @Test func sourceDescriptionsAreReadByKindAndSource() {
    // An empty receiver report, then an SDES of two chunks: 0x5678 with a CNAME only, 0x1234
    // with a CNAME, a NOTE and a PRIV item (not one of the kinds read); each ends with a zero
    // item and pads to a word.
    let first: [UInt8] = [0, 0, 0x56, 0x78, 1, 1] + Array("c".utf8) + [0]
    let second: [UInt8] =
      [0, 0, 0x12, 0x34, 1, 3] + Array("a@b".utf8) + [7, 5] + Array("muted".utf8) + [8, 2, 1] + Array("x".utf8)
      + [0, 0, 0, 0]
    let sdes: [UInt8] = [0x82, 202, 0, UInt8((first.count + second.count) / 4)] + first + second
    let buffer = Buffer(copying: [0x80, 201, 0, 1, 0, 0, 0, 9] + sdes)
    #expect(buffer.rtcpSourceDescriptions == [0x1234: [.cname: "a@b", .note: "muted"], 0x5678: [.cname: "c"]])
    #expect(buffer.rtcpCNames == [0x1234: "a@b", 0x5678: "c"])
    #expect(Buffer(copying: Array("not RTCP".utf8)).rtcpSourceDescriptions.isEmpty)
  }
}
