import GStreamer
import RevueSDK
import RevueTestSupport
import Testing

@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct PixelBufferTests {
  /// Bytes of a `width`×`height` frame in `format` with tight rows, each byte its index mod 251.
  static func bytes(_ format: PixelFormat, _ width: Int, _ height: Int) -> [UInt8] {
    let count: Int =
      switch format {
      case .nv12, .i420: width * height * 3 / 2
      case .bgra, .rgba: width * height * 4
      case .yuy2: width * height * 2
      case .gray8: width * height
      }
    return (0..<count).map { UInt8($0 % 251) }
  }

  @Test(arguments: PixelFormat.allCases)
  func fromBytesWithPlanesAndStrides(format: PixelFormat) throws {
    let frame = try PixelBuffer(width: 64, height: 48, format: format, bytes: Self.bytes(format, 64, 48))
    #expect(frame.width == 64 && frame.height == 48 && frame.format == format)
    #expect(frame.planes.count == format.planeCount)
    #expect(frame.dimensions == Dimensions(width: 64, height: 48))
    #expect(frame.buffer.videoMeta?.format == format.gstreamerName)
    var all: [UInt8] = []
    for plane in 0..<frame.planes.count { all += try frame.planeBytes(plane) }
    #expect(all == Self.bytes(format, 64, 48))
  }

  @Test func paddedStridesAreKeptAndReadBack() throws {
    // NV12 4x2 with rows of 8 bytes: Y rows then one UV row.
    let bytes: [UInt8] = [1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0, 9, 10, 11, 12, 0, 0, 0, 0]
    let frame = try PixelBuffer(width: 4, height: 2, format: .nv12, bytes: bytes, strides: [8, 8], colorRange: .full)
    #expect(frame.planes.map(\.stride) == [8, 8])
    #expect(frame.planes.map(\.rows) == [2, 1])
    #expect(try frame.planeBytes(0) == [1, 2, 3, 4, 5, 6, 7, 8])
    #expect(try frame.planeBytes(1) == [9, 10, 11, 12])
    #expect(frame.colorRange == .full)
    #expect(frame.caps.structure(at: 0).get("colorimetry", as: String.self) == "jpeg")
  }

  @Test func wrappingAGStreamerBufferDoesNotCopy() throws {
    let info = try VideoInfo(format: "I420", width: 320, height: 240)
    let buffer = Buffer(size: info.size)
    let frame = try PixelBuffer(wrapping: buffer, width: 320, height: 240, format: .i420)
    #expect(frame.buffer.dataAddress == buffer.dataAddress)
    #expect(frame.planes.map(\.offset) == info.offsets)
    #expect(frame.planes.map(\.stride) == info.strides)
  }

  @Test(arguments: [PixelFormat.nv12, .i420, .bgra])
  func filledInPlaceWithoutACopy(format: PixelFormat) throws {
    var written: UnsafeMutableRawPointer?
    let frame = try PixelBuffer(width: 64, height: 48, format: format) { memory, planes in
      #expect(planes.count == format.planeCount)
      written = memory.baseAddress
      for (index, byte) in Self.bytes(format, 64, 48).enumerated() { memory[index] = byte }
    }
    #expect(UnsafeRawPointer(written) == frame.buffer.dataAddress)
    #expect(frame.buffer.videoMeta?.format == format.gstreamerName)
    var all: [UInt8] = []
    for plane in 0..<frame.planes.count { all += try frame.planeBytes(plane) }
    #expect(all == Self.bytes(format, 64, 48))
    #expect(throws: MediaBufferError.self) { try PixelBuffer(width: 63, height: 48, format: .nv12) { _, _ in } }
  }

  @Test func badSizesAreRefused() {
    #expect(throws: MediaBufferError.self) { try PixelBuffer(width: 0, height: 10, format: .bgra, bytes: []) }
    #expect(throws: MediaBufferError.self) { try PixelBuffer(width: -4, height: 10, format: .bgra, bytes: []) }
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(width: 100_000, height: 2, format: .gray8, bytes: [UInt8](repeating: 0, count: 200_000))
    }
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(width: 63, height: 48, format: .nv12, bytes: [UInt8](repeating: 0, count: 63 * 48 * 3 / 2))
    }
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(width: 64, height: 47, format: .i420, bytes: [UInt8](repeating: 0, count: 64 * 47 * 3 / 2))
    }
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(width: 63, height: 2, format: .yuy2, bytes: [UInt8](repeating: 0, count: 64 * 2 * 2))
    }
  }

  @Test func badByteCountsAndStridesAreRefused() {
    let error = #expect(throws: MediaBufferError.self) {
      try PixelBuffer(width: 64, height: 48, format: .nv12, bytes: [UInt8](repeating: 0, count: 64 * 48))
    }
    #expect(error?.reason.contains("4608 bytes") == true)
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(
        width: 64, height: 48, format: .bgra, bytes: [UInt8](repeating: 0, count: 64 * 48 * 4), strides: [200])
    }
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(
        width: 64, height: 48, format: .nv12, bytes: [UInt8](repeating: 0, count: 64 * 48 * 3 / 2), strides: [64])
    }
    #expect(throws: MediaBufferError.self) {
      try PixelBuffer(wrapping: Buffer(size: 100), width: 64, height: 48, format: .nv12)
    }
  }

  @Test func presetsAndRotations() {
    #expect(Dimensions.h720_169 == Dimensions(width: 1280, height: 720))
    #expect(Dimensions.h1080_169.area == 1920 * 1080)
    #expect(Dimensions.h480_43 == Dimensions(width: 640, height: 480))
    #expect(Dimensions.h2160_169.swapped == Dimensions(width: 2160, height: 3840))
    #expect(VideoRotation._90.swapsDimensions && VideoRotation._270.swapsDimensions)
    #expect(!VideoRotation._180.swapsDimensions && !VideoRotation._0.swapsDimensions)
  }
}

