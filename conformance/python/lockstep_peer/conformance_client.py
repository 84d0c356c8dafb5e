"""The Python peer as a client under test of the conformance suite.

Usage: python3 -m lockstep_peer.conformance_client <scenario> <base URL>

Scenarios (conformance/cases/README.md): call, watch, idle; and tour, which
exercises calls, batch, multi-calls, heartbeats, a client-written topic and
watches against a real server of the conformance contract. The report is
one JSON object on the last line of standard output.
"""

import json
import os
import sys
import time

from .client import LockstepError, Peer, parse_duration

CONTRACT = os.environ.get("LOCKSTEP_CONTRACT") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "contract", "contract.yaml")


def error_report(e):
    return {"error": {"code": e.code, "message": e.message}}


def call(peer):
    try:
        return {"ok": peer.call("Echo", {"text": "conformance"})}
    except LockstepError as e:
        return error_report(e)
    finally:
        peer.close()


def watch(peer):
    try:
        return {"synced": peer.watch_synced("Items")}
    except LockstepError as e:
        return error_report(e)
    finally:
        peer.close()


def idle(peer, deadline=30.0):
    try:
        peer.handshake()
        end = time.monotonic() + deadline
        while peer.handshakes < 2:
            if time.monotonic() > end:
                return {"error": {"code": "deadline_exceeded", "message": "the session was never reported lost"}}
            time.sleep(parse_duration(peer.welcome["heartbeat"]))
            peer.heartbeat()
        return {"handshakes": peer.handshakes}
    except LockstepError as e:
        return error_report(e)
    finally:
        peer.close()


def tour(peer):
    """Everything a client does, against a real server; any deviation
    raises, so the report is only written when every step held."""
    report = {}
    welcome = peer.handshake()
    report["version"] = welcome["version"]
    assert peer.call("Echo", {"text": "héllo"}) == {"text": "héllo"}
    try:
        peer.call("Echo", {"text": 5})
        raise AssertionError("a schema violation was accepted")
    except LockstepError as e:
        assert e.code == "invalid_argument", e
    results = peer.batch("Sum", [{"a": 1, "b": 2}, {"a": "x", "b": 0}])
    assert results[0] == ("ok", {"sum": 3}) and results[1][0] == "error", results
    multi = peer.multi([("Echo", {"text": "one"}), ("Fail", {"code": "conflict", "message": "taken"})])
    assert multi[0] == ("ok", {"text": "one"}) and multi[1][1]["code"] == "conflict", multi
    hb = peer.heartbeat()
    assert hb["lost"] == [], hb
    written = peer.publish("Leases", {"holder": "python-" + peer.instance, "renewals": 1})
    assert written["applied"] is True, written
    leases = peer.watch_synced("Leases")
    assert leases.get("python-" + peer.instance) == {"holder": "python-" + peer.instance, "renewals": 1}, leases
    peer.call("Publish", {"name": "from-python", "value": "1"})
    items = peer.watch_synced("Items")
    assert items.get("from-python") == {"name": "from-python", "value": "1"}, items
    report["calls"] = "ok"
    report["leases"] = sorted(leases)
    report["items"] = sorted(items)
    peer.close()
    # A closed session answers handshake_required, which the peer cures by
    # handshaking again and resending.
    assert peer.call("Echo", {"text": "again"}) == {"text": "again"}
    assert peer.handshakes == 2, peer.handshakes
    peer.close()
    report["handshakes"] = peer.handshakes
    return report


SCENARIOS = {"call": call, "watch": watch, "idle": idle, "tour": tour}


def main(argv):
    if len(argv) != 2 or argv[0] not in SCENARIOS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    peer = Peer(argv[1], CONTRACT)
    report = SCENARIOS[argv[0]](peer)
    print(json.dumps(report, ensure_ascii=False, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
