/// Which Debian package provides a GStreamer element, for error messages that say what to install.
///
/// GStreamer's registry cannot say where a missing element would come from, so the project
/// ships a table made from Debian's plugin packages (`scripts/generate-plugin-packages.sh`).
public enum PluginPackages {
  /// Debian package by element factory name, parsed once from ``table``.
  private static let packageByElement: [String: String] = {
    var result: [String: String] = [:]
    for line in table.split(separator: "\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      let package = String(line[..<colon])
      for element in line[line.index(after: colon)...].split(separator: " ") {
        result[String(element), default: package] = package
      }
    }
    return result
  }()

  /// The Debian package that provides this element factory, or nil when the table does not know it.
  public static func package(providing factory: String) -> String? {
    packageByElement[factory]
  }
}
