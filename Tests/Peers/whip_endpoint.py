#!/usr/bin/python3
"""A WHIP endpoint (RFC 9725) on aiortc, a WebRTC stack no one on the Revue team wrote, for
Revue's WHIP tests: it answers each offer POSTed to /whip/NAME, decodes the video and audio it
receives, printing `frames N` (every 10 video frames) and `audio frames N` (every 50 audio
frames, 20 ms each) on standard output, and `idle frames N` once video stops coming for half a
second, and ends a session on DELETE. Each video line also says `longest-gap G`: the longest wait
between two decoded frames so far, in milliseconds (a freeze).

    whip_endpoint.py PORT [--token T] [--status CODE] [--malformed-answer] [--unreachable]
                          [--close-after-30-frames] [--location-origin ORIGIN] [--drop-percent P]
                          [--address A] [--fps] [--sync] [--tls CERTIFICATE KEY]

--token: a POST without `Authorization: Bearer T` gets 401. --status: every POST gets CODE.
--malformed-answer: 201 with a body that is no SDP. --unreachable: a real answer whose ICE
candidates point nowhere (a port nothing listens on), its peer closed, so ICE never connects.
--close-after-30-frames: the endpoint closes a session's peer connection on its own once it has
decoded 30 video frames, printing `closed session S` (a DELETE of it is still answered).
--location-origin: the session's URL (`Location`) is `ORIGIN/resource/S?sig=secret-S`, on another
origin (where this endpoint is not: its DELETE goes there).
--drop-percent: aiortc's receivers drop P% of the video packets that arrive (seeded), as a lossy
path would, before anything reads them: aiortc asks for them again (RTCP NACK) and takes the
retransmissions (RTX) the offer announces; it prints `lost N nacked M retransmitted R` with the
frame counts (packets dropped, packets it asked for, retransmissions that came).
--address: the address to serve on (127.0.0.1 by default; a network namespace's own).
--fps: also prints `fps N second S` for each second of video from the first frame (N frames
decoded in second S; 0 for a second with none).
--sync: finds the sync signal's onsets in what it decodes and prints each at the time the
sender says it was captured, in seconds of the sender's NTP clock: `flash T` for a video frame
whose mean luma jumps above 200, `beep T` for the first loud audio sample after 200 ms of quiet.
The time is the frame's or sample's RTP timestamp mapped through the latest RTCP sender report
of its stream, as a receiver that lines streams up by them does (onsets before a stream's first
report are not printed).
--tls: serves https with the PEM CERTIFICATE and its KEY.
Prints `listening PORT` once it serves. Debian's python3-aiortc (1.4) and python3-aiohttp.
"""
import argparse
import ssl
import asyncio
import re
import sys
import uuid

import random

from aiohttp import web
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc import rtcrtpreceiver
from aiortc.codecs import is_rtx
from aiortc.rtp import RtcpSrPacket

LOSS = {"lost": 0, "nacked": 0, "retransmitted": 0}


def lose(percent):
    """Makes aiortc's receivers drop `percent` of the video packets that arrive, and count the
    NACKs they send and the retransmissions that come (aiortc 1.4's private receiver methods)."""
    chance = random.Random(25)
    handle, nack = rtcrtpreceiver.RTCRtpReceiver._handle_rtp_packet, rtcrtpreceiver.RTCRtpReceiver._send_rtcp_nack

    async def lossy(self, packet, arrival_time_ms):
        codec = self._RTCRtpReceiver__codecs.get(packet.payload_type)
        if self._RTCRtpReceiver__kind == "video" and codec is not None:
            if is_rtx(codec):
                LOSS["retransmitted"] += 1
            elif chance.random() * 100 < percent:
                LOSS["lost"] += 1
                return
        await handle(self, packet, arrival_time_ms)

    async def counted(self, media_ssrc, lost):
        LOSS["nacked"] += len(lost)
        await nack(self, media_ssrc, lost)

    rtcrtpreceiver.RTCRtpReceiver._handle_rtp_packet = lossy
    rtcrtpreceiver.RTCRtpReceiver._send_rtcp_nack = counted


SENDER_REPORTS = {}
SSRCS = {}
MAPPERS = {}