@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct AudioPCMBufferTests {
  @Test func int16AndFloatInterleaved() throws {
    let short = try AudioPCMBuffer(sampleRate: 16_000, channelCount: 2, samples: [Int16](repeating: 7, count: 320))
    #expect(short.frameLength == 160 && short.format == .int16 && short.channelCount == 2)
    #expect(short.int16Samples == [Int16](repeating: 7, count: 320))
    #expect(short.duration == .milliseconds(10))
    let float = try AudioPCMBuffer(sampleRate: 44_100, channelCount: 1, samples: [Float](repeating: 0.5, count: 441))
    #expect(float.floatSamples?.first == 0.5)
    #expect(float.caps.structure(at: 0).get("rate", as: Int.self) == 44_100)
  }

  @Test func badBuffersAreRefused() {
    #expect(throws: MediaBufferError.self) {
      try AudioPCMBuffer(sampleRate: 48_000, channelCount: 2, samples: [Int16](repeating: 0, count: 3))
    }
    #expect(throws: MediaBufferError.self) {
      try AudioPCMBuffer(sampleRate: 0, channelCount: 1, samples: [Int16](repeating: 0, count: 4))
    }
    #expect(throws: MediaBufferError.self) {
      try AudioPCMBuffer(sampleRate: 48_000, channelCount: 0, samples: [Int16]())
    }
    #expect(throws: MediaBufferError.self) {
      try AudioPCMBuffer(sampleRate: 48_000, channelCount: 100, samples: [Int16](repeating: 0, count: 100))
    }
    #expect(throws: MediaBufferError.self) {
      try AudioPCMBuffer(sampleRate: 48_000, channelCount: 1, samples: [Int16]())
    }
    let error = #expect(throws: MediaBufferError.self) {
      try [UInt8](repeating: 0, count: 10).withUnsafeBytes {
        try AudioPCMBuffer(sampleRate: 48_000, channelCount: 2, format: .float32, frameLength: 2, bytes: $0)
      }
    }
    #expect(error?.reason.contains("16 bytes") == true)
  }

  /// Fuzzing found both (Fuzz/Corpus/audio-buffer/crash-*): a frame length or a channel count
  /// whose byte count does not fit in an Int trapped instead of throwing.
  @Test func byteCountsThatOverflowAreRefused() {
    #expect(throws: MediaBufferError.self) {
      try [UInt8](repeating: 0, count: 16).withUnsafeBytes {
        try AudioPCMBuffer(sampleRate: 48_000, channelCount: 2, format: .int16, frameLength: .max / 2, bytes: $0)
      }
    }
    #expect(throws: MediaBufferError.self) {
      try AudioPCMBuffer(wrapping: Buffer(size: 16), sampleRate: 48_000, channelCount: .max, format: .float32)
    }
  }
}
