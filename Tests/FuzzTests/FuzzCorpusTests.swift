import Foundation
import RevueFuzzTargets
import RevueTestSupport
import Testing

/// The fuzz corpora (`Fuzz/Corpus/TARGET/`) replayed through their targets, as the libFuzzer
/// binary runs them: the seeds, and every input a fuzzer once crashed on (`crash-*`), which
/// must now be refused or taken without a crash.
@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(2))) struct FuzzCorpusTests {
  init() { TestEnvironment.prepare() }

  /// The corpus folder of `target`.
  static func corpus(_ target: FuzzTarget) -> URL {
    TestEnvironment.repositoryRoot.appendingPathComponent("Fuzz/Corpus/\(target.rawValue)")
  }

  /// The files of `target`'s corpus, sorted.
  static func files(_ target: FuzzTarget) throws -> [URL] {
    try FileManager.default.contentsOfDirectory(at: corpus(target), includingPropertiesForKeys: nil)
      .sorted { $0.lastPathComponent < $1.lastPathComponent }
  }

  @Test(arguments: FuzzTarget.allCases)
  func everyCorpusInputRunsWithoutACrash(target: FuzzTarget) throws {
    let files = try Self.files(target)
    #expect(!files.isEmpty, "Fuzz/Corpus/\(target.rawValue) has no seeds")
    var outcomes: [FuzzTarget.Outcome: Int] = [:]
    for file in files { outcomes[target.run(Array(try Data(contentsOf: file))), default: 0] += 1 }
    // The seeds reach past the first check: some are taken whole.
    #expect(outcomes[.accepted, default: 0] > 0, "no seed of \(target.rawValue) is accepted")
  }

  /// The SDPs Revue itself writes (`valid-*.sdp`, copied from `Room.sdp`) are taken; the
  /// configs shipped in `pipelines/` check (but `window-*`, which check only where there is a
  /// display).
  @Test(arguments: [FuzzTarget.sdp, .config])
  func whatRevueWritesIsAccepted(target: FuzzTarget) throws {
    let valid = try Self.files(target).filter { $0.lastPathComponent.hasPrefix("valid-") }
    #expect(!valid.isEmpty)
    for file in valid {
      #expect(target.run(Array(try Data(contentsOf: file))) == .accepted, "\(file.lastPathComponent)")
    }
  }

  /// The inputs kept as what must be refused (`bad-*`: an SDP's malformed payload type, a codec
  /// at another clock rate, a bad key; a config's unknown element) are refused, not taken.
  @Test(arguments: [FuzzTarget.sdp, .config])
  func whatIsBadIsRefused(target: FuzzTarget) throws {
    let bad = try Self.files(target).filter { $0.lastPathComponent.hasPrefix("bad-") }
    #expect(!bad.isEmpty)
    for file in bad {
      #expect(target.run(Array(try Data(contentsOf: file))) == .rejected, "\(file.lastPathComponent)")
    }
  }
}
