#!/usr/bin/python3
"""A WHEP player (the IETF WHEP draft) on aiortc, a WebRTC stack no one on the Revue team wrote,
for Revue's WebRTC broadcast tests: it POSTs a receive-only offer (video, and audio unless
--no-audio) to URL, decodes what comes and prints, on standard output:

    status CODE              the POST's status (and `reason TEXT`, the body's first line, when
                             it is not 201)
    location URL             the session's URL (201)
    frames N                 every 10 video frames decoded
    audio frames N           every 50 audio frames decoded (20 ms each)
    size WxH                 the decoded picture's size, at the first frame and at each change
    fps N second S           with --fps: the video frames decoded in each second S of media
    done frames F audio A    after --seconds of media, before it DELETEs the session (unless
                             --no-delete, which leaves it as a closed tab would)
    deleted CODE             the DELETE's status

    whep_viewer.py URL [--token T] [--seconds S] [--no-audio] [--no-delete] [--body-file F]
                       [--drop-percent P] [--fps]

--body-file: POSTs that file as the offer instead (for malformed offers). --drop-percent: aiortc's
receivers drop P% of the video packets that arrive (seeded), as whip_endpoint.py's do, and the
`done` line gains `lost N nacked M retransmitted R`. Exits 0 once done, 1
when the POST is not 201. Debian's python3-aiortc (1.4) and python3-aiohttp.
"""
import argparse
import asyncio
import os
import sys

import aiohttp
from aiortc import RTCPeerConnection, RTCSessionDescription

from whip_endpoint import LOSS, lose


def say(line):
    print(line, flush=True)


def one_ice_identity(sdp):
    """aiortc 1.4 gives each bundled media section an ICE user fragment and password of its
    own, which JSEP forbids and webrtcbin (as libwebrtc) refuses; a browser's offer has one.
    The first section's go to all: aiortc sends everything on the first's transport once the
    answer bundles."""
    lines = sdp.splitlines()
    first = {}
    for line in lines:
        for name in ("a=ice-ufrag:", "a=ice-pwd:"):
            if line.startswith(name) and name not in first:
                first[name] = line
    fixed = []
    for line in lines:
        for name, value in first.items():
            if line.startswith(name):
                line = value
        fixed.append(line)
    return "\r\n".join(fixed) + "\r\n"


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--token")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--no-audio", action="store_true")
    parser.add_argument("--no-delete", action="store_true")
    parser.add_argument("--body-file")
    parser.add_argument("--drop-percent", type=float)
    parser.add_argument("--fps", action="store_true")
    options = parser.parse_args()
    if options.drop_percent:
        lose(options.drop_percent)
    headers = {"Content-Type": "application/sdp"}
    if options.token:
        headers["Authorization"] = "Bearer " + options.token

    pc = RTCPeerConnection()
    counts = {"video": 0, "audio": 0}
    size = [None]

    async def consume(track):
        while True:
            try:
                frame = await track.recv()
            except Exception:
                return
            counts[track.kind] += 1
            if track.kind == "video" and (frame.width, frame.height) != size[0]:
                size[0] = (frame.width, frame.height)
                say(f"size {frame.width}x{frame.height}")
            if track.kind == "video" and counts["video"] % 10 == 0:
                say(f"frames {counts['video']}")
            if track.kind == "audio" and counts["audio"] % 50 == 0:
                say(f"audio frames {counts['audio']}")

    @pc.on("track")
    def on_track(track):
        asyncio.ensure_future(consume(track))

    pc.addTransceiver("video", direction="recvonly")
    if not options.no_audio:
        pc.addTransceiver("audio", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    body = one_ice_identity(pc.localDescription.sdp)
    if options.body_file:
        with open(options.body_file, "rb") as file:
            body = file.read()
    async with aiohttp.ClientSession() as session:
        async with session.post(options.url, data=body, headers=headers) as response:
            say(f"status {response.status}")
            text = await response.text()
            if response.status != 201:
                say("reason " + (text.splitlines() or [""])[0])
                await pc.close()
                return 1
            location = response.headers.get("Location", "")
            resource = str(response.url.join(aiohttp.client.URL(location)))
            say(f"location {resource}")
        await pc.setRemoteDescription(RTCSessionDescription(sdp=text, type="answer"))
        if options.fps:
            # Each second's frames, from the first frame on (10 s at most waited for).
            loop = asyncio.get_running_loop()
            waited = loop.time() + 10
            while counts["video"] == 0 and loop.time() < waited:
                await asyncio.sleep(0.01)
            start = loop.time()
            last = 0
            for second in range(1, int(options.seconds) + 1):
                await asyncio.sleep(max(0, start + second - loop.time()))
                say(f"fps {counts['video'] - last} second {second}")
                last = counts["video"]
        else:
            await asyncio.sleep(options.seconds)
        losses = f" lost {LOSS['lost']} nacked {LOSS['nacked']} retransmitted {LOSS['retransmitted']}"
        say(f"done frames {counts['video']} audio {counts['audio']}" + (losses if options.drop_percent else ""))
        if options.no_delete:
            # As a tab that closes: the peer goes silent at once, no DELETE, nothing closed.
            sys.stdout.flush()
            os._exit(0)
        auth = {"Authorization": headers["Authorization"]} if options.token else {}
        async with session.delete(resource, headers=auth) as response:
            say(f"deleted {response.status}")
    await pc.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
