/// An error of a custom track, with VideoSDK's code and name.
public struct VideoSDKError: Error, Sendable, Hashable, CustomStringConvertible {
  /// VideoSDK's codes of the custom tracks; the case name is the error's ``VideoSDKError/name``.
  public enum Code: Int, Sendable, Hashable, CaseIterable {
    /// The camera may not be used. Linux asks no permission: RevueSDK reports it when the
    /// camera's device refuses access (its file mode, a sandbox).
    case ERROR_CAMERA_ACCESS_DENIED_OR_DISMISSED = 3017
    /// The microphone may not be used (as for the camera, no prompt on Linux).
    case ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED = 3018
    /// There is no camera.
    case ERROR_CAMERA_NOT_FOUND = 3021
    /// There is no microphone.
    case ERROR_MICROPHONE_NOT_FOUND = 3022
    /// Another application uses the camera.
    case ERROR_CAMERA_IN_USE = 3023
    /// Another application uses the microphone.
    case ERROR_MICROPHONE_IN_USE = 3024
    /// The camera could not be opened.
    case ERROR_VIDEO_SOURCE_INITIATION_FAILED = 3026
    /// A camera track given to a room had ended.
    case ERROR_CUSTOM_VIDEO_TRACK_ENDED = 3031
    /// A microphone track given to a room had ended.
    case ERROR_CUSTOM_AUDIO_TRACK_ENDED = 3032
    /// No device matches the `cameraId` or `microphoneId` given.
    case ERROR_INVALID_CUSTOM_TRACK_CONFIG = 3071
  }

  /// VideoSDK's numeric code, such as 3021.
  public let code: Int
  /// What happened, in one line.
  public let message: String

  /// An error of `code`.
  public init(_ code: Code, _ message: String) {
    self.code = code.rawValue
    self.message = message
  }

  /// RevueSDK's device error under its VideoSDK code (the codes are the same numbers).
  public init(_ error: DeviceError) {
    code = error.code.rawValue
    message = error.message
  }

  /// VideoSDK's name of the code, such as `ERROR_CAMERA_NOT_FOUND`.
  public var name: String { Code(rawValue: code).map { "\($0)" } ?? "ERROR_\(code)" }

  /// `NAME (code): message`.
  public var description: String { "\(name) (\(code)): \(message)" }
}
