import Testing

/// Every suite of the GStreamer layer, run one test at a time so that the object and thread
/// counts of the lifetime tests see only their own work.
@Suite(.serialized) struct GStreamerSuite {}
