#!/usr/bin/python3
"""Browser viewers of Revue's watch page (issue 28): Debian's Chromium, headless, watching the page
at URL in N tabs, driven over the DevTools protocol (aiohttp's websocket client; no WebDriver).

    chromium_viewer.py URL [--viewers N] [--seconds S] [--close-after S] [--screenshot PATH]
                       [--deadline S] [--stamps BITS,BLOCK]

Prints one JSON object a line on standard output:
  {"event":"ready","viewer":i,"t":T}    the page plays (window.revue.state is playing and
                                        framesDecoded > 0), T seconds after the browser started
  {"event":"state","viewer":i,"t":T,"state":...,"error":...,"sessions":n}
                                        each change of the page's state (connecting, playing,
                                        reconnecting, unauthorized, error)
  {"event":"stats","viewer":i,"second":k,"state":...,"sessions":n,"error":...,
   "width":...,"height":...,"fps":...,"bitrateKbps":...,"roundTripMs":...,"packetsLost":...,
   "framesDecoded":...,"framesReceived":...,"audioLevel":...,"totalAudioEnergy":...}
                                        each second once every viewer is ready (window.revue.stats)
  {"event":"summary","viewer":i,"framesDecoded":...,"framesReceived":...,"fps":F,
   "audioEnergy":E,"sessions":n,"state":...,"picture":{"meanRGB":[r,g,b],"nonBlackFraction":x,
   "width":w,"height":h}}                at the end: F the mean of the seconds' fps, E the audio's
                                        totalAudioEnergy, the picture read from the <video> drawn
                                        into a canvas
  {"event":"closed","viewers":N}        --close-after: the browser was killed
  {"event":"error","reason":...}        a wait ran out of time, or the browser failed

--seconds S: how long to watch once every viewer is ready (10 by default). --close-after S: after S
seconds of playing, prints the summaries, then kills the browser with SIGKILL (no unload handler
runs, no DELETE is sent: a tab that vanishes) and exits 0; without it the tabs are closed at the
end, each page sending its DELETE. --screenshot PATH: a PNG of viewer 0's
tab at the end. --deadline S: how long each wait may take (the browser's start, the DevTools
calls, every viewer ready; 60 by default). --stamps BITS,BLOCK: reads the frame number RevueLab's
FrameStamp writes along the top of each picture as each frame is presented, and the summary gains
"stamps": [[number, wall-clock ms of its presentation], …] (glass-to-glass latency).

Exit status: 0 done; 2 a wait ran out of time; 3 a page reached unauthorized or error, states it
leaves only for a person; 1 the browser failed. Chromium runs in a process group of its own,
killed on every exit (and by the kernel should this script be killed). The page's console
messages and exceptions go to standard error, prefixed `console:`. $CHROMIUM names another
browser binary (default /usr/bin/chromium); FLAGS says which flags it needs and why.
Debian's /usr/bin/python3 with python3-aiohttp.
"""
import argparse
import asyncio
import base64
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import aiohttp

# Headless, sandbox off (containers, root), camera prompts granted, sound allowed without a gesture;
# no --mute-audio: the page's audio statistics (totalAudioEnergy) need the audio played out.
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--use-fake-ui-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--remote-debugging-port=0",
    "--disable-gpu",
    "--window-size=1280,720",
    # Candidates on 127.0.0.1 too (Chromium leaves loopback out of WebRTC by default), and plain
    # addresses rather than mDNS names, which a node's ICE agent may not resolve.
    "--allow-loopback-in-peer-connection",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    # Every tab decodes and runs its timers as a tab in front would.
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-breakpad",
]

SNAPSHOT = """JSON.stringify(window.revue ? {state: revue.state, error: revue.error, sessions: revue.sessions,
  stats: revue.stats} : null)"""

