import Foundation
import RevueProcess
import Testing

/// A self-signed TLS certificate for 127.0.0.1 (and `localhost`), made by `openssl req` in a
/// new temporary directory: a test server's certificate, and the private certificate authority
/// a client must be told to trust (it is in no system's trust).
public struct TestCertificate: Sendable {
  /// The certificate, PEM: the server's, and the authority to trust.
  public let certificate: URL
  /// Its private key, PEM.
  public let key: URL

  /// Makes a certificate valid for a day, within 20 s.
  public static func make() async throws -> TestCertificate {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("revue-tls-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let made = TestCertificate(
      certificate: directory.appendingPathComponent("certificate.pem"), key: directory.appendingPathComponent("key.pem")
    )
    let exit = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/openssl"),
      [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
        "-subj", "/CN=Revue test authority", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout", made.key.path, "-out", made.certificate.path,
      ], within: 20)
    guard exit.status == 0 else { throw DeadlineExceeded("openssl req failed: \(exit.error)") }
    return made
  }

  /// Removes the directory of the files.
  public func remove() {
    try? FileManager.default.removeItem(at: certificate.deletingLastPathComponent())
  }
}
