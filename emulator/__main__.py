"""``python -m emulator capacity ...``: one Control Sessions Capacity trial in this process, JSON lines out.

A thin command line over the same responder the shards run (:meth:`emulator.shard.Shard.open_sessions`).
Every line on standard output is one JSON object with an ``event`` key: ``progress``, ``ramp_end``,
``result`` or ``error``.  Exit status 0 after a ``result``, 2 for bad arguments, 3 when the trial could
not run (a local limit, the deadline).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from . import __version__, codec
from . import commands as c
from .params import (
    CapacityParams,
    RampParams,
    loopback_address,
    non_negative_float,
    parse_endpoint,
    positive_float,
    positive_int,
)


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def parse_versions(text: str) -> tuple:
    try:
        return tuple(sorted(codec.VERSION_BY_NAME[v.strip()] for v in text.split(",")))
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"OpenFlow version list {text!r}: each must be one of {', '.join(codec.VERSION_BY_NAME)}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"bmwg-sdn emulator {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capacity", help="one Control Sessions Capacity trial (RFC 8456 §5.2.1)")
    cap.add_argument("--controller", type=parse_endpoint, required=True, metavar="HOST:PORT")
    CapacityParams.add_options(cap)
    RampParams.add_options(cap)
    cap.add_argument("--openflow", type=parse_versions, default=(codec.OFP13,), metavar="1.3[,1.0]")
    cap.add_argument("--datapath-id-base", type=positive_int, default=1)
    cap.add_argument("--sessions-per-source", type=positive_int, default=20000)
    cap.add_argument("--source-base", type=loopback_address, default="127.0.0.1", help="first loopback source address")
    cap.add_argument("--deadline", type=positive_float, default=600.0, help="seconds before the trial is abandoned")
    cap.add_argument("--progress-interval", type=non_negative_float, default=1.0)
    return parser


def wire_event(event) -> dict:
    name = {"Progress": "progress", "RampEnded": "ramp_end"}.get(type(event).__name__, type(event).__name__)
    return {"event": name, **dataclasses.asdict(event)}


def run_capacity(args) -> int:
    from twisted.internet import reactor

    from .shard import Shard

    cmd = c.OpenSessions(address=args.controller, versions=args.openflow, capacity=CapacityParams.from_options(args),
                         ramp=RampParams.from_options(args), sessions=args.max_sessions,
                         first_dpid=args.datapath_id_base, source_base=args.source_base,
                         sessions_per_source=args.sessions_per_source, deadline=args.deadline,
                         progress_interval=args.progress_interval or 1.0)
    status = {"code": 3}

    def send(message) -> None:
        kind, _call, payload = message
        if kind == "event":
            emit(wire_event(c.from_wire(payload)))
        elif kind == "answer":
            result = c.from_wire(payload)
            out = {k: v for k, v in dataclasses.asdict(result).items() if not isinstance(v, bytes)}
            rtts = c.samples(result.echo_rtt_ns)
            out.update(event="result", capped=result.capped, emulator_bound=result.emulator_bound,
                       setup_rate_per_s=result.setup_rate_per_s, echo_rtt_samples=len(rtts))
            emit(out)
            status["code"] = 0
            reactor.callLater(0.1, reactor.stop)
        else:
            emit({"event": "error", "message": payload})
            reactor.callLater(0, reactor.stop)

    shard = Shard(reactor, send, source_base=args.source_base)
    reactor.callWhenRunning(shard.dispatch, 1, cmd)
    reactor.run()
    return status["code"]


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "capacity":
        return run_capacity(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