def follow_sender_reports():
    """Keeps each stream's latest RTCP sender report by SSRC (its NTP time in seconds and its RTP
    timestamp), the SSRC of each kind's media, and the mapper that makes its frame times (its RTP
    timestamps less the first one's) (aiortc 1.4's private receiver methods). With
    BUNDLE the reports of both streams come in one compound packet, handed to every receiver: a
    report is told apart by its SSRC, not by the receiver it reached."""
    handle_rtcp, handle_rtp = (
        rtcrtpreceiver.RTCRtpReceiver._handle_rtcp_packet,
        rtcrtpreceiver.RTCRtpReceiver._handle_rtp_packet,
    )

    async def noted(self, packet):
        if isinstance(packet, RtcpSrPacket):
            info = packet.sender_info
            SENDER_REPORTS[packet.ssrc] = (info.ntp_timestamp / 2**32, info.rtp_timestamp)
        await handle_rtcp(self, packet)

    async def seen(self, packet, arrival_time_ms):
        codec = self._RTCRtpReceiver__codecs.get(packet.payload_type)
        if codec is not None and not is_rtx(codec):
            SSRCS[self._RTCRtpReceiver__kind] = packet.ssrc
            MAPPERS[self._RTCRtpReceiver__kind] = self._RTCRtpReceiver__timestamp_mapper
        await handle_rtp(self, packet, arrival_time_ms)

    rtcrtpreceiver.RTCRtpReceiver._handle_rtcp_packet = noted
    rtcrtpreceiver.RTCRtpReceiver._handle_rtp_packet = seen


def capture_time(kind, pts, rate):
    """The sender's NTP time, in seconds, of the `kind` stream's frame time `pts` (clock rate
    `rate`), or None before its first sender report."""
    report, mapper = SENDER_REPORTS.get(SSRCS.get(kind)), MAPPERS.get(kind)
    if report is None or mapper is None or mapper._origin is None:
        return None
    ntp, base = report
    timestamp = (pts + mapper._origin) % 2**32
    return ntp + (((timestamp - base + 2**31) % 2**32) - 2**31) / rate


class Onsets:
    """Finds the sync signal's flashes and beeps in decoded frames, printing each."""

    def __init__(self):
        self.bright = False
        self.last_loud = None

    def video(self, frame):
        bright = frame.to_ndarray(format="gray").mean() > 200
        if bright and not self.bright:
            self.report("flash", capture_time("video", frame.pts, 90000))
        self.bright = bright

    def audio(self, frame):
        samples = abs(frame.to_ndarray().astype("int32")).reshape(-1)
        channels = len(frame.layout.channels)
        for index in (samples > 8000).nonzero()[0]:
            at = frame.pts + int(index) // channels
            if self.last_loud is None or at - self.last_loud > 0.2 * 48000:
                self.report("beep", capture_time("audio", at, 48000))
            self.last_loud = at

    @staticmethod
    def report(kind, time):
        if time is not None:
            say(f"{kind} {time:.5f}")


def say(line):
    print(line, flush=True)


