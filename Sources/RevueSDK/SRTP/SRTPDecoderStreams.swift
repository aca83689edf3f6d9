import Foundation
import GStreamer
import Synchronization

extension SRTPKey {
  /// The streams an `srtpdec` made, to keep what it holds bounded. The decoder makes a stream
  /// for every new SSRC it meets, a libsrtp context with its keys derived, and a flood of
  /// made-up packets with an SSRC each would grow the receiver without bound and spend its time
  /// deriving keys: GStreamer 1.22's `remove-key` frees no libsrtp stream (it looks it up by an
  /// SSRC in the wrong byte order), and Debian's libsrtp, built on NSS, keeps some 22 kB of key
  /// material per stream made until the process ends, even once the decoder is cleared.
  ///
  /// So a packet of an SSRC the decoder has no stream for goes in at once from an address an
  /// authenticated packet came from (the sender's retransmissions, a restarted sender), and from
  /// anywhere else only while nothing authenticated for ``hold``: then one such SSRC goes in per
  /// ``hold``, and one more whose packet follows an earlier one of its SSRC in sequence (so that
  /// a made-up flood does not starve a sender's first packets). And once ``limit`` streams were
  /// made that authenticated nothing, the decoder is cleared (`Element.clearKeys()`): the
  /// streams that did authenticate are made again at their next packet with the rollover
  /// counter kept here, so that their decryption goes on.
  ///
  /// A flood of new SSRCs thus makes no stream while a sender is live, and at most 8 a second
  /// while none is (some 180 kB a second that NSS keeps).
  ///
  /// A receiver that starts after the sender's sequence number wrapped (a payloader starts at a
  /// random one: after some 65,000 packets, six minutes of 720p, it is certain) makes the stream
  /// with rollover counter 0, and every packet then fails authentication, as with a wrong key.
  /// The sender's SRTCP is indexed on its own and authenticates: its sender report says how
  /// many packets went out, which with a packet's sequence number gives the counter (RFC 3711,
  /// 3.3.1: the index is the sequence number the payloader started at plus the packets sent).
  /// So once ``failuresBeforeRecovery`` packets of an SSRC whose sender report authenticated
  /// failed in a row, the decoder is cleared and the stream made again with that counter, or,
  /// when it fails too (a packet sent since the report, across a wrap), the one after and the one
  /// before it.
  final class DecoderStreams: Sendable {
    /// How many streams that authenticated nothing the decoder may hold.
    static let limit = 64
    /// How often an SSRC with no stream is let in from a stranger.
    static let hold = SenderLatch.hold
    /// Packets of an SSRC with an authenticated sender report that fail authentication in a row
    /// before the stream is made again with another rollover counter.
    static let failuresBeforeRecovery = 8

    private struct State {
      /// Streams made that authenticated nothing yet.
      var unproven: Set<UInt32> = []
      /// Streams made since the decoder was cleared that authenticated nothing.
      var wasted = 0
      /// Streams that authenticated: their latest sequence number (nil: only their SRTCP did) and
      /// rollover counter.
      var proven: [UInt32: (sequence: UInt16?, roc: UInt32)] = [:]
      /// Packets sent, by the latest authenticated sender report of each SSRC.
      var packetsSent: [UInt32: UInt32] = [:]
      /// SSRCs with a sender report whose packets fail authentication: how many in a row, the
      /// latest sequence number, and the rollover counters tried so far.
      var failing: [UInt32: (count: Int, sequence: UInt16, tried: [UInt32])] = [:]
      /// The rollover counter a stream is made with next, where a recovery chose one.
      var recovered: [UInt32: UInt32] = [:]
      /// Whether the decoder should be cleared at the next packet to make a stream again.
      var remake = false
      /// Where authenticated packets came from (a few: the sender's sockets).
      var senders: [SenderLatch.Address] = []
      /// Which recent SSRCs with no stream have packets in sequence.
      var recent = SequenceMemory()
      /// When a stranger's new SSRC was let in: any, and one in sequence.
      var letIn: (any: ContinuousClock.Instant?, inSequence: ContinuousClock.Instant?)
      /// When the latest packet passed authentication.
      var heard: ContinuousClock.Instant?
      var dropped = 0
      var cleared = 0
    }
    private let state = Mutex(State())

    /// Packets dropped before the decoder.
    var dropped: Int { state.withLock { $0.dropped } }
    /// How many times the decoder was cleared.
    var cleared: Int { state.withLock { $0.cleared } }

    /// Whether a packet of `ssrc` (with `sequence`, for RTP) from `source` goes on to the
    /// decoder at `now`.
    func admit(ssrc: UInt32, sequence: UInt16?, from source: SenderLatch.Address?, at now: ContinuousClock.Instant)
      -> Bool
    {
      state.withLock { state in
        if let sequence, state.packetsSent[ssrc] != nil, state.proven[ssrc]?.sequence == nil {
          recover(ssrc, sequence: sequence, in: &state)
        }
        if state.proven[ssrc] != nil || state.unproven.contains(ssrc) { return true }
        if let source, state.senders.contains(where: { $0 == source }) { return true }
        if let heard = state.heard, now - heard < Self.hold {
          state.dropped += 1
          return false
        }
        let inSequence = sequence.map { state.recent.follows(ssrc: ssrc, sequence: $0, from: nil) } ?? false
        if state.letIn.any.map({ now - $0 >= Self.hold }) ?? true {
          state.letIn.any = now
          return true
        }
        if inSequence, state.letIn.inSequence.map({ now - $0 >= Self.hold }) ?? true {
          state.letIn.inSequence = now
          return true
        }
        state.dropped += 1
        return false
      }
    }

