/// The `revue` media node: the entry point parses the command line and runs one subcommand
/// (``Command``).
@main
enum RevueCommand {
  static func main() async { await Command.main() }
}
