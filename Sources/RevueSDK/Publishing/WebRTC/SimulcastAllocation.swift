/// Which simulcast layers fit what the receiver says the path carries (its RTCP REMB estimate,
/// for all the layers together), as libwebrtc allocates its estimate to layers: from the smallest
/// up, each while the layers on so far and it fit; the smallest always, so a receiver's picture
/// never stops. A paused layer comes back only once the estimate has room for it and a tenth
/// more, so an estimate that wavers about a layer's bitrate does not switch it at every report.
enum SimulcastAllocation {
  /// The room a paused layer needs beyond its bitrate to come back.
  static let resumeHeadroom = 1.1

  /// The layers on for `estimate` bits per second: of `bitrates` (the full size first), those
  /// `offered` (the answer took them) that fit, given which are `on` now.
  static func layersOn(bitrates: [Int], offered: [Bool], on: [Bool], estimate: Int) -> [Bool] {
    var result = Array(repeating: false, count: bitrates.count)
    var total = 0.0
    var first = true
    for index in bitrates.indices.reversed() where offered[index] {
      total += Double(bitrates[index])
      let needed = on[index] ? total : total * resumeHeadroom
      guard first || needed <= Double(estimate) else { break }
      result[index] = true
      first = false
    }
    return result
  }
}
