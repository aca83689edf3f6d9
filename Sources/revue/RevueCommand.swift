import CMalloc

/// The `revue` media node: the entry point parses the command line and runs one subcommand
/// (``Command``).
@main
enum RevueCommand {
  static func main() async {
    // Before main, glibc's malloc was held to one arena (Sources/CMalloc/arenas.c): serving
    // session after session, each with short-lived streaming threads, the node keeps its memory
    // flat. Read here so that the constructor is linked in.
    _ = revue_malloc_arenas()
    await Command.main()
  }
}
