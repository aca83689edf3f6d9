import Foundation
import RevueTestSupport
import Testing

/// Every test is in a tier (``TestTier``): a test without one would run in every selection,
/// the sanitizer run's included, however long it takes.
@Suite(.tier(.unit)) struct TierTests {
  /// In every test file, either every suite carries a tier or every test does. An extension of
  /// a suite declared elsewhere has neither and inherits its suite's.
  @Test func everySuiteOrEveryTestCarriesATier() throws {
    let tests = TestEnvironment.repositoryRoot.appendingPathComponent("Tests")
    let files = try #require(FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil))
      .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    // Lines that begin with the attribute, after others (`@MainActor @Test`).
    let (suite, test) = (try Regex(#"^\s*(@\w+\s+)*@Suite\b"#), try Regex(#"^\s*(@\w+\s+)*@Test\b"#))
    var checked = 0
    for file in files {
      let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
      let (suites, tests) = (lines.filter { $0.contains(suite) }, lines.filter { $0.contains(test) })
      guard !tests.isEmpty else { continue }
      checked += 1
      let tiered = { (lines: [String]) in !lines.isEmpty && lines.allSatisfy { $0.contains(".tier(") } }
      let extendsASuite = suites.isEmpty && lines.contains { $0.hasPrefix("extension ") && $0.contains("Tests {") }
      #expect(
        tiered(suites) || tiered(tests) || extendsASuite,
        "\(file.lastPathComponent): give each suite (or each test) a tier, .tier(.unit|.pipeline|.realtime|.interop)")
    }
    #expect(checked > 50)
  }
}
