/// The page a browser watches a stream on (issue 28): plain HTML, CSS and JavaScript in one document, nothing
/// fetched from elsewhere, so that a node on a network without the internet serves all of it. The page is a WHEP
/// client (the IETF draft): it POSTs a receive-only offer to the stream's endpoint, plays the answer's video and
/// audio, shows the stream's statistics each second, and reconnects by itself when the node restarts or the link
/// drops. Tests read its state from `window.revue` (see `template`).
enum WatchPage {
  /// The page's HTML, with the placeholder `__WHEP_ENDPOINT__` (once, in `<meta name="whep-endpoint">`) where the
  /// server puts the stream's WHEP endpoint, absolute (`/camera/whep`) or relative to the page; a page served with
  /// the placeholder left in posts to `whep` beside it.
  ///
  /// The token, when the endpoint needs one, comes from the page's fragment (`#token=T`), is kept in the tab's
  /// `sessionStorage`, and is asked for in a form after a 401. The page exposes for tests `window.revue = {state,
  /// stats, error, sessions, connectionState, muted, endpoint}`: `state` is `connecting`, `playing`, `reconnecting`,
  /// `unauthorized` or `error`; `stats` holds the latest numbers of the current connection (`width`, `height`, `fps`,
  /// `bitrateKbps`, `roundTripMs`, `packetsLost`, `framesDecoded`, `framesReceived`, `audioLevel`, `totalAudioEnergy`;
  /// null while unknown); `error` the latest reason given (the server's one-line answer to a refused offer, or why the
  /// page reconnects), null once playing; `sessions` the offers the endpoint accepted (201) so far; `connectionState`
  /// the peer connection's; `muted` whether the browser refused sound until the viewer unmutes; `endpoint` the URL the
  /// page posts to. A 401 or 403 asks for a token; a 5xx, 408 or 429, no answer, a failed or silent connection (2 s)
  /// are tried again; another status is an error, shown with its body's first line. The answer's `Location` must be
  /// readable: on the page's origin (or exposed by CORS).
  static let template: String = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="whep-endpoint" content="__WHEP_ENDPOINT__">
    <title>Revue</title>
    <link rel="icon" href="data:,">
    <style>
      html, body { margin: 0; height: 100%; background: #111; color: #eee; font: 14px/1.4 system-ui, sans-serif; }
      main { position: relative; height: 100%; display: flex; align-items: center; justify-content: center; }
      video { width: 100%; height: 100%; object-fit: contain; background: #000; }
      .panel { position: absolute; background: rgba(0, 0, 0, 0.65); border-radius: 6px; padding: 8px 12px; }
      #status { top: 12px; left: 12px; font-weight: 600; }
      body[data-state="playing"] #status { color: #7fdc7f; }
      body[data-state="reconnecting"] #status, body[data-state="connecting"] #status { color: #f0c05a; }
      body[data-state="error"] #status, body[data-state="unauthorized"] #status { color: #ff7b7b; }
      #stats { bottom: 12px; left: 12px; margin: 0; display: grid; grid-template-columns: auto auto; gap: 0 12px; }
      #stats dt { color: #aaa; }
      #stats dd { margin: 0; font-variant-numeric: tabular-nums; }
      #unmute { top: 12px; right: 12px; color: #eee; border: 1px solid #888; font-weight: 600; }
      #problem { top: 50%; left: 50%; transform: translate(-50%, -50%); max-width: 80%; text-align: center; }
      #problem p { margin: 0 0 8px; }
      button { font: inherit; padding: 4px 12px; cursor: pointer; }
      input { font: inherit; padding: 3px 6px; }
      [hidden] { display: none !important; }
    </style>
    </head>
    <body data-state="connecting">
    <main>
      <!-- No `muted` attribute: its mere presence mutes (muted="false" would too); the script unmutes. -->
      <video id="video" autoplay playsinline></video>
      <div id="status" class="panel" role="status">connecting…</div>
      <button id="unmute" class="panel" type="button" hidden>unmute sound</button>
      <div id="problem" class="panel" hidden>
        <p id="reason"></p>
        <form id="token-form" hidden>
          <label>Token <input id="token" type="password" autocomplete="off" required></label>
          <button type="submit">watch</button>
        </form>
        <button id="again" type="button" hidden>try again</button>
      </div>
      <dl id="stats" class="panel">
        <dt>resolution</dt><dd id="s-resolution">–</dd>
        <dt>frame rate</dt><dd id="s-fps">–</dd>
        <dt>video bitrate</dt><dd id="s-bitrate">–</dd>
        <dt>round trip</dt><dd id="s-rtt">–</dd>
        <dt>packets lost</dt><dd id="s-lost">–</dd>
        <dt>frames decoded</dt><dd id="s-decoded">–</dd>
        <dt>connection</dt><dd id="s-connection">new</dd>
      </dl>
    </main>
    <script>
    "use strict";
    (() => {
      const $ = (id) => document.getElementById(id);
      const video = $("video");
      const emptyStats = () => ({
        width: null, height: null, fps: null, bitrateKbps: null, roundTripMs: null, packetsLost: 0,
        framesDecoded: 0, framesReceived: 0, audioLevel: null, totalAudioEnergy: 0,
      });
      // What tests read: see WatchPage.template.
      const revue = window.revue = {
        state: "connecting", stats: emptyStats(), error: null, sessions: 0, connectionState: "new", muted: false,
      };

      // The endpoint: the meta tag's, resolved against the page; `whep` beside the page if none was filled in.
      const meta = document.querySelector('meta[name="whep-endpoint"]');
      const filled = meta && meta.content && !meta.content.startsWith("__");
      const endpoint = new URL(filled ? meta.content : "whep", location.href).href;
      revue.endpoint = endpoint;

      // The token: the fragment's (#token=T), else the one this tab kept.
      const tokenKey = "revue-token " + endpoint;
      const keep = (value) => {
        try {
          if (value) sessionStorage.setItem(tokenKey, value); else sessionStorage.removeItem(tokenKey);
        } catch (e) { /* storage disabled: the token lasts as long as the page */ }
      };
      const fragmentToken = () => new URLSearchParams(location.hash.slice(1)).get("token");
      let token = fragmentToken();
      if (token) {
        keep(token);
      } else {
        try {
          token = sessionStorage.getItem(tokenKey);
        } catch (e) {
          token = null;
        }
      }

      const BACKOFF_MS = [1000, 2000, 4000, 5000];  // then 5 s, forever
      const DISCONNECTED_MS = 2000;  // how long `disconnected` may last before the page starts over
      const STALLED_MS = 2000;  // how long the connection may bring no media before the page starts over
      const MEDIA_MS = 10000;  // how long an accepted offer may take to bring media

      let generation = 0;  // the current attempt; events of earlier ones are ignored
      let pc = null;
      let stream = null;  // the current attempt's tracks, played by the video element
      let session = null;  // the current WHEP session: {url, token}, for its DELETE
      let failures = 0;  // attempts failed in a row, for the backoff
      let timers = {};
      let sample = null;  // the statistics when the rates were last worked out
      let media = { bytes: 0, at: 0 };  // the bytes received so far, and when they were first seen
      let mutedByBrowser = false;

      function setState(state, text) {
        if (revue.state !== state) console.log("revue: " + state + (text ? " (" + text + ")" : ""));
        revue.state = state;
        document.body.dataset.state = state;
        const labels = {
          connecting: "connecting…", playing: "● live", reconnecting: "reconnecting…",
          unauthorized: "a token is needed", error: "error",
        };
        $("status").textContent = labels[state] + (text && state === "reconnecting" ? " (" + text + ")" : "");
      }

      function showProblem(reason, { form = false, again = false } = {}) {
        $("reason").textContent = reason;
        $("token-form").hidden = !form;
        $("again").hidden = !again;
        $("problem").hidden = false;
        if (form) $("token").focus();
      }

      function hideProblem() { $("problem").hidden = true; }

      function clearTimers() {
        for (const timer of Object.values(timers)) clearTimeout(timer);
        timers = {};
      }

      function authorization(value) { return value ? { Authorization: "Bearer " + value } : {}; }

      // Ends the current attempt: its peer connection closed, its session deleted on the node (best effort).
      function teardown() {
        generation += 1;
        clearTimers();
        if (pc) {
          pc.close();
          pc = null;
        }
        if (session) {
          const { url, token: used } = session;
          session = null;
          fetch(url, { method: "DELETE", headers: authorization(used), keepalive: true }).catch(() => {});
        }
        stream = null;
        sample = null;
        media = { bytes: 0, at: 0 };
        revue.stats = emptyStats();
        revue.connectionState = "closed";
        render();
      }

      function gathered(peer, capMs) {
        return new Promise((resolve) => {
          if (peer.iceGatheringState === "complete") return resolve();
          const finish = () => {
            clearTimeout(timer);
            peer.removeEventListener("icegatheringstatechange", check);
            resolve();
          };
          const check = () => { if (peer.iceGatheringState === "complete") finish(); };
          const timer = setTimeout(finish, capMs);
          peer.addEventListener("icegatheringstatechange", check);
        });
      }

      function firstLine(text, status, statusText) {
        const line = (text || "").trim().split("\n")[0].trim().slice(0, 300);
        return line || (status + " " + (statusText || "")).trim();
      }

      async function connect() {
        teardown();
        const mine = generation;
        const current = () => mine === generation;
        let peer;
        try {
          peer = pc = new RTCPeerConnection();
        } catch (e) {
          return fail("this browser has no WebRTC: " + e.message);
        }
        const tracks = stream = new MediaStream();
        peer.addTransceiver("video", { direction: "recvonly" });
        peer.addTransceiver("audio", { direction: "recvonly" });
        peer.ontrack = (event) => {
          if (!current()) return;
          tracks.addTrack(event.track);
          if (video.srcObject !== tracks) video.srcObject = tracks;
          play();
        };
        peer.onconnectionstatechange = () => { if (current()) watchConnection(peer); };
        peer.oniceconnectionstatechange = () => { if (current()) watchConnection(peer); };
        try {
          await peer.setLocalDescription(await peer.createOffer());
          await gathered(peer, 2000);
        } catch (e) {
          if (current()) fail("this browser could not make an offer: " + e.message);
          return;
        }
        if (!current()) return;
        const used = token;
        let response, body;
        try {
          response = await fetch(endpoint, {
            method: "POST", cache: "no-store", body: peer.localDescription.sdp,
            headers: { "Content-Type": "application/sdp", ...authorization(used) },
          });
          body = await response.text();
        } catch (e) {
          if (current()) retry("the node does not answer");
          return;
        }
        if (!current()) return;
        const reason = firstLine(body, response.status, response.statusText);
        if (response.status === 401 || response.status === 403) return unauthorized(reason, used);
        if (response.status >= 500 || response.status === 408 || response.status === 429) {
          return retry(response.status + ": " + reason);
        }
        if (response.status !== 201) return fail(response.status + ": " + reason);
        const resource = response.headers.get("Location");
        // The session's URL is relative to the endpoint's (the one a redirect led to, if any).
        if (resource) session = { url: new URL(resource, response.url || endpoint).href, token: used };
        revue.sessions += 1;
        try {
          await peer.setRemoteDescription({ type: "answer", sdp: body });
        } catch (e) {
          if (current()) fail("the node's answer is no SDP this browser takes: " + e.message);
          return;
        }
        if (!current()) return;
        timers.media = setTimeout(() => {
          if (current() && revue.state !== "playing") retry("no media came");
        }, MEDIA_MS);
      }

      function watchConnection(peer) {
        const state = peer.connectionState || peer.iceConnectionState;
        revue.connectionState = state;
        $("s-connection").textContent = state;
        if (state === "connected") {
          clearTimeout(timers.disconnected);
          delete timers.disconnected;
          checkPlaying();
        } else if (state === "failed" || state === "closed") {
          retry("the connection " + state);
        } else if (state === "disconnected" && !timers.disconnected) {
          timers.disconnected = setTimeout(() => retry("the connection was lost"), DISCONNECTED_MS);
        }
      }

      function checkPlaying() {
        const connected = pc && (pc.connectionState || pc.iceConnectionState) === "connected";
        if (!connected || revue.state === "playing") return;
        const showing = stream && video.srcObject === stream && video.readyState >= 2;
        if (revue.stats.framesDecoded > 0 || showing) {
          failures = 0;
          revue.error = null;
          clearTimeout(timers.media);
          hideProblem();
          setState("playing");
        }
      }

      // Starts over after a pause: 1 s, 2 s, 4 s, then 5 s.
      function retry(reason) {
        teardown();
        const delay = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)];
        failures += 1;
        console.log("revue: trying again in " + delay / 1000 + " s (" + reason + ")");
        revue.error = reason;
        setState("reconnecting", reason);
        timers.retry = setTimeout(connect, delay);
      }

      function fail(reason) {
        teardown();
        revue.error = reason;
        setState("error", reason);
        showProblem(reason, { again: true });
      }

      function unauthorized(reason, used) {
        teardown();
        if (used && used === token) {
          token = null;
          keep(null);
        }
        revue.error = reason;
        setState("unauthorized", reason);
        showProblem((used ? "The token was refused: " : "This stream needs a token: ") + reason, { form: true });
      }

      function start() {
        failures = 0;
        revue.error = null;
        hideProblem();
        setState("connecting");
        connect();
      }

      function play() {
        video.muted = mutedByBrowser;
        const playing = video.play();
        if (!playing) return;
        playing.catch((e) => {
          if (e.name !== "NotAllowedError" || video.muted) return;  // AbortError: a newer stream took its place
          // No sound without a gesture: play muted, and let the viewer unmute.
          mutedByBrowser = revue.muted = true;
          video.muted = true;
          $("unmute").hidden = false;
          video.play().catch(() => {});
        });
      }

      $("unmute").addEventListener("click", () => {
        mutedByBrowser = revue.muted = false;
        video.muted = false;
        $("unmute").hidden = true;
        video.play().catch(() => {});
      });
      video.addEventListener("playing", checkPlaying);

      $("token-form").addEventListener("submit", (event) => {
        event.preventDefault();
        token = $("token").value.trim() || null;
        keep(token);
        start();
      });
      $("again").addEventListener("click", start);
      window.addEventListener("hashchange", () => {
        const fresh = fragmentToken();
        if (fresh && fresh !== token) {
          token = fresh;
          keep(token);
          start();
        }
      });

      // Leaving: the session is deleted on the node (keepalive: the request outlives the page).
      window.addEventListener("pagehide", teardown);
      window.addEventListener("beforeunload", teardown);
      window.addEventListener("pageshow", (event) => { if (event.persisted) start(); });

      const round = (value, digits) => (value == null || !isFinite(value) ? null : Number(value.toFixed(digits)));

      async function updateStats() {
        const peer = pc;
        const mine = generation;
        if (!peer) return;
        let report;
        try {
          report = await peer.getStats();
        } catch (e) {
          return;
        }
        if (mine !== generation) return;
        let videoIn = {}, audioIn = {}, pair = null, pairId = null;
        report.forEach((s) => {
          if (s.type === "inbound-rtp") {
            if ((s.kind || s.mediaType) === "video") videoIn = s; else audioIn = s;
          } else if (s.type === "transport" && s.selectedCandidatePairId) {
            pairId = s.selectedCandidatePairId;
          } else if (s.type === "candidate-pair" && (s.selected || (s.nominated && s.state === "succeeded"))) {
            pair = pair || s;
          }
        });
        if (pairId && report.get(pairId)) pair = report.get(pairId);
        const now = videoIn.timestamp || audioIn.timestamp || performance.timeOrigin + performance.now();
        const stats = revue.stats;
        stats.width = videoIn.frameWidth ?? null;
        stats.height = videoIn.frameHeight ?? null;
        stats.framesDecoded = videoIn.framesDecoded ?? 0;
        stats.framesReceived = videoIn.framesReceived ?? 0;
        stats.packetsLost = (videoIn.packetsLost ?? 0) + (audioIn.packetsLost ?? 0);
        stats.audioLevel = round(audioIn.audioLevel, 4);
        stats.totalAudioEnergy = round(audioIn.totalAudioEnergy ?? 0, 6);
        const roundTrip = pair ? pair.currentRoundTripTime : null;
        stats.roundTripMs = roundTrip == null ? null : round(roundTrip * 1000, 1);
        const videoBytes = videoIn.bytesReceived ?? 0;
        const allBytes = videoBytes + (audioIn.bytesReceived ?? 0);
        // Rates over a second at least (the samples come each half second).
        if (!sample) {
          sample = { time: now, videoBytes, framesDecoded: stats.framesDecoded };
        } else if (now - sample.time >= 950) {
          const seconds = (now - sample.time) / 1000;
          stats.bitrateKbps = round(Math.max(0, videoBytes - sample.videoBytes) * 8 / seconds / 1000, 0);
          stats.fps = round(videoIn.framesPerSecond ?? (stats.framesDecoded - sample.framesDecoded) / seconds, 1);
          sample = { time: now, videoBytes, framesDecoded: stats.framesDecoded };
        }
        // When media last came: the stats' own time of the latest packet where it is on the stats' clock, else
        // the sample that first saw the bytes received as they are now (up to half a second late), else, none
        // counted yet, the connection's first sample: Firefox may report no inbound-rtp yet while the video
        // already plays, which must not read as media missing since 1970.
        if (allBytes > media.bytes || !media.at) media = { bytes: allBytes, at: now };
        const lastPacket = Math.max(videoIn.lastPacketReceivedTimestamp ?? 0, audioIn.lastPacketReceivedTimestamp ?? 0);
        const since = Math.abs(now - lastPacket) < 3600000 ? lastPacket : media.at;
        checkPlaying();
        if (revue.state === "playing" && now - since >= STALLED_MS) {
          retry("no media for " + ((now - since) / 1000).toFixed(1) + " s");
        }
        render();
      }

      function render() {
        const s = revue.stats;
        const text = (id, value) => { $(id).textContent = value; };
        text("s-resolution", s.width ? s.width + "×" + s.height : "–");
        text("s-fps", s.fps == null ? "–" : s.fps.toFixed(1) + " fps");
        text("s-bitrate", s.bitrateKbps == null ? "–" : s.bitrateKbps + " kb/s");
        text("s-rtt", s.roundTripMs == null ? "–" : s.roundTripMs.toFixed(1) + " ms");
        text("s-lost", String(s.packetsLost));
        text("s-decoded", String(s.framesDecoded));
        text("s-connection", revue.connectionState);
      }

      setInterval(updateStats, 500);
      start();
    })();
    </script>
    </body>
    </html>
    """#
}
