import Foundation

/// The display a window can open on: an X11 server (`DISPLAY`) or a Wayland compositor
/// (`WAYLAND_DISPLAY`), as the environment names them.
enum Display {
  /// The elements that draw into a window of their own, and need a display to start.
  /// (`autovideosink` with no display crashes GStreamer 1.22's process, as `gst-launch-1.0`
  /// shows: a config that names one is refused before it runs.)
  static let windowSinks: Set<String> = [
    "autovideosink", "ximagesink", "xvimagesink", "glimagesink", "waylandsink", "gtksink", "gtkglsink",
    "gtkwaylandsink", "clutterautovideosink", "sdlvideosink", "qmlglsink",
  ]

  /// The display found, as `X11 :99` or `Wayland wayland-0`; nil when there is none: no
  /// variable set, or a local one whose socket is not there.
  static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
    if let display = environment["DISPLAY"], !display.isEmpty {
      // `:N` or `:N.S` is the local socket /tmp/.X11-unix/XN; `host:N` is a remote server.
      guard display.hasPrefix(":") else { return display.contains(":") ? "X11 \(display)" : nil }
      let number = display.dropFirst().prefix { $0.isNumber }
      if FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") { return "X11 \(display)" }
    }
    if let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty {
      let path = wayland.hasPrefix("/") ? wayland : "\(environment["XDG_RUNTIME_DIR"] ?? "")/\(wayland)"
      if FileManager.default.fileExists(atPath: path) { return "Wayland \(wayland)" }
    }
    return nil
  }

  /// The X11 server of `display` (`:1`), or of `DISPLAY` when nil, as ``current(environment:)``
  /// finds it: nil when there is none. (`ximagesrc` and `ximagesink` draw on X11 only.)
  static func x11(_ display: String?) -> String? {
    current(environment: x11Environment(display))
  }

  /// The Wayland socket a window of `display` opens on, X11 first: `display` when it names a
  /// Wayland socket (no `:` in it: `wayland-1`, in `XDG_RUNTIME_DIR`, or a path), or with no
  /// `display`, `WAYLAND_DISPLAY`'s when there is no X11 server; the socket's path when it is
  /// there, else nil.
  static func wayland(
    _ display: String?, environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> String? {
    guard
      let name = display ?? (current(environment: x11Environment(nil)) == nil ? environment["WAYLAND_DISPLAY"] : nil),
      !name.isEmpty, !name.contains(":")
    else { return nil }
    let path = name.hasPrefix("/") ? name : "\(environment["XDG_RUNTIME_DIR"] ?? "")/\(name)"
    return FileManager.default.fileExists(atPath: path) ? path : nil
  }

  /// The process's environment with `display` as `DISPLAY` (when given) and no Wayland display.
  static func x11Environment(_ display: String?) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    if let display { environment["DISPLAY"] = display }
    environment["WAYLAND_DISPLAY"] = nil
    return environment
  }

  /// Why there is no display, for messages.
  static func missing(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
    let named = ["DISPLAY", "WAYLAND_DISPLAY"].compactMap { name in
      environment[name].flatMap { $0.isEmpty ? nil : "\(name)=\($0) has no server" }
    }
    return named.isEmpty ? "neither DISPLAY nor WAYLAND_DISPLAY is set" : named.joined(separator: ", ")
  }
}