async def count_frames(track, session, close=None, per_second=False, onsets=None):
    """Decodes the track, printing `frames N` (video, every 10) or `audio frames N` (every 50),
    and once video stops coming for half a second, `idle frames N` (all decoded so far); with
    `per_second` the video frames of each second (`fps N second S`); calls `close` after 30
    video frames when given; hands each frame to `onsets` when given."""
    video = track.kind == "video"
    every, label = (10, "frames") if video else (50, "audio frames")
    per_second = per_second and video
    counted = {"frames": 0, "second": 0, "in second": 0, "idle at": 0}
    timing = {"decoded": None, "gap": 0.0}
    loop = asyncio.get_running_loop()

    def report(prefix=""):
        losses = f" lost {LOSS['lost']} nacked {LOSS['nacked']} retransmitted {LOSS['retransmitted']}"
        timed = f" longest-gap {timing['gap'] * 1000:.0f}"
        say(f"{prefix}{label} {counted['frames']} session {session}" + (losses + timed if video else ""))

    def tick(at):
        # Each second from the first frame, on the loop's clock, whether frames came or not.
        counted["second"] += 1
        say(f"fps {counted['in second']} second {counted['second']}")
        counted["in second"] = 0
        loop.call_at(at + 1, tick, at + 1)

    def watch_idle():
        # Once per pause of half a second: everything that came has been decoded.
        if counted["frames"] != counted["idle at"] and loop.time() - timing["decoded"] >= 0.5:
            counted["idle at"] = counted["frames"]
            report("idle ")
        loop.call_later(0.25, watch_idle)

    while True:
        try:
            frame = await track.recv()
        except Exception:
            return
        counted["frames"] += 1
        now = loop.time()
        if timing["decoded"] is not None:
            timing["gap"] = max(timing["gap"], now - timing["decoded"])
        elif video:
            loop.call_later(0.25, watch_idle)
        timing["decoded"] = now
        if onsets:
            (onsets.video if video else onsets.audio)(frame)
        if per_second:
            if counted["frames"] == 1:
                loop.call_at(now + 1, tick, now + 1)
            counted["in second"] += 1
        if counted["frames"] % every == 0:
            report()
        if close and video and counted["frames"] == 30:
            await close()
            return


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--status", type=int)
    parser.add_argument("--malformed-answer", action="store_true")
    parser.add_argument("--unreachable", action="store_true")
    parser.add_argument("--close-after-30-frames", action="store_true")
    parser.add_argument("--location-origin")
    parser.add_argument("--drop-percent", type=float)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--fps", action="store_true")
    parser.add_argument("--sync", action="store_true")
    parser.add_argument("--tls", nargs=2, metavar=("CERTIFICATE", "KEY"))
    options = parser.parse_args()
    if options.drop_percent:
        lose(options.drop_percent)
    if options.sync:
        follow_sender_reports()
    sessions = {}

    def location(session):
        """The session's URL: on this endpoint, or on another origin with a signature in its query."""
        if options.location_origin:
            return f"{options.location_origin}/resource/{session}?sig=secret-{session}"
        return f"/resource/{session}"

    async def offer(request):
        if options.token and request.headers.get("Authorization") != f"Bearer {options.token}":
            say("refused: no token or a wrong one")
            return web.Response(status=401, text="a bearer token is needed")
        if options.status:
            return web.Response(status=options.status, text="the endpoint is configured to fail")
        if request.content_type != "application/sdp":
            return web.Response(status=415, text="the offer must be application/sdp")
        session = uuid.uuid4().hex[:12]
        if options.malformed_answer:
            return web.Response(status=201, text="this is not an SDP answer", headers={"Location": f"/resource/{session}"})
        pc = RTCPeerConnection()
        sessions[session] = pc

        async def close():
            # The endpoint drops the session on its own (DTLS close_notify, no more RTCP); it
            # stays listed, so that the sender's DELETE still finds it.
            await pc.close()
            say(f"closed session {session}")

        onsets = Onsets()

        @pc.on("track")
        def on_track(track):
            say(f"track {track.kind} session {session}")
            asyncio.ensure_future(
                count_frames(
                    track,
                    session,
                    close if options.close_after_30_frames else None,
                    options.fps,
                    onsets if options.sync else None,
                )
            )

        @pc.on("connectionstatechange")
        async def on_state():
            say(f"state {pc.connectionState} session {session}")

        await pc.setRemoteDescription(RTCSessionDescription(sdp=await request.text(), type="offer"))
        await pc.setLocalDescription(await pc.createAnswer())
        answer = pc.localDescription.sdp
        if options.unreachable:
            # Every candidate on a port of this machine that nothing listens on (discard, 9), and
            # no checks from this side either (they would let the sender find this peer).
            answer = re.sub(r"(a=candidate:\S+ \d+ \S+ \d+ )\S+ \d+", r"\g<1>127.0.0.1 9", answer)
            await pc.close()
        say(f"answered session {session}")
        return web.Response(
            status=201, text=answer, content_type="application/sdp", headers={"Location": location(session)}
        )

    async def delete(request):
        if options.token and request.headers.get("Authorization") != f"Bearer {options.token}":
            return web.Response(status=401)
        session = request.match_info["session"]
        pc = sessions.pop(session, None)
        if pc is None:
            return web.Response(status=404)
        await pc.close()
        say(f"deleted session {session}")
        return web.Response(status=200)

    async def serve():
        app = web.Application()
        app.router.add_post("/whip/{name}", offer)
        app.router.add_delete("/resource/{session}", delete)
        runner = web.AppRunner(app)
        await runner.setup()
        context = None
        if options.tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*options.tls)
        await web.TCPSite(runner, options.address, options.port, ssl_context=context).start()
        say(f"listening {options.port}")
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
