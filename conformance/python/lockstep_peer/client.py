"""A lockstep client peer in standard-library Python: handshake, calls with
the resend rules, batch and multi-calls, heartbeats, watch streams and
client-written topics, as docs/protocol.md and docs/topics.md describe
them. A reference for implementers, not a supported library.
"""

import http.client
import json
import os
import re
import time
import urllib.parse

from . import fingerprint as fp

DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text):
    """Seconds of a Go duration string ("400ms", "1m30s"), as welcomes
    write heartbeat and ttl."""
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text):
        raise ValueError("%r is not a duration" % text)
    return total


def fold(name):
    """A member name folded as Go's encoding/json matches names to fields
    (case-insensitively, by simple case folding): "Session" and "session"
    fold alike, and so do "inſtance" (U+017F) and "instance"."""
    out = []
    for c in name:
        u = c.upper()
        out.append(u.lower() if len(u) == 1 else c.lower())
    return "".join(out)


WELCOME_MEMBERS = {"session": None, "version": None, "fingerprint": None,
                   "peer": {"component": None, "instance": None, "release": None},
                   "heartbeat": None, "ttl": None}


def decode_welcome(raw):
    """A welcome, read as docs/protocol.md says a client reads one: members
    it does not know are ignored; a repeated key (compared as fold compares
    names), or a key that folds to a member but is spelt otherwise, makes it
    no welcome (ValueError)."""

    def pairs(items):
        seen = set()
        for k, _ in items:
            if fold(k) in seen:
                raise ValueError("key %r appears twice in one object" % k)
            seen.add(fold(k))
        return dict(items)

    def check(value, members):
        if not isinstance(value, dict) or not members:
            return
        known = {fold(k): k for k in members}
        for k, v in value.items():
            name = known.get(fold(k))
            if name is not None and name != k:
                raise ValueError("key %r is spelt %r" % (k, name))
            if name is not None:
                check(v, members[name])

    body = json.loads(raw, object_pairs_hook=pairs)
    if not isinstance(body, dict):
        raise ValueError("a welcome is an object")
    check(body, WELCOME_MEMBERS)
    if not body.get("session"):
        raise ValueError("welcome has no session")
    return body


class LockstepError(Exception):
    """An error answer: its code, message, details, and what the headers
    say about it."""

    def __init__(self, status, body, headers):
        body = body if isinstance(body, dict) else {}
        self.status = status
        self.code = body.get("code") or "internal"
        self.message = body.get("message", "")
        self.details = body.get("details")
        self.not_processed = headers.get("Lockstep-Not-Processed") == "1"
        self.draining = headers.get("Lockstep-Draining") == "1"
        super().__init__("%s: %s" % (self.code, self.message))


