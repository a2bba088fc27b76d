"""This machine's own limit for a request and its answer over loopback: a compiled blocking ping-pong.

Two processes (this one and a child started with :class:`~emulator.process.ChildProcess`), one TCP connection
on 127.0.0.1 with TCP_NODELAY, messages of §5.1.2's sizes (a PACKET_IN out, its PACKET_OUT back), each side a C
loop (``emulator/_pingpong.c``, built by the project's install like the fast path) that blocks in ``read()``:
no event loop, no polling.  Its median round trip is the floor no OpenFlow emulator on this host can go under;
``python -m fixtures.selfbench async`` gives the emulator's own floor as a ratio to it.

``python -m emulator.pingpong echo PORT IN_SIZE OUT_SIZE`` is the child's side.
"""

from __future__ import annotations

import socket
import struct
import sys
from array import array
from pathlib import Path
from typing import Optional

from . import codec
from .percentile import percentiles
from .process import ChildProcess

try:
    from . import _pingpong as native  # type: ignore[attr-defined]
    WHY_NOT: Optional[str] = None
except ImportError as exc:
    native = None
    WHY_NOT = f"emulator._pingpong is not built ({exc}); reinstall with a C compiler (pip install -e .)"

LOOPBACK = "127.0.0.1"


class PingPongError(RuntimeError):
    """The ping-pong could not run; the message says why."""


def exchange_sizes(version: int, frame_size: int) -> tuple:
    """(request, answer) bytes of one §5.1.2 exchange: a PACKET_IN carrying a ``frame_size``-byte frame unbuffered,
    and the PACKET_OUT that sends it on."""
    frame = bytes(frame_size)
    return (len(codec.encode_packet_in(version, 0, codec.NO_BUFFER, 1, frame)),
            len(codec.encode_packet_out(version, 0, codec.NO_BUFFER, 1, 2, frame)))


def measure(request_size: int, answer_size: int, count: int = 20_000, warmup: int = 2_000,
            log: Optional[Path] = None, timeout: float = 10.0) -> dict:
    """``count`` timed exchanges (after ``warmup`` untimed ones) of a ``request_size``-byte request and an
    ``answer_size``-byte answer: the median, p99 and mean round trip in µs.  Every read and write gives up after
    ``timeout`` s (an echo side that stops answering ends the measurement, it does not hang it); whatever goes
    wrong is a :class:`PingPongError` saying what."""
    if native is None:
        raise PingPongError(WHY_NOT)
    try:
        return _measure(request_size, answer_size, count, warmup, log, timeout)
    except OSError as exc:        # a socket, the child, or the C loop (ConnectionError; EAGAIN at the timeout)
        raise PingPongError(f"the ping-pong failed: {exc}") from None


def _measure(request_size: int, answer_size: int, count: int, warmup: int, log: Optional[Path],
             timeout: float) -> dict:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind((LOOPBACK, 0))
        listener.listen(1)
        listener.settimeout(timeout)
        port = listener.getsockname()[1]
        child = ChildProcess([sys.executable, "-m", "emulator.pingpong", "echo", port, request_size, answer_size],
                             name="pingpong echo", log=log).start()
        try:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                raise PingPongError(f"the echo side did not connect within {timeout:g} s "
                                    f"({child.exit_reason() or 'running'})") from None
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(None)        # blocking, as the C loop needs; the kernel's own timeouts bound it
                give_up_after(conn, timeout)
                if warmup:
                    native.ping(conn.fileno(), request_size, answer_size, warmup)
                rtt = array("q", native.ping(conn.fileno(), request_size, answer_size, count))
        finally:
            child.end(grace=2.0)
    us = [x / 1e3 for x in rtt]
    median, p99 = percentiles(us, (50, 99))
    return {"request_bytes": request_size, "answer_bytes": answer_size, "exchanges": count,
            "median_us": round(median, 2), "p99_us": round(p99, 2), "mean_us": round(sum(us) / len(us), 2)}


def give_up_after(sock: socket.socket, seconds: float) -> None:
    """A blocking socket's reads and writes fail (EAGAIN) after ``seconds`` without progress."""
    whole = int(seconds)
    value = struct.pack("ll", whole, int((seconds - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def _echo_main(port: int, in_size: int, out_size: int) -> int:
    with socket.create_connection((LOOPBACK, port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)        # waits for the next request as long as the measuring side is there
        native.echo(sock.fileno(), in_size, out_size)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["echo"] and len(sys.argv) == 5 and native is not None:
        sys.exit(_echo_main(*(int(a) for a in sys.argv[2:])))
    sys.stderr.write("usage: python -m emulator.pingpong echo PORT IN_SIZE OUT_SIZE (needs emulator._pingpong)\n")
    sys.exit(2)
