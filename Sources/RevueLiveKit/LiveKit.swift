// A port of code written against LiveKit's Swift SDK (seed 004) changes its imports and Apple
// types only: RevueSDK's types (tracks, capturers, devices, renderers) come with this module.
@_exported import RevueSDK

// What this module adds are the names seed 004 spells differently from RevueSDK (seed 000):
//
// - ``VideoProcessor`` takes and returns a ``VideoFrame`` (RevueSDK's takes a `PixelBuffer`). In
//   a file that imports only RevueLiveKit, `VideoProcessor` is this module's; RevueSDK's is
//   `RevueSDK.VideoProcessor` there.
// - ``LocalVideoTrack/createCameraTrack(name:options:processor:)`` with such a processor.
// - ``ValueOrAbsent`` and ``CameraCaptureOptions/copyWith(deviceType:device:position:preferredFormat:dimensions:fps:)``.
// - RevueSDK's ``CaptureDevice/DeviceType`` (AVFoundation's `AVCaptureDevice.DeviceType`) chosen with
//   ``CameraCaptureOptions/init(deviceType:device:position:preferredFormat:dimensions:fps:)``.
//
// Everything runs on RevueSDK's camera: there is no second capture path.
