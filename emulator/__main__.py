"""``python -m emulator capacity ...``: run one emulator trial in this process, JSON lines out.

Every line on standard output is one JSON object with an ``event`` key:
``start``, ``progress``, ``ramp_end``, ``result`` or ``error``.  Exit status 0
after a ``result``, 2 for bad arguments, 3 when a local limit stops the trial
before it starts, 4 when the deadline passes.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from . import __version__, codec
from .limits import FdLimitError, raise_nofile
from .network import CapacityParams, CapacityRun

FD_RESERVE = 64


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def parse_versions(text: str) -> tuple:
    try:
        return tuple(sorted(codec.VERSION_BY_NAME[v.strip()] for v in text.split(",")))
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"OpenFlow version list {text!r}: each must be one of {', '.join(codec.VERSION_BY_NAME)}") from None


def parse_endpoint(text: str) -> tuple:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"controller address {text!r} is not HOST:PORT")
    return host, int(port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"bmwg-sdn emulator {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capacity", help="one Control Sessions Capacity trial (RFC 8456 §5.2.1)")
    cap.add_argument("--controller", type=parse_endpoint, required=True, metavar="HOST:PORT")
    cap.add_argument("--max-sessions", type=int, required=True)
    cap.add_argument("--ramp-group", type=int, default=50)
    cap.add_argument("--ramp-delay", type=float, default=0.05, help="seconds between groups")
    cap.add_argument("--connect-timeout", type=float, default=5.0)
    cap.add_argument("--handshake-timeout", type=float, default=10.0)
    cap.add_argument("--hold-time", type=float, default=3.0)
    cap.add_argument("--echo-interval", type=float, default=1.0)
    cap.add_argument("--echo-timeout", type=float, default=3.0)
    cap.add_argument("--openflow", type=parse_versions, default=(codec.OFP13,), metavar="1.3[,1.0]")
    cap.add_argument("--datapath-id-base", type=int, default=1)
    cap.add_argument("--sessions-per-source", type=int, default=20000)
    cap.add_argument("--source-base", default="127.0.0.1", help="first loopback source address")
    cap.add_argument("--deadline", type=float, default=600.0, help="seconds before the trial is abandoned")
    return parser


def run_capacity(args) -> int:
    # SIGUSR1 (from the harness, when another shard saw drops): open no further sessions.
    # Installed first, so an early signal never takes the default action (terminate).
    pending = {"stop": False, "run": None}

    def on_usr1(*_):
        pending["stop"] = True
        if pending["run"] is not None:
            reactor.callFromThread(pending["run"].stop_ramp)

    signal.signal(signal.SIGUSR1, on_usr1)
    try:
        params = CapacityParams(
            host=args.controller[0], port=args.controller[1], max_sessions=args.max_sessions,
            ramp_group=args.ramp_group, ramp_delay=args.ramp_delay, connect_timeout=args.connect_timeout,
            handshake_timeout=args.handshake_timeout, hold_time=args.hold_time,
            echo_interval=args.echo_interval, echo_timeout=args.echo_timeout, versions=args.openflow,
            datapath_id_base=args.datapath_id_base, sessions_per_source=args.sessions_per_source,
            source_base=args.source_base)
    except ValueError as exc:
        emit({"event": "error", "kind": "bad_argument", "message": str(exc)})
        return 2
    try:
        raise_nofile(params.max_sessions + FD_RESERVE)
    except FdLimitError as exc:
        emit({"event": "error", "kind": "fd_limit", "message": str(exc)})
        return 3

    from twisted.internet import reactor

    status = {"code": 4}

    def done(result: dict) -> None:
        emit(result)
        status["code"] = 0
        run.close_all()
        reactor.callLater(0.1, reactor.stop)

    def deadline() -> None:
        emit({"event": "error", "kind": "deadline",
              "message": f"trial did not finish within {args.deadline:g} s (phase {run.phase})"})
        run.close_all()
        reactor.stop()

    run = CapacityRun(params, reactor, emit, done)
    pending["run"] = run
    if pending["stop"]:
        run.stop_ramp()
    reactor.callWhenRunning(run.start)
    reactor.callLater(args.deadline, deadline)
    reactor.run()
    return status["code"]


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "capacity":
        return run_capacity(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
