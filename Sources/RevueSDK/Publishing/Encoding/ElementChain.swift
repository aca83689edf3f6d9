import GStreamer

/// One element of a send chain as a typed value: its factory, its name, and its properties as
/// the values GStreamer types them, set in order when the element is made (`Element.make`).
/// Changing an element of a chain is changing this value, never a pipeline string.
struct ElementRecipe: Sendable {
  /// The element's factory: `vp8enc`, `rtph264pay`…
  let factory: String
  /// The element's name in its bin; nil lets GStreamer name it.
  var name: String?
  /// The properties, in the order they are set.
  var properties: [(name: String, value: Value)]

  /// An element of `factory`, named `name`, with `properties`.
  init(_ factory: String, name: String? = nil, _ properties: KeyValuePairs<String, Value> = [:]) {
    self.factory = factory
    self.name = name
    self.properties = properties.map { ($0.key, $0.value) }
  }

  /// A `capsfilter` named `name` that lets through `media` with `fields`.
  static func caps(
    _ media: String, _ fields: KeyValuePairs<String, any ValueConvertible>, name: String? = nil
  ) throws(GStreamerError) -> ElementRecipe {
    caps(Caps([try Structure(name: media, fields)]), name: name)
  }

  /// A `capsfilter` named `name` that lets through `caps`.
  static func caps(_ caps: Caps, name: String? = nil) -> ElementRecipe {
    ElementRecipe("capsfilter", name: name, ["caps": .caps(caps)])
  }

  /// A `queue` that hands buffers on from a thread of its own, holding at most `buffers` and
  /// dropping the oldest when full: a slow encoder after it never holds up the thread before it.
  static func leakyQueue(holding buffers: Int) -> ElementRecipe {
    ElementRecipe(
      "queue",
      [
        "max-size-buffers": .int(buffers), "max-size-bytes": .int(0), "max-size-time": .int(0),
        "leaky": .enumeration("downstream"),
      ])
  }

  /// Sets `property` to `value`, after the properties set already (a payloader's `pt`, `ssrc`).
  mutating func set(_ property: String, _ value: Value) { properties.append((property, value)) }

  /// The element, made and configured.
  /// - Throws: ``GStreamerError`` naming the missing element or the property it refused.
  func make() throws(GStreamerError) -> Element {
    let element = try Element.make(factory, name: name)
    for (property, value) in properties { try element.set(property, value) }
    return element
  }

  /// The element in gst-launch syntax, for what takes a description (an RTSP media factory, the
  /// receiver's pipeline): caps and structures quoted, as gst-launch reads them.
  var launchDescription: String {
    let settings = properties.map { property, value in
      switch value {
      case .caps, .structure: "\(property)=\"\(value)\""
      default: "\(property)=\(value)"
      }
    }
    return ([factory] + (name.map { ["name=\($0)"] } ?? []) + settings).joined(separator: " ")
  }
}

/// Elements linked in order: an encoder's part of a send pipeline, a transport's tail, or both.
struct ElementChain: Sendable, ExpressibleByArrayLiteral {
  /// The elements, upstream first.
  var elements: [ElementRecipe]

  /// A chain of `elements`, upstream first.
  init(arrayLiteral elements: ElementRecipe...) { self.elements = elements }

  /// A chain of `elements`, upstream first.
  init(_ elements: [ElementRecipe]) { self.elements = elements }

  /// The chain's last element (its payloader, in an encoder's chain).
  var last: ElementRecipe {
    get { elements[elements.count - 1] }
    set { elements[elements.count - 1] = newValue }
  }

  /// The chain with its last element, the payloader, named `name` and sending `payloadType`.
  func payloading(as name: String, payloadType: Int) -> ElementChain {
    var chain = self
    chain.last.name = name
    chain.last.set("pt", .int(payloadType))
    return chain
  }

  /// `lhs` followed by `rhs`.
  static func + (lhs: ElementChain, rhs: ElementChain) -> ElementChain { ElementChain(lhs.elements + rhs.elements) }

  /// Makes the elements, adds them to `bin` and links them in order; returns them, upstream first.
  /// - Throws: ``GStreamerError`` naming the element that is missing, refused a property or
  ///   could not be linked.
  @discardableResult
  func add(to bin: Bin) throws(GStreamerError) -> [Element] {
    var made: [Element] = []
    for recipe in elements { made.append(try recipe.make()) }
    try bin.add(made)
    for (source, sink) in zip(made, made.dropFirst()) { try source.link(sink) }
    return made
  }

  /// A bin named `name` holding the chain, whose own `sink` and `src` pads are the first
  /// element's sink and the last element's source (where they have one), so that it links as
  /// one element.
  /// - Throws: as ``add(to:)``.
  func bin(named name: String? = nil) throws(GStreamerError) -> Bin {
    let bin = Bin(name: name)
    let made = try add(to: bin)
    if let sink = made.first?.staticPad("sink") { try bin.addGhostPad(named: "sink", for: sink) }
    if let source = made.last?.staticPad("src") { try bin.addGhostPad(named: "src", for: source) }
    return bin
  }

  /// The raw formats the chain takes without converting them: the formats of the caps after its
  /// first `videoconvert` (an encoder chain's input, ``VideoEncoder/rawFormats``); nil for a
  /// chain with no conversion (audio).
  var rawFormats: Set<PixelFormat>? {
    guard let convert = elements.firstIndex(where: { $0.factory == "videoconvert" }),
      let filter = elements[(convert + 1)...].first(where: { $0.factory == "capsfilter" }),
      case .caps(let caps)? = filter.properties.first(where: { $0.name == "caps" })?.value, caps.count > 0,
      let field = caps.structure(at: 0)["format"]
    else { return nil }
    let names: [Value] =
      switch field {
      case .list(let values): values
      default: [field]
      }
    return Set(
      names.compactMap { name in
        guard case .string(let name) = name else { return nil }
        return PixelFormat(gstreamerName: name)
      })
  }

  /// The chain in gst-launch syntax (see ``ElementRecipe/launchDescription``).
  var launchDescription: String { elements.map(\.launchDescription).joined(separator: " ! ") }
}
