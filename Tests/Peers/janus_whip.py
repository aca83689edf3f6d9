#!/usr/bin/python3
"""A WHIP front end (RFC 9725) for Janus's VideoRoom, for Revue's tests: Debian's
simple-whip-server cannot be installed beside this machine's Node.js, so this small aiohttp
server does what it does. Each offer POSTed to /whip/ROOM joins VideoRoom ROOM (made if it does
not exist) as a publisher, through Janus's HTTP API, and Janus's answer goes back with 201;
DELETE of the session's URL leaves the room.

    janus_whip.py PORT JANUS_URL [--token T] [--bitrate BPS]

--bitrate: rooms are made with that cap on a publisher's video, which Janus tells publishers
(RTCP REMB, its estimate of what it takes, for all their layers together).

Prints `listening PORT` once it serves, and `published room ROOM feed FEED` for each publisher
(the feed a subscriber asks for). Debian's python3-aiohttp.
"""
import argparse
import asyncio
import sys
import uuid

import aiohttp
from aiohttp import web


def say(line):
    print(line, flush=True)


class Janus:
    """One Janus session attached to the VideoRoom plugin."""

    def __init__(self, http, url):
        self.http, self.url = http, url

    async def post(self, path, body):
        body = dict(body, transaction=uuid.uuid4().hex)
        async with self.http.post(self.url + path, json=body) as response:
            answer = await response.json()
        if answer.get("janus") == "error":
            raise RuntimeError(f"Janus: {answer['error']}")
        return answer

    async def attach(self):
        self.session = (await self.post("", {"janus": "create"}))["data"]["id"]
        self.handle = (await self.post(f"/{self.session}", {"janus": "attach", "plugin": "janus.plugin.videoroom"}))[
            "data"
        ]["id"]

    async def message(self, body, jsep=None):
        message = {"janus": "message", "body": body}
        if jsep:
            message["jsep"] = jsep
        answer = await self.post(f"/{self.session}/{self.handle}", message)
        return answer.get("plugindata", {}).get("data")

    async def event_with_jsep(self):
        """The next description in the session's events (long polls), and the publisher's id
        (from the `joined` event before it)."""
        feed = None
        while True:
            async with self.http.get(f"{self.url}/{self.session}?maxev=1") as response:
                event = await response.json()
            data = event.get("plugindata", {}).get("data", {})
            if "error" in data:
                raise RuntimeError(f"VideoRoom: {data['error']}")
            if data.get("videoroom") == "joined":
                feed = data.get("id")
            if "jsep" in event:
                return event["jsep"], feed

    async def destroy(self):
        await self.post(f"/{self.session}", {"janus": "destroy"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("janus")
    parser.add_argument("--token")
    parser.add_argument("--bitrate", type=int, default=0)
    options = parser.parse_args()
    sessions = {}

    async def offer(request):
        if options.token and request.headers.get("Authorization") != f"Bearer {options.token}":
            return web.Response(status=401, text="a bearer token is needed")
        if request.content_type != "application/sdp":
            return web.Response(status=415, text="the offer must be application/sdp")
        room = int(request.match_info["room"])
        janus = Janus(request.app["http"], options.janus)
        await janus.attach()
        created = await janus.message(
            {"request": "create", "room": room, "publishers": 10, "videocodec": "vp8,h264", "bitrate": options.bitrate}
        )
        if "error" in created and created.get("error_code") != 427:  # 427: the room exists
            return web.Response(status=502, text=f"VideoRoom: {created['error']}")
        await janus.message({"request": "join", "ptype": "publisher", "room": room, "display": "whip"})
        sdp = await request.text()
        await janus.message({"request": "publish"}, jsep={"type": "offer", "sdp": sdp})
        jsep, feed = await janus.event_with_jsep()
        session = uuid.uuid4().hex[:12]
        sessions[session] = janus
        say(f"published room {room} feed {feed}")
        return web.Response(
            status=201, text=jsep["sdp"], content_type="application/sdp", headers={"Location": f"/resource/{session}"}
        )

    async def delete(request):
        janus = sessions.pop(request.match_info["session"], None)
        if janus is None:
            return web.Response(status=404)
        await janus.destroy()
        say(f"deleted session {request.match_info['session']}")
        return web.Response(status=200)

    async def serve():
        app = web.Application()
        app["http"] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=35))
        app.router.add_post("/whip/{room}", offer)
        app.router.add_delete("/resource/{session}", delete)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", options.port).start()
        say(f"listening {options.port}")
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