# The picture of the <video>, drawn into a canvas: its mean colour and the share of pixels that are
# not black. The sync signal's test pattern turns white for a frame each second: a picture that is
# almost all white is read again (up to 5 times, 100 ms apart), so the one returned is the pattern.
PICTURE = """(async () => {
  const video = document.querySelector("video");
  const width = video ? video.videoWidth : 0, height = video ? video.videoHeight : 0;
  if (!width || !height) return {meanRGB: null, nonBlackFraction: 0, width, height};
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext("2d", {willReadFrequently: true});
  const read = () => {
    context.drawImage(video, 0, 0, width, height);
    const data = context.getImageData(0, 0, width, height).data;
    let r = 0, g = 0, b = 0, lit = 0;
    for (let i = 0; i < data.length; i += 4) {
      r += data[i]; g += data[i + 1]; b += data[i + 2];
      if (Math.max(data[i], data[i + 1], data[i + 2]) > 32) lit += 1;
    }
    const n = width * height, tenth = (x) => Math.round(x * 10) / 10;
    return {meanRGB: [tenth(r / n), tenth(g / n), tenth(b / n)], nonBlackFraction: Math.round(lit / n * 1000) / 1000,
            width, height};
  };
  let picture = read();
  for (let tries = 1; tries < 5 && Math.min(...picture.meanRGB) > 240; tries++) {
    await new Promise((done) => setTimeout(done, 100));
    picture = read();
  }
  return picture;
})()"""


# Reads the frame number RevueLab's FrameStamp writes along the top of each picture (BITS blocks of
# BLOCK pixels, black 0 and white 1, the lowest bit at the left) as each frame is presented, and
# keeps [number, wall-clock ms of its presentation] in window.revueStamps.
STAMPS = """((bits, block) => {
  const video = document.querySelector("video");
  const canvas = document.createElement("canvas");
  canvas.width = bits * block;
  canvas.height = block;
  const context = canvas.getContext("2d", {willReadFrequently: true});
  window.revueStamps = [];
  const read = (now, metadata) => {
    context.drawImage(video, 0, 0, bits * block, block, 0, 0, bits * block, block);
    const row = context.getImageData(0, block >> 1, bits * block, 1).data;
    let number = 0;
    for (let bit = 0; bit < bits; bit++) {
      const at = (bit * block + (block >> 1)) * 4;
      if ((row[at] + row[at + 1] + row[at + 2]) / 3 > 128) number += 2 ** bit;
    }
    if (window.revueStamps.length < 5000) {
      window.revueStamps.push([number, performance.timeOrigin + metadata.expectedDisplayTime]);
    }
    video.requestVideoFrameCallback(read);
  };
  video.requestVideoFrameCallback(read);
  return true;
})"""


class Timeout(Exception):
    """A wait ran out of time."""


class Failure(Exception):
    """The browser or the protocol failed."""


class Refused(Exception):
    """A page reached a state it leaves only for a person (unauthorized, error)."""