    /// Counts a packet of `ssrc` that goes to the decoder while none of its packets has
    /// authenticated but its SRTCP has; after ``failuresBeforeRecovery`` in a row, chooses the
    /// next rollover counter to try, if any is left, and has the decoder cleared.
    private func recover(_ ssrc: UInt32, sequence: UInt16, in state: inout State) {
      guard let sent = state.packetsSent[ssrc] else { return }
      var failing = state.failing[ssrc] ?? (0, sequence, [])
      failing.count += 1
      failing.sequence = sequence
      // Each try counts its failures anew: the decoder sees the packets that come after the clear.
      if failing.count > Self.failuresBeforeRecovery,
        let next = Self.rolloverCounters(packetsSent: sent, sequence: sequence).first(where: {
          !failing.tried.contains($0) && $0 != (state.recovered[ssrc] ?? 0)
        })
      {
        failing.tried.append(state.recovered[ssrc] ?? 0)
        failing.count = 0
        state.recovered[ssrc] = next
        state.remake = true
        RevueLog.log(.info, "SRTP", "SSRC \(ssrc) fails authentication: trying rollover counter \(next)")
      }
      state.failing[ssrc] = failing
    }

    /// The rollover counters a sender that reported `packetsSent` is likely at when its packet
    /// `sequence` comes, most likely first: its index is at least the packets sent (the
    /// payloader started at 0 or later) and less than 65,536 more, and ends in `sequence`.
    static func rolloverCounters(packetsSent: UInt32, sequence: UInt16) -> [UInt32] {
      let sent = UInt64(packetsSent)
      let index = sent + UInt64(sequence &- UInt16(truncatingIfNeeded: sent))
      let roc = UInt32(truncatingIfNeeded: index >> 16)
      return [roc, roc &+ 1] + (roc > 0 ? [roc - 1] : [])
    }

    /// The latest authenticated sender report of `ssrc` says it sent `packetsSent` packets.
    func reported(_ ssrc: UInt32, packetsSent: UInt32) {
      state.withLock { state in
        guard state.proven[ssrc] != nil else { return }
        state.packetsSent[ssrc] = packetsSent
      }
    }

    /// The decoder makes a stream for `ssrc`: returns its rollover counter when it is one that
    /// authenticated before the decoder was cleared, or one a recovery chose.
    func keyed(_ ssrc: UInt32) -> UInt32? {
      state.withLock { state in
        if let roc = state.recovered[ssrc], state.proven[ssrc]?.sequence == nil { return roc }
        if let proven = state.proven[ssrc] { return proven.roc }
        if state.unproven.insert(ssrc).inserted { state.wasted += 1 }
        return nil
      }
    }

    /// A packet of `ssrc` (with `sequence`, for RTP) from `source` passed authentication at
    /// `now`.
    func authenticated(
      _ ssrc: UInt32, sequence: UInt16?, from source: SenderLatch.Address?, at now: ContinuousClock.Instant
    ) {
      state.withLock { state in
        state.heard = now
        if state.unproven.remove(ssrc) != nil { state.wasted -= 1 }
        if let sequence {
          // The rollover counter goes up when the sequence number wraps, not when a late
          // packet from before the wrap comes.
          // A stream's first authenticated packet has the counter it was made with.
          let previous = state.proven[ssrc]?.sequence ?? sequence
          var roc = state.proven[ssrc]?.sequence == nil ? (state.recovered[ssrc] ?? 0) : state.proven[ssrc]!.roc
          if sequence < 0x4000 && previous > 0xC000 { roc &+= 1 }
          state.proven[ssrc] = (sequence &- previous < 0x8000 ? sequence : previous, roc)
          state.failing[ssrc] = nil
        } else if state.proven[ssrc] == nil {
          state.proven[ssrc] = (nil, 0)
        }
        if let source, !state.senders.contains(where: { $0 == source }) {
          // The latest few: a sender restarted on a new socket many times adds one each time.
          state.senders = state.senders.suffix(3) + [source]
        }
      }
    }

    /// Why the decoder should be cleared now, if it should: a stream is to be made again with
    /// another rollover counter, or it holds ``limit`` streams that authenticated nothing (the
    /// count starts again).
    func clearing() -> String? {
      state.withLock { state in
        if state.remake {
          state.remake = false
          return "a stream made again with another rollover counter"
        }
        guard state.wasted >= Self.limit else { return nil }
        (state.wasted, state.unproven) = (0, [])
        state.cleared += 1
        return "made-up SSRCs"
      }
    }
  }
}
