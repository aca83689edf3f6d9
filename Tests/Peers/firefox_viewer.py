#!/usr/bin/python3
"""Browser viewers of Revue's watch page (issue 28) in Firefox: Debian's Firefox ESR, headless,
watching the page at URL in N windows, driven over WebDriver BiDi (aiohttp's websocket client; no
geckodriver, no Selenium).

    firefox_viewer.py URL [--viewers N] [--seconds S] [--close-after S] [--screenshot PATH]
                      [--deadline S] [--stamps BITS,BLOCK]

The command line, the JSON lines on standard output (state, ready, stats, summary with the picture
read from the <video> drawn into a canvas, closed, error) and the exit status (0 done, 2 a wait ran
out of time, 3 a page reached unauthorized or error, 1 the browser failed) are chromium_viewer.py's,
whose watching it shares: see its docstring. --deadline S bounds each wait: Firefox's start, its
BiDi endpoint, each BiDi command, every viewer ready. Each viewer has a window of its own (a tab
behind another would be throttled), its page 1280×720. Firefox reports audioLevel and
totalAudioEnergy of the audio it receives, played out or not: a page that plays muted
(window.revue.muted) counts energy all the same.

Firefox runs with a fresh profile whose user.js holds PREFS (what WebRTC needs headless, and why),
in a process group of its own, killed on every exit (and by the kernel should this script be
killed), with its crash helper, which leaves the group. The page's console messages and exceptions go to standard error, prefixed `console:`.
$FIREFOX names another binary (default /usr/bin/firefox-esr). Debian's /usr/bin/python3 with
python3-aiohttp.
"""
import asyncio
import base64
import json
import os
import signal

import aiohttp

from chromium_viewer import BrowserRun, Failure, Timeout, arguments, drive, emit, note, wait_for, watch

PREFS = {
    # Sound without a gesture: audible autoplay allowed (0), whatever the user activation. Without
    # them Firefox refuses play() with sound and the page plays muted (window.revue.muted).
    "media.autoplay.default": 0,
    "media.autoplay.blocking_policy": 0,
    # Host candidates as plain addresses rather than mDNS names (Firefox hides them behind
    # `….local` names unless the page was granted a camera), which a node's ICE agent may not
    # resolve. (Revue's connects either way, from the peer-reflexive address of Firefox's checks.)
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    # A fresh profile's first-run pages, update checks, telemetry and crash-restore prompts: nothing
    # for a test to wait on or to be interrupted by.
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "browser.sessionstore.resume_from_crash": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
}

# Headless, a profile of its own (--profile), WebDriver BiDi on a free port (Firefox prints which).
FLAGS = ["--headless", "--no-remote", "--remote-debugging-port=0"]


def remote_value(value):
    """A WebDriver BiDi RemoteValue (script.evaluate's result) as the Python value JSON would give."""
    kind = value.get("type")
    if kind in ("undefined", "null"):
        return None
    if kind in ("string", "boolean"):
        return value["value"]
    if kind == "number":
        # NaN, Infinity and -Infinity come as strings, which JSON.stringify would make null.
        number = value["value"]
        return number if not isinstance(number, str) else (0 if number == "-0" else None)
    if kind == "bigint":
        return int(value["value"])
    if kind in ("array", "set"):
        return [remote_value(item) for item in value.get("value", [])]
    if kind in ("object", "map"):
        return {
            key if isinstance(key, str) else json.dumps(remote_value(key)): remote_value(item)
            for key, item in value.get("value", [])
        }
    return f"<{kind}>"


class BiDi:
    """A WebDriver BiDi connection to the browser (its /session endpoint)."""

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
                if data.get("type") == "event":
                    for listener in self.listeners:
                        listener(data.get("method"), data.get("params", {}))
                    continue
                future = self.pending.pop(data.get("id"), None)
                if future is None or future.done():
                    if data.get("type") == "error":
                        note(f"firefox_viewer: BiDi error: {data.get('error')}: {data.get('message')}")
                    continue
                if data.get("type") == "error":
                    future.set_exception(Failure(f"{data.get('error')}: {data.get('message')}"))
                else:
                    future.set_result(data.get("result", {}))
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(Failure("the browser closed the BiDi connection"))
            self.pending.clear()

    async def call(self, method, params=None):
        if self.reader.done():
            raise Failure("the browser closed the BiDi connection")
        self.last_id += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.last_id] = future
        await self.websocket.send_str(json.dumps({"id": self.last_id, "method": method, "params": params or {}}))
        try:
            return await asyncio.wait_for(future, self.deadline)
        except asyncio.TimeoutError:
            raise Timeout(f"no answer to {method} in {self.deadline:g} s") from None

    async def evaluate(self, context, expression):
        result = await self.call(
            "script.evaluate",
            {"expression": expression, "target": {"context": context}, "awaitPromise": True, "resultOwnership": "none"},
        )
        if result.get("type") == "exception":
            details = result.get("exceptionDetails", {})
            raise Failure(details.get("text") or json.dumps(details.get("exception")))
        return remote_value(result.get("result", {}))


