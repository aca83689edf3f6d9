extension CameraCapturer {
  /// Whether the camera can keep capturing while the App is in the background, when allowed
  /// (iOS 16's multitasking camera access). Always false on Linux, which has no such
  /// restriction: the camera captures whether or not the App's window is in front.
  public var isMultitaskingAccessSupported: Bool { false }

  /// iOS 16's multitasking camera access. Always false on Linux, and setting it does nothing:
  /// the camera never stops because the App goes to the background
  /// (see ``isMultitaskingAccessSupported``).
  public var isMultitaskingAccessEnabled: Bool {
    get { false }
    set {}  // Nothing to enable on Linux.
  }
}