def die_with_parent():
    """In the browser's process before it runs: the kernel kills it should this script die without
    its cleanup (SIGKILL); its renderers end with it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def note(text):
    print(text, file=sys.stderr, flush=True)


class DevTools:
    """A DevTools protocol connection to the browser, sessions of targets flattened into it."""

    def __init__(self, websocket, deadline):
        self.websocket = websocket
        self.deadline = deadline
        self.last_id = 0
        self.pending = {}
        self.listeners = []
        self.reader = asyncio.ensure_future(self.read())

    async def read(self):
        try:
            async for message in self.websocket:
                if message.type != aiohttp.WSMsgType.TEXT:
                    continue
                data = json.loads(message.data)
                if "id" in data:
                    future = self.pending.pop(data["id"], None)
                    if future is None or future.done():
                        continue
                    if "error" in data:
                        error = data["error"]
                        future.set_exception(Failure(f"{error.get('message')} ({error.get('data', '')})"))
                    else:
                        future.set_result(data.get("result", {}))
                else:
                    for listener in self.listeners:
                        listener(data.get("method"), data.get("params", {}), data.get("sessionId"))
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(Failure("the browser closed the DevTools connection"))
            self.pending.clear()

    async def call(self, method, params=None, session=None):
        if self.reader.done():
            raise Failure("the browser closed the DevTools connection")
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.pending[self.last_id] = future
        await self.websocket.send_str(json.dumps(message))
        try:
            return await asyncio.wait_for(future, self.deadline)
        except asyncio.TimeoutError:
            raise Timeout(f"no answer to {method} in {self.deadline:g} s") from None

    async def evaluate(self, session, expression):
        result = await self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise Failure(details.get("exception", {}).get("description") or details.get("text"))
        return result["result"].get("value")


def console_text(args):
    parts = []
    for arg in args:
        if "value" in arg:
            parts.append(arg["value"] if isinstance(arg["value"], str) else json.dumps(arg["value"]))
        else:
            parts.append(arg.get("description") or arg.get("type", "?"))
    return " ".join(parts)


async def wait_for(condition, deadline, what, interval=0.1):
    """Polls `condition` until it returns something true, for `deadline` seconds at most."""
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= end:
            raise Timeout(f"{what} within {deadline:g} s")
        await asyncio.sleep(interval)


async def watch(options, evaluate, elapsed, alive):
    """The viewers' tabs, open on the page, watched as the docstring says, up to their summaries:
    `evaluate(viewer, expression)` the value of a JavaScript expression (a promise awaited) in
    viewer's tab, `elapsed()` the seconds since the browser started, `alive()` whether the browser
    still answers (an evaluation that fails while it does is a page not readable yet)."""
    states = [None] * options.viewers
    latest = [None] * options.viewers

    async def snapshot(viewer):
        try:
            text = await evaluate(viewer, SNAPSHOT)
        except Failure as failure:
            if not alive():
                raise
            note(f"console: [viewer {viewer}] (not readable yet: {failure})")
            return None
        revue = json.loads(text) if text else None
        if revue is None:
            return None
        latest[viewer] = revue
        if revue["state"] != states[viewer]:
            states[viewer] = revue["state"]
            emit(
                "state", viewer=viewer, t=elapsed(), state=revue["state"], error=revue["error"],
                sessions=revue["sessions"]
            )
        return revue

    # Every viewer ready, within the deadline.
    ready = set()
    end = time.monotonic() + options.deadline
    while len(ready) < options.viewers:
        for viewer in range(options.viewers):
            if viewer in ready:
                continue
            revue = await snapshot(viewer)
            if not revue:
                continue
            if revue["state"] in ("unauthorized", "error"):
                raise Refused(f"viewer {viewer}: the page says {revue['state']}: {revue['error']}")
            if revue["state"] == "playing" and revue["stats"]["framesDecoded"] > 0:
                ready.add(viewer)
                emit("ready", viewer=viewer, t=elapsed())
        if len(ready) < options.viewers:
            if time.monotonic() >= end:
                waiting = ", ".join(f"viewer {v}: {states[v]}" for v in range(options.viewers) if v not in ready)
                raise Timeout(f"not playing within {options.deadline:g} s ({waiting})")
            await asyncio.sleep(0.2)

    if options.stamps:
        bits, block = (int(x) for x in options.stamps.split(","))
        for viewer in range(options.viewers):
            await evaluate(viewer, f"{STAMPS}({bits}, {block})")

    # The seconds of watching.
    seconds = options.close_after if options.close_after is not None else options.seconds
    fps = [[] for _ in range(options.viewers)]
    start = time.monotonic()
    for second in range(1, int(round(seconds)) + 1):
        # The states read each quarter of a second (a state line says when it changed), the numbers
        # printed each second.
        while time.monotonic() < start + second - 0.25:
            await asyncio.sleep(0.25)
            for viewer in range(options.viewers):
                await snapshot(viewer)
        await asyncio.sleep(max(0, start + second - time.monotonic()))
        for viewer in range(options.viewers):
            revue = await snapshot(viewer)
            if not revue:
                continue
            stats = revue["stats"]
            if stats.get("fps") is not None:
                fps[viewer].append(stats["fps"])
            emit(
                "stats", viewer=viewer, second=second, state=revue["state"], sessions=revue["sessions"],
                error=revue["error"], **stats
            )

    for viewer in range(options.viewers):
        revue = await snapshot(viewer) or latest[viewer]
        picture = await evaluate(viewer, PICTURE)
        stamps = None
        if options.stamps:
            stamps = json.loads(await evaluate(viewer, "JSON.stringify(window.revueStamps)"))
        stats = revue["stats"]
        emit(
            "summary", viewer=viewer, framesDecoded=stats["framesDecoded"], framesReceived=stats["framesReceived"],
            fps=round(sum(fps[viewer]) / len(fps[viewer]), 2) if fps[viewer] else None,
            audioEnergy=stats["totalAudioEnergy"], sessions=revue["sessions"], state=revue["state"], picture=picture,
            **({"stamps": stamps} if options.stamps else {})
        )


class BrowserRun:
    """What a run shares whichever the browser: its process, in a process group of its own (killed
    on every exit, and by the kernel should this script be killed), its standard error read for
    the line that says where its endpoint listens (LISTENING, one group: the URL), its profile
    directory, removed at the end."""

    LISTENING = None

    def __init__(self, options, name):
        self.options = options
        self.name = name
        self.browser = None
        self.profile = tempfile.mkdtemp(prefix=f"revue-{name}-")
        self.started = time.monotonic()
        self.stderr_tail = []
        self.endpoint_url = None
        self.http = None

    def elapsed(self):
        return round(time.monotonic() - self.started, 3)

    async def start(self, binary, arguments, env=None):
        """Starts `binary` with `arguments` once it exists (apt may still be installing it)."""
        await wait_for(lambda: os.access(binary, os.X_OK), self.options.deadline, f"{binary} to exist", 0.5)
        self.started = time.monotonic()
        self.browser = await asyncio.create_subprocess_exec(
            binary,
            *arguments,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=die_with_parent,
            env=env,
        )
        asyncio.ensure_future(self.drain())

    def exited(self):
        """Raises Failure once the browser has exited."""
        if self.browser.returncode is not None:
            raise Failure(f"{self.name} exited with status {self.browser.returncode}")

    async def drain(self):
        while True:
            line = await self.browser.stderr.readline()
            if not line:
                return
            text = line.decode(errors="replace").rstrip()
            found = re.search(self.LISTENING, text)
            if found:
                self.endpoint_url = found.group(1)
            self.stderr_tail = (self.stderr_tail + [text])[-40:]

    def kill(self):
        # The whole group, even when the browser itself has exited: its other processes may not have.
        if self.browser:
            try:
                os.killpg(self.browser.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def close(self):
        self.kill()
        if self.browser:
            try:
                await asyncio.wait_for(self.browser.wait(), 10)
            except asyncio.TimeoutError:
                pass
        if self.http:
            await self.http.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Run(BrowserRun):
    LISTENING = r"DevTools listening on (ws://\S+)"

    def __init__(self, options):
        super().__init__(options, "chromium")
        self.devtools = None
        self.sessions = []

    async def launch(self):
        await self.start(
            os.environ.get("CHROMIUM", "/usr/bin/chromium"), [*FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        )
        port_file = os.path.join(self.profile, "DevToolsActivePort")

        def listening():
            if self.endpoint_url:
                return self.endpoint_url
            self.exited()
            try:
                port, path = open(port_file).read().split("\n")[:2]
                return f"ws://127.0.0.1:{int(port)}{path}"
            except (OSError, ValueError):
                return None

        url = await wait_for(listening, self.options.deadline, "chromium's DevTools to listen")
        self.http = aiohttp.ClientSession()
        try:
            websocket = await asyncio.wait_for(self.http.ws_connect(url, max_msg_size=0), self.options.deadline)
        except asyncio.TimeoutError:
            raise Timeout("no DevTools connection") from None
        return DevTools(websocket, self.options.deadline)

    async def screenshot(self):
        """Viewer 0's tab as a PNG at --screenshot, when asked for and the tab is there."""
        if self.options.screenshot and self.sessions:
            shot = await self.devtools.call("Page.captureScreenshot", {"format": "png"}, self.sessions[0])
            with open(self.options.screenshot, "wb") as file:
                file.write(base64.b64decode(shot["data"]))

    async def main(self):
        options = self.options
        devtools = self.devtools = await self.launch()
        targets, sessions = [], self.sessions
        names = {}

        def on_event(method, params, session):
            viewer = names.get(session)
            if viewer is None:
                return
            if method == "Runtime.consoleAPICalled":
                note(f"console: [viewer {viewer}] {params.get('type')}: {console_text(params.get('args', []))}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                text = details.get("exception", {}).get("description") or details.get("text")
                note(f"console: [viewer {viewer}] exception: {text}")
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                note(f"console: [viewer {viewer}] {entry.get('level')}: {entry.get('text')} {entry.get('url', '')}")
            elif method == "Inspector.targetCrashed":
                note(f"console: [viewer {viewer}] the tab crashed")

        devtools.listeners.append(on_event)
        for viewer in range(options.viewers):
            target = await devtools.call("Target.createTarget", {"url": "about:blank", "newWindow": True})
            attached = await devtools.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
            session = attached["sessionId"]
            targets.append(target["targetId"])
            names[session] = viewer
            sessions.append(session)
            for domain in ("Runtime", "Log", "Page", "Inspector"):
                await devtools.call(f"{domain}.enable", {}, session)
            await devtools.call("Page.navigate", {"url": options.url}, session)

        async def evaluate(viewer, expression):
            return await devtools.evaluate(sessions[viewer], expression)

        await watch(options, evaluate, self.elapsed, lambda: not devtools.reader.done())
        await self.screenshot()
        if options.close_after is not None:
            self.kill()
            await self.browser.wait()
            emit("closed", viewers=options.viewers)
            return
        # The tabs closed as a person would: each page's pagehide sends its DELETE (a keepalive
        # request, which the browser finishes for the closed page) before the browser goes.
        for target in targets:
            await devtools.call("Target.closeTarget", {"targetId": target})
        await asyncio.sleep(1)


def arguments(description):
    """The command line, the same for every browser's viewers."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("url")
    parser.add_argument("--viewers", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--close-after", type=float)
    parser.add_argument("--screenshot")
    parser.add_argument("--deadline", type=float, default=60)
    parser.add_argument("--stamps", help="BITS,BLOCK: read RevueLab's frame stamps as frames are shown")
    return parser


def drive(run, browser):
    """Runs `run` (its main, screenshot, close, kill and stderr_tail) to its exit status, printing the
    error line of a run that fails; `browser` names it in standard error's lines."""

    async def shoot():
        # The page as it was when the run failed, when the browser still answers.
        try:
            await run.screenshot()
        except (Timeout, Failure, aiohttp.ClientError, OSError) as failure:
            note(f"{browser}_viewer: no screenshot: {failure}")

    async def guarded():
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, task.cancel)
        try:
            await run.main()
            return 0
        except Timeout as timeout:
            emit("error", reason=str(timeout))
            await shoot()
            return 2
        except Refused as refused:
            emit("error", reason=str(refused))
            await shoot()
            return 3
        except (Failure, aiohttp.ClientError, OSError) as failure:
            emit("error", reason=f"{type(failure).__name__}: {failure}")
            for line in run.stderr_tail:
                note(f"{browser}: {line}")
            return 1
        except asyncio.CancelledError:
            emit("error", reason="interrupted")
            return 1
        finally:
            await run.close()

    try:
        return asyncio.run(guarded())
    finally:
        run.kill()


def main():
    options = arguments("Headless Chromium viewers of Revue's watch page.").parse_args()
    return drive(Run(options), "chromium")


if __name__ == "__main__":
    sys.exit(main())
