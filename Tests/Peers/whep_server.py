#!/usr/bin/python3
"""A WHEP server (the IETF WHEP draft) on aiortc, for Revue's WHEP tests: a media stack other
than Revue's sending H.264 (which the node's own broadcast does not yet send to any viewer) or VP8.
It answers each offer POSTed to /whep with a 320x240 test picture at 30 fps, in the codec asked for
(the others are left out of the offer before aiortc reads it: it sends the first its answer lists),
and silence in Opus; ends a session on DELETE /whep/ID. Written for the tests (it does not
count as a WHEP server others wrote): aiortc is what no one on the team wrote.

    whep_server.py PORT [--codec h264|vp8] [--token T]

--token: a POST without `Authorization: Bearer T` gets 401. Prints `listening PORT` once it serves,
`answered session ID CODEC` and `deleted session ID`. Debian's python3-aiortc (1.4), python3-av,
python3-aiohttp and python3-numpy.
"""
import argparse
import asyncio
import re
import uuid

import numpy
from aiohttp import web
from aiortc import RTCPeerConnection, RTCRtpSender, RTCSessionDescription, VideoStreamTrack
from aiortc.mediastreams import AudioStreamTrack
from av import VideoFrame


def say(line):
    print(line, flush=True)


class Bars(VideoStreamTrack):
    """Eight grey bars that move one step a frame, so that every frame differs."""

    async def recv(self):
        pts, time_base = await self.next_timestamp()
        shift = (pts // 3000) % 320
        image = numpy.zeros((240, 320, 3), numpy.uint8)
        for bar in range(8):
            image[:, bar * 40:(bar + 1) * 40, :] = 30 + bar * 28
        frame = VideoFrame.from_ndarray(numpy.roll(image, shift, axis=1), format="rgb24")
        frame.pts = pts
        frame.time_base = time_base
        return frame


def only(codec, sdp):
    """The offer with its video's other codecs (and their retransmissions) left out: aiortc 1.4
    sends the first codec its answer lists, whatever the transceiver's preferences."""
    names = dict(re.findall(r"^a=rtpmap:(\d+) ([^/\s]+)", sdp, re.M))
    apt = dict(re.findall(r"^a=fmtp:(\d+) apt=(\d+)", sdp, re.M))
    dropped = {pt for pt, name in names.items() if name.upper() in ("VP8", "H264", "VP9", "AV1")
               and name.upper() != codec.upper()}
    dropped |= {pt for pt, main in apt.items() if main in dropped}
    lines = []
    for line in sdp.splitlines():
        if line.startswith("m=video"):
            fields = line.split(" ")
            line = " ".join(fields[:3] + [pt for pt in fields[3:] if pt not in dropped])
        found = re.match(r"^a=(rtpmap|fmtp|rtcp-fb):(\d+)", line)
        if found and found.group(2) in dropped:
            continue
        lines.append(line)
    return "\r\n".join(lines) + "\r\n"


def one_ice_identity(sdp):
    """aiortc 1.4 gives each bundled media section an ICE user fragment and password of its own,
    which webrtcbin (as libwebrtc) refuses: the first section's go to all."""
    first = {}
    for name in ("a=ice-ufrag:", "a=ice-pwd:"):
        found = re.search("^" + re.escape(name) + "(.*)$", sdp, re.M)
        if found:
            first[name] = found.group(1).strip()
    lines = []
    for line in sdp.splitlines():
        for name, value in first.items():
            if line.startswith(name):
                line = name + value
        lines.append(line)
    return "\r\n".join(lines) + "\r\n"


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--codec", default="h264", choices=["h264", "vp8"])
    parser.add_argument("--token")
    args = parser.parse_args()
    sessions = {}
    mime = {"h264": "video/H264", "vp8": "video/VP8"}[args.codec]

    async def post(request):
        if args.token and request.headers.get("Authorization") != f"Bearer {args.token}":
            return web.Response(status=401, text="wrong token\n")
        offer = only(args.codec, await request.text())
        pc = RTCPeerConnection()
        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        for transceiver in pc.getTransceivers():
            if transceiver.kind == "video":
                pc.addTrack(Bars())
                codecs = RTCRtpSender.getCapabilities("video").codecs
                transceiver.setCodecPreferences([c for c in codecs if c.mimeType in (mime, "video/rtx")])
            elif transceiver.kind == "audio":
                pc.addTrack(AudioStreamTrack())
        await pc.setLocalDescription(await pc.createAnswer())
        session = uuid.uuid4().hex
        sessions[session] = pc
        say(f"answered session {session} {args.codec}")
        return web.Response(
            status=201, content_type="application/sdp", text=one_ice_identity(pc.localDescription.sdp),
            headers={"Location": f"/whep/{session}"})

    async def delete(request):
        pc = sessions.pop(request.match_info["session"], None)
        if pc is None:
            return web.Response(status=404, text="no such session\n")
        await pc.close()
        say(f"deleted session {request.match_info['session']}")
        return web.Response(status=200)

    app = web.Application()
    app.add_routes([web.post("/whep", post), web.delete("/whep/{session}", delete)])
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    say(f"listening {args.port}")
    await asyncio.Event().wait()


asyncio.run(main())
