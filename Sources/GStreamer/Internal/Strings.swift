internal import CGStreamer

/// The strings of a NULL-terminated `gchar**` that the caller owns, which this frees.
func takeStrings(_ strings: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
  guard let strings else { return [] }
  defer { g_strfreev(strings) }
  var result: [String] = []
  var index = 0
  while let string = strings[index] {
    result.append(String(cString: string))
    index += 1
  }
  return result
}
