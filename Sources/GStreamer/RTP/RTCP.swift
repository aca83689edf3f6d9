internal import CGStreamer
internal import CGStreamerNet
internal import CGStreamerRTP

/// A report block of an RTCP sender or receiver report: what a receiver says of one stream.
public struct RTCPReportBlock: Sendable, Hashable {
  /// The SSRC of the reporter (the packet's sender).
  public var reporter: UInt32
  /// The SSRC of the stream reported on.
  public var ssrc: UInt32
  /// The fraction of packets lost since the previous report, 0…1.
  public var fractionLost: Double
  /// Packets lost since the start (can be negative with duplicates).
  public var packetsLost: Int32
  /// The extended highest sequence number received.
  public var highestSequence: UInt32
  /// The interarrival jitter, in RTP timestamp units.
  public var jitter: UInt32
  /// The middle 32 bits of the NTP time of the last sender report received (0: none yet).
  public var lastSenderReport: UInt32
  /// The delay since that sender report, in 1/65536 s.
  public var delaySinceLastSenderReport: UInt32

  /// The round-trip time this block gives when it arrives at `arrival` (the middle 32 bits of
  /// the NTP time now), nil when the reporter has not received a sender report yet. Both times
  /// are the wall clock's when the sender report was stamped with it (rtpbin's default): a step
  /// of the wall clock in between moves the result by the step. Measuring from when the sender
  /// report left, on a monotonic clock, does not.
  public func roundTrip(arrival: UInt32) -> Duration? {
    guard lastSenderReport != 0 else { return nil }
    let units = arrival &- lastSenderReport &- delaySinceLastSenderReport
    guard units < 0x8000_0000 else { return nil }
    return .nanoseconds(Int64(units) * 1_000_000_000 / 65_536)
  }

  /// The middle 32 bits of the NTP time now, as report blocks count it.
  public static func ntpMiddleNow() -> UInt32 { UInt32(truncatingIfNeeded: RTCPSenderInfo.ntpNow() >> 16) }
}

extension Buffer {
  /// The report blocks of the sender and receiver reports in this RTCP buffer (a compound
  /// packet); empty when it is not valid RTCP.
  ///
  /// The corresponding C functions are `gst_rtcp_buffer_map` and `gst_rtcp_packet_get_rb`.
  public var rtcpReportBlocks: [RTCPReportBlock] {
    withRTCP { rtcp -> [RTCPReportBlock]? in
      var blocks: [RTCPReportBlock] = []
      var packet = GstRTCPPacket()
      var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
      while more {
        let type = gst_rtcp_packet_get_type(&packet)
        if type == GST_RTCP_TYPE_RR || type == GST_RTCP_TYPE_SR {
          var reporter: guint32 = 0
          if type == GST_RTCP_TYPE_RR {
            reporter = gst_rtcp_packet_rr_get_ssrc(&packet)
          } else {
            var ntp: guint64 = 0
            var rtp: guint32 = 0
            var packets: guint32 = 0
            var octets: guint32 = 0
            gst_rtcp_packet_sr_get_sender_info(&packet, &reporter, &ntp, &rtp, &packets, &octets)
          }
          for index in 0..<gst_rtcp_packet_get_rb_count(&packet) {
            var ssrc: guint32 = 0
            var fraction: guint8 = 0
            var lost: gint32 = 0
            var highest: guint32 = 0
            var jitter: guint32 = 0
            var lsr: guint32 = 0
            var dlsr: guint32 = 0
            gst_rtcp_packet_get_rb(&packet, index, &ssrc, &fraction, &lost, &highest, &jitter, &lsr, &dlsr)
            blocks.append(
              RTCPReportBlock(
                reporter: reporter, ssrc: ssrc, fractionLost: Double(fraction) / 256, packetsLost: lost,
                highestSequence: highest, jitter: jitter, lastSenderReport: lsr, delaySinceLastSenderReport: dlsr))
          }
        }
        more = gst_rtcp_packet_move_to_next(&packet) != 0
      }
      return blocks
    } ?? []
  }
}

extension Buffer {
  /// Where a buffer received by `udpsrc` came from (the source keeps it unless
  /// `retrieve-sender-address` is false); nil when it does not say.
  ///
  /// The corresponding C function is `gst_buffer_get_net_address_meta`.
  public var senderAddress: (host: String, port: Int)? {
    withPointer { pointer in
      guard let meta = gst_buffer_get_net_address_meta(pointer), let socketAddress = meta.pointee.addr,
        g_type_check_instance_is_a(
          UnsafeMutableRawPointer(socketAddress).assumingMemoryBound(to: GTypeInstance.self),
          g_inet_socket_address_get_type()) != 0
      else { return nil }
      let address = UnsafeMutableRawPointer(socketAddress).assumingMemoryBound(to: GInetSocketAddress.self)
      guard let text = g_inet_address_to_string(g_inet_socket_address_get_address(address)) else { return nil }
      defer { g_free(text) }
      return (String(cString: text), Int(g_inet_socket_address_get_port(address)))
    }
  }
}