class Peer:
    """One client instance talking to one server.

    The contract's fingerprint is computed from the contract file; a welcome
    whose version or fingerprint is not the one offered is rejected (and its
    session closed)."""

    def __init__(self, base_url, contract_path, release="1.0.0", instance=None, timeout=10.0):
        wire = fp.load(contract_path)
        self.contract = wire["contract"]
        self.version = wire["version"]
        self.component = wire["client"]
        self.fingerprint = fp.fingerprint_of(fp.canonical(wire))
        self.release = release
        self.instance = instance or os.urandom(8).hex()
        u = urllib.parse.urlsplit(base_url)
        self.host, self.port = u.hostname, u.port or 80
        self.timeout = timeout
        self.session = None
        self.welcome = None
        self.handshakes = 0

    # -- HTTP
    def _request(self, method, path, body=None, headers=None, timeout=None):
        status, raw, hdrs = self._exchange(method, path, body, headers, timeout)
        parsed = None
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
        return status, parsed, hdrs

    def _exchange(self, method, path, body=None, headers=None, timeout=None):
        """One request; the answer's status, raw body and headers."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)
        try:
            data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
            h = {"Content-Type": "application/json"} if data is not None else {}
            h.update(headers or {})
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            hdrs = {k: v for k, v in resp.getheaders()}
        finally:
            conn.close()
        return resp.status, raw, hdrs

    def _session_headers(self):
        return {"Lockstep-Session": self.session} if self.session else {}

    # -- handshake and sessions
    def hello(self):
        return {
            "contract": self.contract, "component": self.component, "instance": self.instance,
            "release": self.release, "offers": [{"version": self.version, "fingerprint": self.fingerprint}],
        }

    def handshake(self, wait=None):
        """Opens a session; raises LockstepError with the refusal."""
        path = "/lockstep/handshake" + ("?wait=" + wait if wait else "")
        status, raw, headers = self._exchange("POST", path, self.hello(), timeout=self.timeout + 60)
        if status != 200:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            raise LockstepError(status, body, headers)
        try:
            body = decode_welcome(raw)
        except ValueError as e:
            # Read one way by one peer and another way by another: no welcome.
            # The session it may name lapses on the server.
            raise LockstepError(409, {"code": "incompatible_peer", "message": "the welcome does not decode: %s" % e}, {})
        if body.get("version") != self.version or body.get("fingerprint") != self.fingerprint:
            # Not what was offered: refuse the welcome and close its session.
            self.session = body.get("session")
            self.close()
            raise LockstepError(409, {"code": "incompatible_peer", "message": "the welcome agrees %s %s, which was not offered" % (body.get("version"), body.get("fingerprint"))}, {})
        self.session = body["session"]
        self.welcome = body
        self.handshakes += 1
        return body

    def close(self):
        """Closes the session (also the acknowledgement of a drain)."""
        if self.session:
            self._request("DELETE", "/lockstep/session", headers=self._session_headers())
            self.session = None

    def heartbeat(self):
        """Renews the session; handshakes again when it was lost. Returns
        the heartbeat's answer."""
        status, body, headers = self._request("POST", "/lockstep/heartbeat", {"sessions": [self.session]})
        if status != 200:
            raise LockstepError(status, body, headers)
        if self.session in (body.get("lost") or []):
            self.session = None
            self.handshake()
        return body

    # -- calls
    def _path(self, method):
        return "/lockstep/%s/%s/%s" % (self.contract, self.version, method)

    def _call(self, path, body, extra_headers=None, attempts=5):
        """One call with the resend rules of docs/protocol.md: resend only
        what the server marked unprocessed, and only when a resend can
        succeed (after a new handshake, or elsewhere after a drain)."""
        last = None
        for _ in range(attempts):
            if not self.session:
                self.handshake()
            headers = self._session_headers()
            headers.update(extra_headers or {})
            status, answer, hdrs = self._request("POST", path, body, headers)
            if status == 200:
                return answer, hdrs
            err = LockstepError(status, answer, hdrs)
            last = err
            if err.not_processed and err.code in ("handshake_required", "incompatible_peer"):
                self.session = None
                continue
            if err.not_processed and err.draining:
                self.close()
                time.sleep(0.005)
                continue
            raise err
        raise last

    def call(self, method, request, timeout=None):
        headers = {"Lockstep-Timeout": "%dm" % int(timeout * 1000)} if timeout else None
        answer, _ = self._call(self._path(method), request, headers)
        return answer

    def batch(self, method, items):
        """A batch call: a list of ("ok", response) or ("error", error)."""
        answer, _ = self._call(self._path(method), {"items": items})
        return [("ok", r["ok"]) if "ok" in r else ("error", r["error"]) for r in answer["results"]]

    def multi(self, calls):
        """Several unary calls in one request: calls is a list of
        (method, request)."""
        answer, _ = self._call(self._path("_multi"), {"calls": [{"method": m, "request": r} for m, r in calls]})
        return [("ok", r["ok"]) if "ok" in r else ("error", r["error"]) for r in answer["results"]]

    # -- topics
    def publish(self, topic, obj=None, delete=None, epoch=None, seq=None):
        """Writes one key of a client-written topic."""
        body = {"set": obj} if delete is None else {"delete": delete}
        if epoch is not None:
            body["epoch"], body["seq"] = epoch, seq
        answer, _ = self._call("/lockstep/%s/%s/topics/%s" % (self.contract, self.version, topic), body)
        return answer

    def watch_synced(self, topic, attempts=10):
        """Opens watch streams of topic until one reaches synced and returns
        the state it holds then ({key: object}). A stream that breaks or
        closes before synced is opened again, and only the new stream's
        snapshot counts."""
        last = None
        for _ in range(attempts):
            if not self.session:
                self.handshake()
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                conn.request("GET", "/lockstep/%s/%s/watch/%s" % (self.contract, self.version, topic),
                             headers=self._session_headers())
                resp = conn.getresponse()
                if resp.status != 200:
                    raw = resp.read()
                    err = LockstepError(resp.status, json.loads(raw) if raw else None, dict(resp.getheaders()))
                    if err.code == "handshake_required":
                        self.session = None
                        last = err
                        continue
                    if err.draining:
                        self.close()
                        last = err
                        continue
                    raise err
                state = {}
                while True:
                    line = resp.readline()
                    if not line:
                        raise ConnectionError("the stream ended before synced")
                    frame = json.loads(line)
                    kind = frame.get("type")
                    if kind == "set":
                        state[frame["key"]] = frame["object"]
                    elif kind == "delete":
                        state.pop(frame["key"], None)
                    elif kind == "synced":
                        return state
                    elif kind == "closing":
                        if frame.get("reason") == "session_lost":
                            self.session = None
                        elif frame.get("reason") == "draining":
                            self.close()
                        raise ConnectionError("closing: %s" % frame.get("reason"))
                    # ping and frame types this peer does not know are ignored
            except (ConnectionError, OSError, http.client.HTTPException, ValueError) as e:
                last = e
                time.sleep(0.01)
            finally:
                conn.close()
        raise last
