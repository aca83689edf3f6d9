import GStreamer
@_spi(Fuzzing) import RevueSDK

/// The fuzz targets: each turns one input's bytes into calls of the SDK that must throw on bad
/// input, never crash. libFuzzer (`scripts/fuzz.sh`) and the replay tool (`revue-fuzz`, and the
/// corpus tests) call the same ``run(_:)``. docs/fuzzing.md says what each explores.
public enum FuzzTarget: String, CaseIterable, Sendable {
  /// `Room.listen(sdp:)`'s SDP parser: the input is the SDP's text.
  case sdp
  /// `revue run`'s pipeline-config parser: the input is the config's text; variables,
  /// comments, and the check of element and property names against the registry.
  case config
  /// ``PixelBuffer``'s constructors, from bytes and strides, filled in place, and wrapping a
  /// GStreamer buffer with or without a video meta, geometry and data from the input.
  case pixelBuffer = "pixel-buffer"
  /// ``AudioPCMBuffer``'s constructors, from bytes, from samples and wrapping a GStreamer buffer.
  case audioBuffer = "audio-buffer"

  /// Whether the SDK took the input (it made a value) or refused it (it threw).
  public enum Outcome: Sendable, Hashable {
    /// The input made a value.
    case accepted
    /// The input was refused with an error.
    case rejected
  }

  /// Runs one input through the target.
  /// - Returns: whether it was accepted or refused; a crash is a finding.
  @discardableResult
  public func run(_ data: [UInt8]) -> Outcome {
    Self.prepared()
    switch self {
    case .sdp: return Self.sdp(data)
    case .config: return Self.config(data)
    case .pixelBuffer: return Self.pixelBuffer(data)
    case .audioBuffer: return Self.audioBuffer(data)
    }
  }

  /// Initializes GStreamer once for the process (buffers and the element registry need it).
  private static let initialized: Void = {
    do {
      try Gst.initialize()
    } catch {
      fatalError("GStreamer cannot start: \(error)")
    }
  }()
  private static func prepared() { _ = initialized }

  // MARK: - SDP

  private static func sdp(_ data: [UInt8]) -> Outcome {
    let text = String(decoding: data, as: UTF8.self)
    // The same text as a WHIP endpoint's answer: the RIDs read are plain tokens.
    let (accepted, _) = FuzzEntry.simulcast(text)
    for rid in accepted {
      precondition(!rid.isEmpty && !rid.contains { ";,~ \r\n".contains($0) }, "RID '\(rid)'")
    }
    do {
      let sections = try FuzzEntry.parseSDP(text)
      // What the parser accepts, the receiver binds: a port of 1…65534 (RTCP on the next one).
      for section in sections {
        precondition((1..<65_535).contains(section.port), "SDP port \(section.port)")
        // What the receiver's caps and rtprtxreceive take: a dynamic payload type for the media
        // (the depayloaders refuse others), and recovery payload types of RTP's 7 bits, each
        // its own.
        let types = section.payloadTypes
        precondition((96...127).contains(types[0]), "SDP media payload type \(types[0])")
        precondition(types.allSatisfy { (0...127).contains($0) }, "SDP payload types \(types)")
        precondition(Set(types).count == types.count, "SDP payload types \(types) repeat")
      }
      return .accepted
    } catch {
      return .rejected
    }
  }

  // MARK: - Pipeline config

  /// Variables as `revue run -D` gives them: one set, one empty, others unset.
  private static let variables = [
    "PORT": "5004", "HOST": "127.0.0.1", "EMPTY": "", "DEVICE": "/dev/video0", "FRAMES": "10",
  ]

  private static func config(_ data: [UInt8]) -> Outcome {
    let config = PipelineConfig(text: String(decoding: data, as: UTF8.self), source: "fuzz.pipeline")
    do {
      _ = try config.description(variables: variables)
      // The check `revue run` makes before it starts anything: elements are made, never started.
      _ = try config.checkedDescription(variables: variables)
      return .accepted
    } catch {
      return .rejected
    }
  }

  // MARK: - PixelBuffer

  /// The largest picture made in memory (filled in place, or a wrapped buffer), in pixels: larger
  /// valid sizes only cost time, and sizes over ``PixelBuffer/maximumSide`` are tried from the
  /// other constructors, which refuse them before allocating anything.
  static let allocationLimit = 1 << 20

