import Foundation
import RevueFuzzTargets

/// Says what is wrong on standard error and exits with status 2.
func failure(_ message: String) -> Never {
  FileHandle.standardError.write(Data("revue-fuzz: \(message)\n".utf8))
  exit(2)
}

#if FUZZING
  // The libFuzzer binary (`swift build -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING`,
  // as scripts/fuzz.sh builds it): libFuzzer owns `main` and the arguments, so the target comes
  // from the environment, REVUE_FUZZ_TARGET=sdp|config|pixel-buffer|audio-buffer.

  /// The target this process fuzzes, read once.
  private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["REVUE_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
      let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
      failure("set REVUE_FUZZ_TARGET to one of \(names), not '\(name)'")
    }
    return target
  }()

  /// libFuzzer's entry point: one input.
  @_cdecl("LLVMFuzzerTestOneInput")
  public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    target.run(bytes)
    return 0
  }

  /// libFuzzer's driver (`int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*)(const uint8_t *, size_t))`).
  @_silgen_name("LLVMFuzzerRunDriver")
  func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
  ) -> CInt

  /// The process's `main`: SwiftPM links an executable's `main` to `MODULE_main` (here
  /// `revue_fuzz_main`), so this hands the arguments to libFuzzer's driver instead of libFuzzer's
  /// own `main`.
  @_cdecl("revue_fuzz_main")
  public func fuzzerMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
  ) -> CInt {
    _ = target
    var argc = argc
    var argv = argv
    return runFuzzerDriver(&argc, &argv, fuzzOneInput)
  }
#else
  /// `revue-fuzz TARGET PATH…`: runs files (or every file in a folder) through a fuzz target, as
  /// libFuzzer does, to reproduce a finding or replay a corpus without the fuzzer.
  @main
  enum ReplayMain {
    static func main() {
      let arguments = Array(CommandLine.arguments.dropFirst())
      guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
        failure("usage: revue-fuzz \(names) FILE|FOLDER…")
      }
      var counts: [FuzzTarget.Outcome: Int] = [:]
      for path in arguments.dropFirst() {
        for file in files(at: path) {
          guard let data = FileManager.default.contents(atPath: file) else {
            failure("cannot read \(file)")
          }
          counts[target.run(Array(data)), default: 0] += 1
        }
      }
      print("\(name): \(counts[.accepted, default: 0]) accepted, \(counts[.rejected, default: 0]) rejected")
    }

    /// `path` itself, or the files in it (sorted) when it is a folder.
    static func files(at path: String) -> [String] {
      var isFolder: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
        return [path]
      }
      let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
      return names.sorted().map { "\(path)/\($0)" }
    }
  }
#endif
