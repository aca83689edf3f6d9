import RevueTestSupport
import Testing

/// Every suite of the GStreamer layer, run one test at a time. The lifetime tests, which count
/// the GStreamer objects and threads of the whole process, also need the process to themselves
/// (``ProcessGate``), not only this suite.
@Suite(.serialized, .sharedProcess) struct GStreamerSuite {}