/// An item of an RTCP source description (SDES, RFC 3550 §6.5).
public enum RTCPSourceItem: UInt8, Sendable, Hashable {
  /// The canonical name: who the source is (`user@host`), the same for all its streams.
  case cname = 1
  /// The user's name.
  case name
  /// The user's e-mail address.
  case email
  /// The user's phone number.
  case phone
  /// Where the user is.
  case location
  /// The application that sends.
  case tool
  /// A transient note on the source's state.
  case note
}

extension Buffer {
  /// The items of the SDES chunks in this RTCP buffer, by SSRC; empty when it is not valid RTCP.
  /// Items of other kinds than ``RTCPSourceItem`` (PRIV) are left out.
  ///
  /// The corresponding C functions are `gst_rtcp_packet_sdes_first_item` and `gst_rtcp_packet_sdes_get_entry`.
  public var rtcpSourceDescriptions: [UInt32: [RTCPSourceItem: String]] {
    withRTCP { rtcp -> [UInt32: [RTCPSourceItem: String]]? in
      var descriptions: [UInt32: [RTCPSourceItem: String]] = [:]
      var packet = GstRTCPPacket()
      var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
      while more {
        if gst_rtcp_packet_get_type(&packet) == GST_RTCP_TYPE_SDES {
          var item = gst_rtcp_packet_sdes_first_item(&packet) != 0
          while item {
            let ssrc = gst_rtcp_packet_sdes_get_ssrc(&packet)
            var entry = gst_rtcp_packet_sdes_first_entry(&packet) != 0
            while entry {
              var type = GST_RTCP_SDES_INVALID
              var length: guint8 = 0
              var data: UnsafeMutablePointer<guint8>?
              if gst_rtcp_packet_sdes_get_entry(&packet, &type, &length, &data) != 0,
                let kind = RTCPSourceItem(rawValue: UInt8(truncatingIfNeeded: type.rawValue)), let data
              {
                descriptions[ssrc, default: [:]][kind] = String(
                  decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
              }
              entry = gst_rtcp_packet_sdes_next_entry(&packet) != 0
            }
            item = gst_rtcp_packet_sdes_next_item(&packet) != 0
          }
        }
        more = gst_rtcp_packet_move_to_next(&packet) != 0
      }
      return descriptions
    } ?? [:]
  }

  /// The SSRCs that say goodbye in this RTCP buffer's BYE packets (RFC 3550 §6.6: the source
  /// leaves); empty when it has none or is not valid RTCP. The corresponding C functions are
  /// `gst_rtcp_packet_bye_get_ssrc_count` and `gst_rtcp_packet_bye_get_nth_ssrc`.
  public var rtcpGoodbyeSSRCs: [UInt32] {
    withRTCP { rtcp -> [UInt32]? in
      var ssrcs: [UInt32] = []
      var packet = GstRTCPPacket()
      var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
      while more {
        if gst_rtcp_packet_get_type(&packet) == GST_RTCP_TYPE_BYE {
          for index in 0..<gst_rtcp_packet_bye_get_ssrc_count(&packet) {
            ssrcs.append(gst_rtcp_packet_bye_get_nth_ssrc(&packet, index))
          }
        }
        more = gst_rtcp_packet_move_to_next(&packet) != 0
      }
      return ssrcs
    } ?? []
  }

  /// The CNAMEs of the SDES chunks in this RTCP buffer, by SSRC; empty when it is not valid RTCP.
  public var rtcpCNames: [UInt32: String] { rtcpSourceDescriptions.compactMapValues { $0[.cname] } }

  /// Whether this is a valid RTP packet (version 2, a consistent header and padding).
  ///
  /// The corresponding C function is `gst_rtp_buffer_map`.
  public var isValidRTP: Bool { rtpTimestamp != nil }

  /// The RTP timestamp of this RTP packet; nil when it is not valid RTP.
  ///
  /// The corresponding C function is `gst_rtp_buffer_get_timestamp`.
  public var rtpTimestamp: UInt32? { rtpHeader?.timestamp }

  /// The synchronization source, payload type, sequence number and timestamp of this RTP
  /// packet; nil when it is not valid RTP.
  ///
  /// The corresponding C functions are `gst_rtp_buffer_get_ssrc`, `gst_rtp_buffer_get_payload_type`,
  /// `gst_rtp_buffer_get_seq` and `gst_rtp_buffer_get_timestamp`.
  public var rtpHeader: (ssrc: UInt32, payloadType: Int, sequence: UInt16, timestamp: UInt32)? {
    withPointer { pointer in
      var rtp = GstRTPBuffer()
      guard gst_rtp_buffer_map(pointer, GST_MAP_READ, &rtp) != 0 else { return nil }
      defer { gst_rtp_buffer_unmap(&rtp) }
      return (
        gst_rtp_buffer_get_ssrc(&rtp), Int(gst_rtp_buffer_get_payload_type(&rtp)), gst_rtp_buffer_get_seq(&rtp),
        gst_rtp_buffer_get_timestamp(&rtp)
      )
    }
  }

  /// The bitrate a receiver estimates the path carries, in bits per second, from the first
  /// REMB message of this RTCP packet (an application-layer feedback message, PSFB 15, whose
  /// FCI starts with `REMB`: draft-alvestrand-rmcat-remb), and the media SSRCs it is about; nil
  /// when it holds none. A reduced-size packet (RFC 5506: the REMB alone) counts. Janus, aiortc and libwebrtc send it when the offer lists `goog-remb`.
  public var rtcpReceiverEstimate: (bitsPerSecond: Int, ssrcs: [UInt32])? {
    withRTCP(reducedSize: true) { rtcp -> (Int, [UInt32])? in
      var packet = GstRTCPPacket()
      var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
      while more {
        if gst_rtcp_packet_get_type(&packet) == GST_RTCP_TYPE_PSFB,
          gst_rtcp_packet_fb_get_type(&packet) == GST_RTCP_PSFB_TYPE_AFB,
          let fci = gst_rtcp_packet_fb_get_fci(&packet)
        {
          let words = Int(gst_rtcp_packet_fb_get_fci_length(&packet))
          let bytes = Array(UnsafeBufferPointer(start: fci, count: words * 4))
          if let estimate = Self.receiverEstimate(fci: bytes) { return estimate }
        }
        more = gst_rtcp_packet_move_to_next(&packet) != 0
      }
      return nil
    }
  }

  /// A REMB message's bitrate and SSRCs from its FCI: `REMB`, the number of SSRCs, a 6-bit
  /// exponent and an 18-bit mantissa, the SSRCs; nil when the FCI is no REMB or is cut short.
  static func receiverEstimate(fci bytes: [UInt8]) -> (Int, [UInt32])? {
    guard bytes.count >= 8, bytes[0..<4] == [0x52, 0x45, 0x4D, 0x42] else { return nil }
    let count = Int(bytes[4])
    guard bytes.count >= 8 + 4 * count else { return nil }
    let exponent = Int(bytes[5] >> 2)
    let mantissa = Int(bytes[5] & 0x03) << 16 | Int(bytes[6]) << 8 | Int(bytes[7])
    // 2^63 and beyond: no path carries that; say the most an Int holds.
    let bitrate =
      exponent + (Int.bitWidth - mantissa.leadingZeroBitCount) >= Int.bitWidth - 1
      ? Int.max : mantissa << exponent
    let ssrcs = (0..<count).map { index in
      bytes[(8 + 4 * index)..<(12 + 4 * index)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
    return (bitrate, ssrcs)
  }

  /// The sender information of the first sender report in this RTCP buffer (a compound
  /// packet); nil when it has none or is not valid RTCP.
  ///
  /// The corresponding C function is `gst_rtcp_packet_sr_get_sender_info`.
  public var rtcpSenderInfo: RTCPSenderInfo? {
    withRTCP { rtcp in
      var packet = GstRTCPPacket()
      var more = gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0
      while more {
        if gst_rtcp_packet_get_type(&packet) == GST_RTCP_TYPE_SR {
          var info = RTCPSenderInfo(ssrc: 0, ntpTime: 0, rtpTime: 0, packetCount: 0, octetCount: 0)
          var ntp: guint64 = 0
          gst_rtcp_packet_sr_get_sender_info(
            &packet, &info.ssrc, &ntp, &info.rtpTime, &info.packetCount, &info.octetCount)
          info.ntpTime = UInt64(ntp)
          return info
        }
        more = gst_rtcp_packet_move_to_next(&packet) != 0
      }
      return nil
    }
  }

  /// The SSRC of the source that reports, when this RTCP compound starts with a sender or a
  /// receiver report (as RFC 3550 wants every compound to); nil otherwise, or when it is not
  /// valid RTCP.
  ///
  /// The corresponding C functions are `gst_rtcp_packet_sr_get_sender_info` and `gst_rtcp_packet_rr_get_ssrc`.
  public var rtcpReporterSSRC: UInt32? {
    withRTCP { rtcp in
      var packet = GstRTCPPacket()
      guard gst_rtcp_buffer_get_first_packet(&rtcp, &packet) != 0 else { return nil }
      switch gst_rtcp_packet_get_type(&packet) {
      case GST_RTCP_TYPE_SR:
        var ssrc: guint32 = 0
        gst_rtcp_packet_sr_get_sender_info(&packet, &ssrc, nil, nil, nil, nil)
        return ssrc
      case GST_RTCP_TYPE_RR: return gst_rtcp_packet_rr_get_ssrc(&packet)
      default: return nil
      }
    }
  }

  /// `body` with this buffer mapped as RTCP; nil when it is not valid RTCP: a compound packet
  /// (RFC 3550, a report first), or with `reducedSize` any run of RTCP packets (RFC 5506, as
  /// receivers send feedback alone: aiortc its REMB).
  /// An empty buffer (a datagram of no bytes) is none, and is not handed to GStreamer's
  /// validation, which asserts on it (a GLib critical per datagram).
  private func withRTCP<T>(reducedSize: Bool = false, _ body: (inout GstRTCPBuffer) -> T?) -> T? {
    guard size > 0 else { return nil }
    return withPointer { pointer -> T? in
      let valid = reducedSize ? gst_rtcp_buffer_validate_reduced(pointer) : gst_rtcp_buffer_validate(pointer)
      guard valid != 0 else { return nil }
      var rtcp = GstRTCPBuffer()
      guard gst_rtcp_buffer_map(pointer, GST_MAP_READ, &rtcp) != 0 else { return nil }
      defer { gst_rtcp_buffer_unmap(&rtcp) }
      return body(&rtcp)
    }
  }
}

/// What a sender report says of its sender: the wall-clock time (NTP) that goes with an RTP
/// timestamp, and what was sent so far (RFC 3550, 6.4.1).
public struct RTCPSenderInfo: Sendable, Hashable {
  /// The sender's SSRC.
  public var ssrc: UInt32
  /// The sender's wall-clock time when the report was sent: NTP seconds since 1900 in the high
  /// 32 bits, the fraction of a second in the low 32.
  public var ntpTime: UInt64
  /// The RTP timestamp of the same instant.
  public var rtpTime: UInt32
  /// RTP packets sent so far.
  public var packetCount: UInt32
  /// Payload bytes sent so far.
  public var octetCount: UInt32

  /// The NTP time of a packet with RTP timestamp `timestamp`, at `clockRate` ticks a second
  /// (timestamps within half the 32-bit range of the report's, either side).
  public func ntpTime(ofRTPTimestamp timestamp: UInt32, clockRate: Int) -> UInt64 {
    let ticks = Int64(Int32(bitPattern: timestamp &- rtpTime))
    let rate = Int64(max(1, clockRate))
    // Whole seconds and the rest apart, so that no product overflows.
    let offset = (ticks / rate) << 32 + ((ticks % rate) << 32) / rate
    return UInt64(bitPattern: Int64(bitPattern: ntpTime) &+ offset)
  }

  /// This machine's wall-clock time now, in the NTP format of ``ntpTime``.
  public static func ntpNow() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let seconds = UInt64(now.tv_sec) + 2_208_988_800  // NTP counts from 1900
    return seconds << 32 + (UInt64(now.tv_nsec) << 32) / 1_000_000_000
  }
}

/// RTCP feedback packets (RFC 4585) a receiver sends when it needs something now: each is a
/// compound packet of an empty receiver report and the feedback message, as RFC 3550 wants a
/// compound packet to start with a report.
public enum RTCPFeedback {
  /// A generic NACK (RTPFB, FMT 1): the packets `sequenceNumbers` of `media` are missing. Nearby
  /// numbers share one entry (a first number and a bitmask of the 16 after it).
  public static func nack(from sender: UInt32, media: UInt32, sequenceNumbers: [UInt16]) -> [UInt8] {
    var entries: [(first: UInt16, mask: UInt16)] = []
    for number in sequenceNumbers.sorted() {
      if let last = entries.last, number &- last.first >= 1, number &- last.first <= 16 {
        entries[entries.count - 1].mask |= 1 << (number &- last.first &- 1)
      } else if entries.last?.first != number {
        entries.append((number, 0))
      }
    }
    var packet = emptyReport(from: sender)
    packet += [0x81, 205] + be16(UInt16(2 + entries.count)) + be32(sender) + be32(media)
    for entry in entries { packet += be16(entry.first) + be16(entry.mask) }
    return packet
  }

  /// A picture loss indication (PSFB, FMT 1): `media` should send a keyframe.
  public static func pictureLoss(from sender: UInt32, media: UInt32) -> [UInt8] {
    emptyReport(from: sender) + [0x81, 206] + be16(2) + be32(sender) + be32(media)
  }

  /// A receiver report with no report block.
  private static func emptyReport(from sender: UInt32) -> [UInt8] { [0x80, 201] + be16(1) + be32(sender) }

  private static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
  private static func be32(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
  }
}
