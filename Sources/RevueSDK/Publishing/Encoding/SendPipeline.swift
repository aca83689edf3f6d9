import GStreamer

/// The media half of every send pipeline, built the same way for every transport that owns its
/// pipeline (an RTP publication, a WHIP session; an RTSP media is built by gst-rtsp-server from
/// the same chains written as a description):
///
///     appsrc ! encoder chain ! payloader …                            (one branch)
///     appsrc ! tee ! per branch: leaky queue ! encoder chain ! …      (simulcast layers)
///
/// The `appsrc` is a ``SourceFeed``'s (capture time re-based into the pipeline's running time);
/// each branch is a bin of its own (its elements' names are its own: every branch has its
/// `encoder`), whose `src` pad the transport links to its tail (`rtpbin`, `webrtcbin`,
/// `rtpfunnel`). The encoders never hold up the capture thread: with one branch the `appsrc`'s
/// own queue and thread decouple them, with several each branch's queue does; each holds at
/// most ``queuedFrames`` frames, the oldest dropped when full.
extension MediaPipeline {
  /// Frames queued before an encoder at most; a frame beyond drops the oldest.
  static let queuedFrames = 2

  /// Adds a track's media: `feed`'s source (``SourceFeed/source(named:audio:)``) and one branch
  /// per chain, each a bin with its name; returns the branches, in order. The feed feeds the
  /// source from now on (it drops what comes before the pipeline plays), and knows the raw
  /// formats every branch's encoder takes as they come (``ElementChain/rawFormats``).
  /// - Throws: ``GStreamerError`` naming the element that is missing, refused a setting, or
  ///   could not be linked.
  func addMedia(
    from feed: SourceFeed, source: ElementRecipe, branches: [(name: String, chain: ElementChain)]
  ) throws(GStreamerError) -> [Bin] {
    let made = try ElementChain([source]).add(to: pipeline)
    guard let appsrc = made.first as? AppSrc else {
      throw .wrongElementType(element: source.name ?? source.factory, expected: "AppSrc", actual: source.factory)
    }
    var split: Element = appsrc
    if branches.count > 1 {
      split = try ElementRecipe("tee", name: "\(appsrc.name)-split").make()
      try pipeline.add(split)
      try appsrc.link(split)
    }
    var bins: [Bin] = []
    for (name, chain) in branches {
      let bin = try (branches.count > 1 ? [.leakyQueue(holding: Self.queuedFrames)] + chain : chain).bin(named: name)
      try pipeline.add(bin)
      try split.link(bin)
      bins.append(bin)
    }
    let formats = branches.compactMap(\.chain.rawFormats)
    feed.rawFormats = formats.first.map { first in formats.dropFirst().reduce(first) { $0.intersection($1) } }
    feed.attach(appsrc)
    return bins
  }
}