  private static func pixelBuffer(_ data: [UInt8]) -> Outcome {
    var input = FuzzInput(data)
    let operation = input.byte() % 5
    let format = input.choice(PixelFormat.allCases)
    let width = input.size(upTo: 130)
    let height = input.size(upTo: 130)
    let range = input.choice([ColorRange.video, .full])
    do {
      let frame: PixelBuffer
      switch operation {
      case 0, 1:
        // Strides: none (tight rows), or a count of their own, each small or an edge.
        let strideCount = Int(input.byte() % 5)
        let strides: [Int]? =
          strideCount == 0 ? nil : (0..<(strideCount - 1)).map { _ in input.size(upTo: 1_100) }
        let bytes = Array(input.remaining)
        if operation == 0 {
          frame = try bytes.withUnsafeBytes { raw throws(MediaBufferError) in
            try PixelBuffer(
              width: width, height: height, format: format, bytes: raw, strides: strides, colorRange: range)
          }
        } else {
          frame = try PixelBuffer(
            width: width, height: height, format: format, bytes: bytes, strides: strides, colorRange: range)
        }
      case 2:
        // Sizes the constructor refuses are tried; valid ones only up to the limit.
        let valid = (1...PixelBuffer.maximumSide).contains(width) && (1...PixelBuffer.maximumSide).contains(height)
        guard !valid || width * height <= allocationLimit else { return .rejected }
        frame = try PixelBuffer(width: width, height: height, format: format, colorRange: range) { memory, planes in
          // Every plane the constructor describes lies in the memory it hands over.
          for plane in planes where plane.rows > 0 {
            precondition(plane.offset >= 0 && plane.offset + plane.stride * plane.rows <= memory.count)
          }
          memory.initializeMemory(as: UInt8.self, repeating: 0x80)
        }
      default:
        let size = input.size(upTo: 4 * allocationLimit)
        guard size >= 0, size <= 4 * allocationLimit else { return .rejected }
        var buffer = Buffer(size: size)
        if operation == 4 {
          // A video meta of the input's own: any format name, geometry, offsets and strides.
          let meta = Buffer.VideoMeta(
            format: input.choice(PixelFormat.allCases.map(\.gstreamerName) + ["", "v210", "NV12 ", "AYUV64"]),
            width: input.size(upTo: 130), height: input.size(upTo: 130),
            offsets: (0..<Int(input.byte() % 5)).map { _ in input.size(upTo: 20_000) },
            strides: (0..<Int(input.byte() % 5)).map { _ in input.size(upTo: 1_100) })
          do {
            try buffer.addVideoMeta(meta)
          } catch {
            // The layer refused the meta: the buffer is wrapped without one.
          }
        }
        frame = try PixelBuffer(wrapping: buffer, width: width, height: height, format: format, colorRange: range)
      }
      // What a frame promises: its planes can be read, and its caps parse.
      for index in frame.planes.indices { _ = try frame.planeBytes(index) }
      _ = frame.caps
      return .accepted
    } catch {
      return .rejected
    }
  }

  // MARK: - AudioPCMBuffer

  private static func audioBuffer(_ data: [UInt8]) -> Outcome {
    var input = FuzzInput(data)
    let operation = input.byte() % 4
    let format = input.choice([AudioPCMBuffer.Format.int16, .float32])
    let sampleRate = input.size(upTo: 200_000)
    let channels = input.size(upTo: 70)
    do {
      let audio: AudioPCMBuffer
      switch operation {
      case 0:
        let frameLength = input.size(upTo: 5_000)
        audio = try Array(input.remaining).withUnsafeBytes { raw throws(MediaBufferError) in
          try AudioPCMBuffer(
            sampleRate: sampleRate, channelCount: channels, format: format, frameLength: frameLength, bytes: raw)
        }
      case 1:
        let samples = stride(from: 0, to: input.remaining.count - 1, by: 2).map { _ in
          Int16(truncatingIfNeeded: input.integer(bytes: 2))
        }
        audio = try AudioPCMBuffer(sampleRate: sampleRate, channelCount: channels, samples: samples)
      case 2:
        let samples = stride(from: 0, to: input.remaining.count - 3, by: 4).map { _ in
          Float(bitPattern: UInt32(truncatingIfNeeded: input.integer(bytes: 4)))
        }
        audio = try AudioPCMBuffer(sampleRate: sampleRate, channelCount: channels, samples: samples)
      default:
        audio = try AudioPCMBuffer(
          wrapping: Buffer(copying: Array(input.remaining)), sampleRate: sampleRate, channelCount: channels,
          format: format)
      }
      // What audio promises: its caps parse, its duration and samples can be read.
      _ = audio.caps
      _ = audio.duration
      _ = audio.int16Samples ?? []
      _ = audio.floatSamples ?? []
      return .accepted
    } catch {
      return .rejected
    }
  }
}
