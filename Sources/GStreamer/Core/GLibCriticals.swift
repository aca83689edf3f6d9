internal import CGStreamer
import Synchronization

/// GLib's criticals (a `g_return_if_fail` check that failed in GLib, GStreamer or a plugin):
/// each is a bug caught at run time, and a burst of them is a thread spinning on one. Counted
/// from ``startCounting()`` on, process-wide; GLib still prints each as before.
public enum GLibCriticals {
  private static let counted = Atomic(0)
  private static let started = Mutex(false)
  /// The first ``keptMessages`` criticals' texts.
  private static let kept = Mutex<[String]>([])

  /// How many criticals' texts are kept (a burst of millions keeps its first ones).
  public static let keptMessages = 1000

  /// Starts counting; once is enough, later calls do nothing. It takes GLib's default log
  /// handler (the one of every domain without a handler of its own), which hands each message
  /// on to GLib's own printing.
  public static func startCounting() {
    started.withLock { started in
      guard !started else { return }
      started = true
      let handler: GLogFunc = { domain, level, message, _ in
        if level.rawValue & G_LOG_LEVEL_CRITICAL.rawValue != 0 {
          let text = message.map { String(cString: $0) } ?? ""
          GLibCriticals.kept.withLock { kept in
            if kept.count < GLibCriticals.keptMessages { kept.append(text) }
          }
          GLibCriticals.counted.wrappingAdd(1, ordering: .relaxed)
        }
        g_log_default_handler(domain, level, message, nil)
      }
      _ = g_log_set_default_handler(handler, nil)
    }
  }

  /// The criticals logged since counting started.
  public static var count: Int { counted.load(ordering: .relaxed) }

  /// The texts of the criticals logged after the first `count` (a ``count`` read earlier), as
  /// far as ``keptMessages`` go.
  public static func messages(after count: Int) -> [String] {
    kept.withLock { Array($0.dropFirst(count)) }
  }
}