class Run(BrowserRun):
    LISTENING = r"WebDriver BiDi listening on (ws://\S+)"

    def __init__(self, options):
        super().__init__(options, "firefox")
        self.bidi = None
        self.contexts = []

    async def launch(self):
        with open(os.path.join(self.profile, "user.js"), "w") as file:
            for name, value in PREFS.items():
                file.write(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n")
        await self.start(
            os.environ.get("FIREFOX", "/usr/bin/firefox-esr"),
            [*FLAGS, "--profile", self.profile, "about:blank"],
            env={**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"},
        )

        def listening():
            # Firefox prints "WebDriver BiDi listening on ws://HOST:PORT" once its endpoint listens.
            if self.endpoint_url:
                return self.endpoint_url
            self.exited()
            return None

        url = await wait_for(listening, self.options.deadline, "firefox's WebDriver BiDi to listen")
        self.http = aiohttp.ClientSession()
        try:
            websocket = await asyncio.wait_for(
                self.http.ws_connect(url.rstrip("/") + "/session", max_msg_size=0), self.options.deadline
            )
        except asyncio.TimeoutError:
            raise Timeout("no BiDi connection") from None
        bidi = BiDi(websocket, self.options.deadline)
        await bidi.call("session.new", {"capabilities": {}})
        return bidi

    def kill(self):
        super().kill()
        if self.browser:
            self.kill_crash_helper()

    def kill_crash_helper(self):
        """Firefox's crash helper leaves the group (a session of its own, its parent init); it ends by
        itself once the browser has gone, and is killed here all the same: the one started for this
        browser has its pid as first argument."""
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as file:
                    argv = file.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 1 and argv[0].endswith(b"/crashhelper") and argv[1] == str(self.browser.pid).encode():
                try:
                    os.kill(int(entry), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    async def screenshot(self):
        """Viewer 0's window as a PNG at --screenshot, when asked for and the window is there."""
        if self.options.screenshot and self.contexts:
            shot = await self.bidi.call("browsingContext.captureScreenshot", {"context": self.contexts[0]})
            with open(self.options.screenshot, "wb") as file:
                file.write(base64.b64decode(shot["data"]))

    async def main(self):
        options = self.options
        bidi = self.bidi = await self.launch()
        contexts = self.contexts
        names = {}

        def on_event(method, params):
            if method != "log.entryAdded":
                return
            viewer = names.get(params.get("source", {}).get("context"))
            if viewer is None:
                return
            if params.get("type") == "console":
                note(f"console: [viewer {viewer}] {params.get('method') or params.get('level')}: {params.get('text')}")
            else:
                note(f"console: [viewer {viewer}] {params.get('type')} {params.get('level')}: {params.get('text')}")

        bidi.listeners.append(on_event)
        await bidi.call("session.subscribe", {"events": ["log.entryAdded"]})
        for viewer in range(options.viewers):
            # A window each, as Chromium's viewers have: a tab behind another would be throttled.
            created = await bidi.call("browsingContext.create", {"type": "window"})
            context = created["context"]
            names[context] = viewer
            contexts.append(context)
            # The page in 1280×720, as in Chromium's viewers (--window-size has no effect headless).
            await bidi.call(
                "browsingContext.setViewport", {"context": context, "viewport": {"width": 1280, "height": 720}}
            )
            try:
                await bidi.call("browsingContext.navigate", {"context": context, "url": options.url, "wait": "none"})
            except Failure as failure:
                # As in Chromium, a page that does not load is waited for until the deadline.
                if bidi.reader.done():
                    raise
                note(f"console: [viewer {viewer}] the page did not load: {failure}")

        async def evaluate(viewer, expression):
            return await bidi.evaluate(contexts[viewer], expression)

        await watch(options, evaluate, self.elapsed, lambda: not bidi.reader.done())
        await self.screenshot()
        if options.close_after is not None:
            self.kill()
            await self.browser.wait()
            emit("closed", viewers=options.viewers)
            return
        # The windows closed as a person would: each page's pagehide sends its DELETE (a keepalive
        # request, which the browser finishes for the closed page) before the browser goes.
        for context in contexts:
            await bidi.call("browsingContext.close", {"context": context})
        self.contexts = []
        await asyncio.sleep(1)


def main():
    options = arguments("Headless Firefox viewers of Revue's watch page.").parse_args()
    return drive(Run(options), "firefox")


if __name__ == "__main__":
    raise SystemExit(main())
