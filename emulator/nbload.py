"""Northbound load: a request generator for a controller's HTTP northbound, and a null northbound to measure it.

The generator offers requests at a rate SR for Td seconds, in one of two modes:

* ``async`` (open loop): request i is due at ``start + i / SR`` whatever has been answered; requests are pipelined
  (HTTP/1.1) over ``connections`` kept-alive connections, each request on connection ``i mod connections``.  A
  request's latency counts from the instant it was due, so a controller that falls behind is charged for the queue
  it builds (no coordinated omission).
* ``sync`` (closed loop): at most ``connections`` requests in flight, one per connection; a due request waits for
  a free connection, as a client that waits for each answer does.  What such a client can offer is capped by the
  controller's latency: the figure the synchronous interface gets.

The work is spread over ``processes`` worker processes (each takes every P-th request and its share of the
connections), so that the generator is not what limits the rate.  Each worker is a single-threaded loop over
non-blocking sockets: due requests are written in batches, answers are framed by their ``Content-Length`` (or
chunked encoding) and matched to requests in order per connection.  With ``protocol="ovsdb"`` the requests are
JSON-RPC (RFC 7047, an OVN northbound's ``transact``), the answers are framed as concatenated JSON values and
matched to requests by their id.  It records, per request, when it was queued
and when its answer's last byte was read, and its HTTP status; a worker's own lateness (queued minus due) is what
says whether it kept up (:func:`client_bound`).

:class:`NullNorthbound` answers every request at once (``200``, empty body), or at most ``rate_cap`` answers per
second in arrival order (a model northbound with a known service rate).  Against the uncapped one the generator
measures its own ceiling.  Both run as processes of their own, bound to a loopback address.

Standard library only: the workers are ``python -m emulator.nbload`` processes that import nothing else.
"""

from __future__ import annotations

import base64
import codecs
import json
import os
import pickle
import select
import selectors
import socket
import sys
import time
from array import array
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Optional

from .percentile import percentile
from .process import ChildProcess, Pipes

MODES = ("async", "sync")
PROTOCOLS = ("http", "ovsdb")
MAX_JSON_BUFFER = 1 << 24   # bytes of one JSON-RPC message at most
LAG_BOUND_S = 0.05          # a worker that queued its requests later than this (99th percentile) did not keep up
OFFERED_SHARE = 0.95        # ... or that queued fewer than this share of SR·Td within Td


class LoadError(RuntimeError):
    """The generator could not run (no connection to the northbound, a worker that died); the message says which."""


# --------------------------------------------------------------------------- requests

def http_request(method: str, path: str, body=None, host: str = "127.0.0.1", auth: Optional[str] = None) -> bytes:
    """One HTTP/1.1 request, kept alive, JSON body when given: the bytes the generator writes."""
    data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Accept: application/json"]
    if auth:
        lines.append("Authorization: Basic " + base64.b64encode(auth.encode()).decode())
    if body is not None:
        lines.append("Content-Type: application/json")
    lines.append(f"Content-Length: {len(data)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


# --------------------------------------------------------------------------- framing answers

class ResponseReader:
    """Frames HTTP/1.1 responses from a byte stream: :meth:`feed` returns the status of each complete response, in
    order.  A body is delimited by ``Content-Length``, by chunked encoding, or (neither, on a status that has a
    body) by the end of the connection (:meth:`close`)."""

    def __init__(self):
        self.buf = bytearray()
        self.until_close: Optional[int] = None      # the status of a response whose body ends with the connection

    def feed(self, data: bytes) -> list:
        self.buf += data
        out = []
        while self.until_close is None:
            status = self._one()
            if status is None:
                break
            if not 100 <= status < 200:         # an interim answer: the final one follows
                out.append(status)
        return out

    def close(self) -> list:
        """The connection ended: a response delimited by it is complete."""
        if self.until_close is not None:
            status, self.until_close = self.until_close, None
            self.buf.clear()
            return [status]
        return []

    def _one(self) -> Optional[int]:
        buf = self.buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = bytes(buf[:end]).decode("latin-1").split("\r\n")
        try:
            status = int(head[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise LoadError(f"not an HTTP response: {head[0][:80]!r}") from None
        length, chunked = None, False
        for line in head[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value.strip())
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        start = end + 4
        if 100 <= status < 200 or status in (204, 304):      # no body
            del buf[:start]
            return status
        if chunked:
            stop = _chunked_end(buf, start)
            if stop < 0:
                return None
            del buf[:stop]
            return status
        if length is None:
            del buf[:start]
            self.until_close = status
            return None
        if len(buf) < start + length:
            return None
        del buf[:start + length]
        return status


def _chunked_end(buf: bytearray, pos: int) -> int:
    """The end of a chunked body starting at ``pos`` (after its trailers' empty line), or -1 when incomplete."""
    while True:
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return -1
        size = int(bytes(buf[pos:line_end]).split(b";")[0], 16)
        pos = line_end + 2
        if size == 0:
            break
        if len(buf) < pos + size + 2:
            return -1
        pos += size + 2
    while True:                                   # trailers, then an empty line
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return -1
        if line_end == pos:
            return pos + 2
        pos = line_end + 2


def ovsdb_request(method: str, params: list, rid: int) -> bytes:
    """One JSON-RPC request (OVSDB, RFC 7047) with id ``rid``: the bytes the generator writes."""
    return json.dumps({"method": method, "params": params, "id": rid}, separators=(",", ":")).encode()


class JsonStream:
    """Frames a byte stream of concatenated JSON values (OVSDB's JSON-RPC, RFC 7047, has no other framing):
    :meth:`feed` returns the complete ones, in order; what is not JSON raises ``error`` (:class:`LoadError` unless
    told).  The project's one reader of OVSDB's stream: the load generator, the OVN devices and the southbound
    monitor all read through it."""

    def __init__(self, error: type = None):
        self.error = error or LoadError
        self.text = ""
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.decoder = json.JSONDecoder()

    def feed(self, data: bytes) -> list:
        try:
            self.text += self.utf8.decode(data)
        except UnicodeDecodeError as exc:
            raise self.error(f"not JSON-RPC: {exc}") from None
        out, pos, text = [], 0, self.text
        while True:
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
            if pos >= len(text):
                break
            if text[pos] not in "{[":
                raise self.error(f"not JSON-RPC: {text[pos:pos + 60]!r}")
            try:
                value, pos2 = self.decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                if len(text) - pos > MAX_JSON_BUFFER:
                    raise self.error(f"a JSON-RPC message of more than {MAX_JSON_BUFFER} bytes, or not JSON: "
                                    f"{text[pos:pos + 60]!r}") from None
                break                       # incomplete: the rest comes with the next read
            out.append(value)
            pos = pos2
        self.text = text[pos:]
        return out


WAIT_ID = "bmwg-wait"
# Each connection's monitor of NB_Global.sb_cfg (``wait="sb_cfg"``): ovn-northd sets it to the nb_cfg it has carried
# into the southbound database, as ``ovn-nbctl --wait=sb`` waits for.
WAIT_MONITOR = json.dumps({"method": "monitor", "params": ["OVN_Northbound", WAIT_ID, {"NB_Global": {
    "columns": ["sb_cfg"]}}], "id": WAIT_ID}, separators=(",", ":")).encode()


def sb_cfg_of(table_updates) -> Optional[int]:
    """The highest NB_Global.sb_cfg in a monitor's reply or update (RFC 7047 table-updates), or None."""
    rows = table_updates.get("NB_Global") if isinstance(table_updates, dict) else None
    news = [row.get("new") for row in (rows or {}).values() if isinstance(row, dict)]
    values = [new["sb_cfg"] for new in news if isinstance(new, dict) and isinstance(new.get("sb_cfg"), int)]
    return max(values) if values else None


def nb_cfg_of(result) -> Optional[int]:
    """The nb_cfg a transaction set: its last operation's ``select`` of NB_Global (after its ``mutate``)."""
    try:
        value = result[-1]["rows"][0]["nb_cfg"]
    except (TypeError, LookupError):
        return None
    return value if isinstance(value, int) else None


def rpc_status(msg: dict) -> int:
    """A JSON-RPC reply's outcome as an HTTP-like status: 200, 409 when an OVSDB operation failed (a constraint, a
    conflict), 500 when the request failed."""
    if msg.get("error") is not None:
        return 500
    result = msg.get("result")
    if isinstance(result, list) and any(isinstance(r, dict) and r.get("error") for r in result):
        return 409
    return 200


class JsonRpcReader:
    """The ``ovsdb`` protocol's answers: :meth:`feed` returns (id, status) of each reply; requests and
    notifications from the server (``echo``, ``update``) are not answers and are skipped.  :meth:`messages`: every
    message, whole."""

    def __init__(self):
        self.stream = JsonStream()

    def messages(self, data: bytes) -> list:
        return self.stream.feed(data)

    def feed(self, data: bytes) -> list:
        return [(m.get("id"), rpc_status(m)) for m in self.stream.feed(data)
                if isinstance(m, dict) and "method" not in m and ("result" in m or "error" in m)]

    @staticmethod
    def close() -> list:
        return []


# --------------------------------------------------------------------------- the generator

@dataclass(frozen=True)
class LoadSpec:
    """One offered load: SR (``rate``) for ``duration`` s, ``mode`` async or sync over ``connections``
    connections, spread over ``processes`` workers; answers awaited ``grace`` s after the last request is due."""
    host: str
    port: int
    rate: float
    duration: float
    mode: str = "async"
    connections: int = 8
    processes: int = 1
    grace: float = 1.0
    timeout: float = 5.0            # connecting
    targets: tuple = ()             # several northbounds, ((host, port), ...): request i goes to targets[i mod T]
    protocol: str = "http"          # or "ovsdb": JSON-RPC (RFC 7047), request i's id is i, answers matched by id
    wait: str = ""                  # ovsdb: "sb_cfg", a request is served (and its connection free) once
    #                                 NB_Global.sb_cfg reaches the nb_cfg its transaction set (ovn-nbctl --wait=sb)

    def endpoints(self) -> tuple:
        """The northbounds the requests go to: ``targets``, or (host, port) alone."""
        return tuple(tuple(t) for t in self.targets) or ((self.host, self.port),)

    def workers(self) -> int:
        """Worker processes: ``processes`` rounded up to a multiple of the targets, each worker on one target (worker
        k takes requests k, k + W, ... and connects to target k mod T, so request i reaches target i mod T)."""
        t = len(self.endpoints())
        return t * -(-self.processes // t)

    def problems(self) -> list:
        out = []
        if self.mode not in MODES:
            out.append(f"mode must be one of {', '.join(MODES)} (got {self.mode!r})")
        if self.protocol not in PROTOCOLS:
            out.append(f"protocol must be one of {', '.join(PROTOCOLS)} (got {self.protocol!r})")
        if self.wait not in ("", "sb_cfg") or (self.wait and self.protocol != "ovsdb"):
            out.append(f"wait is \"sb_cfg\" with protocol ovsdb, or nothing (got {self.wait!r})")
        if not self.rate > 0 or not self.duration > 0:
            out.append(f"rate and duration must be positive (got {self.rate!r}, {self.duration!r})")
        if self.processes < 1 or self.connections < self.processes:
            out.append(f"need at least one connection per process (got {self.connections} connections, "
                       f"{self.processes} processes)")
        elif self.connections < self.workers():
            out.append(f"need at least one connection per worker: {len(self.endpoints())} northbounds take "
                       f"{self.workers()} workers (got {self.connections} connections)")
        return out

    def count(self) -> int:
        return max(1, int(round(self.rate * self.duration)))


@dataclass
class Answers:
    """What the generator saw, per request (index 0..n-1): when it was due and queued, when its answer was read
    (0: none), its HTTP status (0: none); the workers' connection errors."""
    start_ns: int
    rate: float
    due: array
    queued: array
    answered: array
    status: array
    errors: list = field(default_factory=list)
    served: Optional[array] = None      # wait="sb_cfg": when each request was seen carried into the southbound
    client_cpu_s: float = 0.0           # the workers' CPU time through their schedule (not their start-up)

    def __len__(self) -> int:
        return len(self.due)


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)
    return s


class _Worker:
    """One worker's loop over its connections (:func:`drive`)."""

    def __init__(self, spec: LoadSpec, requests: list, indices: range, socks: list, start_ns: int, clock):
        n = len(requests)
        self.spec, self.requests, self.socks, self.clock = spec, requests, socks, clock
        self.due = [start_ns + int(i * 1e9 / spec.rate) for i in indices]
        self.queued, self.answered, self.status = array("q", [0]) * n, array("q", [0]) * n, array("h", [0]) * n
        self.errors: list = []
        self.sel = selectors.DefaultSelector()
        self.out = [bytearray() for _ in socks]
        self.pending = [{} for _ in socks]              # per connection: the local indices in flight, in order
        self.by_id = spec.protocol == "ovsdb"           # answers matched by id (request i's id is i), not in order
        self.first, self.step = indices.start, indices.step
        self.readers = [JsonRpcReader() if self.by_id else ResponseReader() for _ in socks]
        self.wait_sb = spec.wait == "sb_cfg"            # served when NB_Global.sb_cfg reaches the request's nb_cfg
        self.waiting = [{} for _ in socks]              # per connection: committed requests -> their nb_cfg
        self.sb_cfg = [0] * len(socks)
        self.served = array("q", [0]) * n
        if self.wait_sb:
            for k in range(len(socks)):
                self.out[k] += WAIT_MONITOR
        self.alive = [True] * len(socks)
        self.free = deque(range(len(socks)))            # sync: connections with nothing in flight
        for k, s in enumerate(socks):
            self.sel.register(s, selectors.EVENT_READ, k)
        self.sync = spec.mode == "sync"
        self.next = 0                                   # the next request to queue
        self.done = 0                                   # answered or given up
        self.end_ns = (self.due[-1] if n else start_ns) + int(spec.grace * 1e9)

    def run(self) -> dict:
        n = len(self.requests)
        cpu0 = time.process_time()
        while self.done < n and self.clock() <= self.end_ns:
            for k in self.queue_due():
                self.flush(k)
            for key, events in self.sel.select(self.wait()):
                k = key.data
                if events & selectors.EVENT_WRITE:
                    self.flush(k)
                if events & selectors.EVENT_READ and self.alive[k]:
                    self.read(k)
        out = {"queued": self.queued, "answered": self.answered, "status": self.status, "errors": self.errors,
               "cpu_s": time.process_time() - cpu0}
        if self.wait_sb:
            out["served"] = self.served
        return out

    def connection(self) -> Optional[int]:
        """The connection the next request goes on, or None (sync: none free; none alive)."""
        if self.sync:
            while self.free and not self.alive[self.free[0]]:
                self.free.popleft()
            return self.free.popleft() if self.free else None
        k = self.next % len(self.socks)
        if self.alive[k]:
            return k
        alive = [c for c in range(len(self.socks)) if self.alive[c]]
        if not alive:
            self.done = len(self.requests)
            return None
        return alive[self.next % len(alive)]

    def queue_due(self) -> set:
        """Queue every request now due (on a free connection, in sync mode); the connections written to."""
        now = self.clock()
        touched = set()
        n = len(self.requests)
        while self.next < n and self.due[self.next] <= now:
            k = self.connection()
            if k is None:
                break
            j = self.next
            self.out[k] += self.requests[j]
            self.pending[k][j] = None
            self.queued[j] = now
            touched.add(k)
            self.next = j + 1
        return touched

    def wait(self) -> float:
        if self.next < len(self.requests) and not (self.sync and not self.free):
            return max(0.0, min((self.due[self.next] - self.clock()) / 1e9, 0.05))
        return 0.05

    def flush(self, k: int) -> None:
        if not self.out[k] or not self.alive[k]:
            return
        try:
            sent = self.socks[k].send(self.out[k])
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            self.lose(k, f"send: {exc}")
            return
        del self.out[k][:sent]
        self.sel.modify(self.socks[k], selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out[k] else 0), k)

    def read(self, k: int) -> None:
        try:
            data = self.socks[k].recv(262144)
        except BlockingIOError:
            return
        except OSError as exc:
            self.lose(k, f"recv: {exc}")
            return
        try:
            if self.by_id:
                self.replies(k, self.readers[k].messages(data) if data else [])
            else:
                self.answers(k, self.readers[k].feed(data) if data else self.readers[k].close())
        except LoadError as exc:
            self.lose(k, str(exc))
            return
        if not data:
            self.lose(k, "closed by the northbound")

    def answers(self, k: int, statuses: list) -> None:
        """HTTP: each status answers the oldest request in flight on the connection."""
        if not statuses:
            return
        t = self.clock()
        pending = self.pending[k]
        for st in statuses:
            if not pending:
                self.lose(k, "an answer to no request")
                return
            i = next(iter(pending))
            del pending[i]
            self.answered[i], self.status[i] = t, st
            self.done += 1
        if self.sync and not pending:
            self.free.append(k)

    def replies(self, k: int, messages: list) -> None:
        """OVSDB: replies matched by id; with ``wait="sb_cfg"``, a committed request waits (its connection busy, in
        sync mode) until the connection's NB_Global monitor reports sb_cfg at least the nb_cfg its transaction set;
        the server's ``echo`` is answered."""
        if not messages:
            return
        t = self.clock()
        pending, waiting = self.pending[k], self.waiting[k]
        for m in messages:
            if not isinstance(m, dict):
                continue
            method, rid = m.get("method"), m.get("id")
            if method == "echo":
                self.out[k] += json.dumps({"id": rid, "result": m.get("params", []), "error": None}).encode()
                self.flush(k)
            elif method == "update" or rid == WAIT_ID:
                cfg = sb_cfg_of(m.get("params", [None, None])[1] if method else m.get("result"))
                if cfg is not None and cfg > self.sb_cfg[k]:
                    self.sb_cfg[k] = cfg
            elif isinstance(rid, int) and "method" not in m:
                self.reply(k, m, rid, t)
        for i, target in list(waiting.items()):
            if target <= self.sb_cfg[k]:
                self.served[i] = t
                del waiting[i]
                self.done += 1
        if self.sync and not pending and not waiting and k not in self.free:
            self.free.append(k)

    def reply(self, k: int, m: dict, rid: int, t: int) -> None:
        """One OVSDB reply ``m`` to request id ``rid`` on connection ``k``, read at ``t``: the request answered, and
        with ``wait="sb_cfg"`` waiting for the nb_cfg its transaction set (ignored when not in flight here)."""
        i, off = divmod(rid - self.first, self.step)
        pending = self.pending[k]
        if off or i not in pending:
            return                      # not one of this connection's requests in flight
        del pending[i]
        st = rpc_status(m)
        self.answered[i], self.status[i] = t, st
        target = nb_cfg_of(m.get("result")) if self.wait_sb and st == 200 else None
        if target is not None:
            self.waiting[k][i] = target
        else:
            if self.wait_sb and st == 200:
                self.status[i] = 500            # the transaction set no nb_cfg to wait for
            self.done += 1

    def lose(self, k: int, why: str) -> None:
        if not self.alive[k]:
            return
        self.alive[k] = False
        self.errors.append(f"connection {k}: {why} ({len(self.pending[k])} request(s) unanswered"
                           + (f", {len(self.waiting[k])} committed but not seen in the southbound" if self.waiting[k]
                              else "") + ")")
        try:
            self.sel.unregister(self.socks[k])
        except (KeyError, ValueError):
            pass
        self.socks[k].close()
        self.done += len(self.pending[k]) + len(self.waiting[k])          # given up: never answered or served
        self.pending[k].clear()
        self.waiting[k].clear()

    def close(self) -> None:
        for s in self.socks:
            try:      # reset, not a graceful close: what the northbound has not read yet is dropped
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            except OSError:
                pass
            s.close()
        self.sel.close()


def drive(spec: LoadSpec, requests: list, indices: range, connections: int, start_ns: int,
          clock=time.monotonic_ns) -> dict:
    """One worker's loop: the requests ``requests[j]`` (global index ``indices[j]``, due at ``start_ns +
    index / rate``) over ``connections`` connections.  Returns its arrays (queued, answered ns; status) and errors."""
    socks = []
    try:
        for _ in range(connections):
            socks.append(_connect(spec.host, spec.port, spec.timeout))
    except OSError as exc:
        for s in socks:
            s.close()
        n = len(requests)
        return {"queued": array("q", [0]) * n, "answered": array("q", [0]) * n, "status": array("h", [0]) * n,
                "errors": [f"cannot connect to {spec.host}:{spec.port}: {exc}"]}
    w = _Worker(spec, requests, indices, socks, start_ns, clock)
    try:
        return w.run()
    finally:
        w.close()


def _child(args: list) -> ChildProcess:
    """``python -m emulator.nbload ARGS``: a process of its own (not a fork of a process that may hold threads,
    not a re-import of the caller's main module), its standard input and output piped, ended with its parent (a
    :class:`~emulator.process.ChildProcess`: PR_SET_PDEATHSIG, and :func:`~emulator.process.end_all` at exit)."""
    return ChildProcess([sys.executable, "-m", "emulator.nbload", *args], name=f"nbload {args[0]}",
                        pipes=Pipes.TALK_BYTES).start()


def _end(p: ChildProcess) -> None:
    p.end(grace=0)
    for f in (p.stdin, p.stdout):
        if f is not None:
            f.close()


def run_load(spec: LoadSpec, requests: list, lead: float = 0.5) -> Answers:
    """Offer ``requests`` (one per index, len = the count of ``spec``) as ``spec`` says, over its worker processes;
    every worker starts on the same schedule ``lead`` s (and a little more per worker, for it to start) from now, and
    is ended if it outlives it.  With several ``targets``, request i goes to target i mod T (:meth:`LoadSpec.workers`):
    build ``requests[i]`` for that northbound."""
    problems = spec.problems()
    if problems:
        raise LoadError("; ".join(problems))
    n = len(requests)
    ends = spec.endpoints()
    procs = min(spec.workers(), n)          # worker k on target k mod T either way
    start_ns = time.monotonic_ns() + int((lead + 0.4 * procs) * 1e9)
    workers = []
    try:
        for k in range(procs):
            idx = range(k, n, procs)
            share = spec.connections // procs + (1 if k < spec.connections % procs else 0)
            host, port = ends[k % len(ends)]
            p = _child(["worker"])
            workers.append((p, idx))
            mine = replace(spec, host=host, port=port, targets=())
            pickle.dump((mine, [requests[i] for i in idx], idx, share, start_ns), p.stdin)
            p.stdin.close()
        limit = (start_ns - time.monotonic_ns()) / 1e9 + spec.duration + spec.grace + spec.timeout + 10
        due = array("q", (start_ns + int(i * 1e9 / spec.rate) for i in range(n)))
        queued, answered, status = array("q", [0]) * n, array("q", [0]) * n, array("h", [0]) * n
        served = array("q", [0]) * n if spec.wait else None
        errors: list = []
        cpu = 0.0
        deadline = time.monotonic() + limit
        for k, (p, idx) in enumerate(workers):
            if not select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise LoadError(f"load worker {k} did not finish within {limit:.0f} s")
            try:
                got = pickle.load(p.stdout)
            except (EOFError, pickle.UnpicklingError):
                raise LoadError(f"load worker {k} died (exit code {p.wait(5)})") from None
            if "fatal" in got:
                raise LoadError(f"load worker {k} failed: {got['fatal']}")
            for j, i in enumerate(idx):
                queued[i], answered[i], status[i] = got["queued"][j], got["answered"][j], got["status"][j]
            if served is not None and "served" in got:
                for j, i in enumerate(idx):
                    served[i] = got["served"][j]
            errors += [f"worker {k}: {e}" for e in got["errors"]]
            cpu += got.get("cpu_s", 0.0)
        return Answers(start_ns, spec.rate, due, queued, answered, status, errors, served, cpu)
    finally:
        for p, _ in workers:
            _end(p)


# --------------------------------------------------------------------------- what a load achieved

def lateness(a: Answers) -> dict:
    """How far behind schedule the generator queued its requests: the 99th percentile and maximum (s), and the
    share of SR·Td it queued within Td."""
    lags = [(q - d) / 1e9 for q, d in zip(a.queued, a.due) if q]
    td_end = a.due[-1] + int(1e9 / a.rate) if len(a) else a.start_ns
    in_td = sum(1 for q in a.queued if q and q <= td_end)
    return {"lag_p99_s": percentile(lags, 99) or 0.0, "lag_max_s": max(lags) if lags else 0.0,
            "queued_share": in_td / len(a) if len(a) else 0.0, "queued": len(lags)}


def client_bound(a: Answers, mode: str, ceiling: Optional[float] = None, fraction: float = 0.8) -> str:
    """Why the generator, not the northbound, limited this load, or "": in async mode when it queued its requests
    late (99th percentile above LAG_BOUND_S) or fewer than OFFERED_SHARE of SR·Td within Td; in either mode when SR
    is within ``fraction`` of its ceiling measured against the null northbound.  In sync mode lateness is the
    interface's own cap (a request waits for a free connection), reported, not blamed on the generator."""
    why = []
    if mode == "async":
        late = lateness(a)
        if late["lag_p99_s"] > LAG_BOUND_S:
            why.append(f"requests queued {late['lag_p99_s'] * 1e3:.0f} ms late (99th percentile)")
        elif late["queued_share"] < OFFERED_SHARE:
            why.append(f"only {late['queued_share']:.0%} of SR·Td queued within Td")
    if ceiling and a.rate >= fraction * ceiling:
        why.append(f"SR {a.rate:.0f}/s is within {fraction:.0%} of the generator's ceiling ({ceiling:.0f}/s)")
    return "; ".join(why)


# --------------------------------------------------------------------------- the null (and model) northbound

def _request_end(buf: bytearray, start: int) -> int:
    """The end of the request starting at ``start`` in ``buf``, or -1 when it is not complete."""
    end = buf.find(b"\r\n\r\n", start)
    if end < 0:
        return -1
    length = 0
    head = bytes(buf[start:end]).lower()
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        stop = head.find(b"\r\n", at + 2)
        length = int(head[at + 17:stop if stop >= 0 else len(head)].strip())
    stop = end + 4 + length
    return stop if len(buf) >= stop else -1


ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n"


class _NullServer:
    """:func:`serve_null`'s loop."""

    def __init__(self, sock: socket.socket, rate_cap: Optional[float], clock):
        self.sock, self.rate_cap, self.clock = sock, rate_cap, clock
        sock.setblocking(False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(sock, selectors.EVENT_READ, None)
        self.bufs: dict = {}
        self.outs: dict = {}
        self.queue: deque = deque()        # connections owed an answer, one entry per request, arrival order
        self.last = clock()
        self.tokens = 0.0
        self.burst = max(1.0, (rate_cap or 0) / 100)     # at most 10 ms of service at once

    def run(self, stop_after: float) -> None:
        end = self.last + int(stop_after * 1e9)
        while self.clock() < end:
            wait = 0.05
            if self.rate_cap and self.queue:
                wait = max(0.0, min(0.05, (1 - self.tokens) / self.rate_cap))
            for key, events in self.sel.select(wait):
                if key.data is None:
                    self.accept()
                    continue
                if events & selectors.EVENT_WRITE:
                    self.send(key.data)
                if events & selectors.EVENT_READ and key.data in self.bufs:
                    self.read(key.data)
            if self.rate_cap:
                self.serve()

    def accept(self) -> None:
        try:
            c, _ = self.sock.accept()
        except BlockingIOError:
            return
        c.setblocking(False)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.bufs[c], self.outs[c] = bytearray(), bytearray()
        self.sel.register(c, selectors.EVENT_READ, c)

    def read(self, c) -> None:
        try:
            data = c.recv(262144)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.sel.unregister(c)
            c.close()
            self.bufs.pop(c, None)
            self.outs.pop(c, None)
            return
        buf = self.bufs[c]
        buf += data
        pos = count = 0
        while True:
            stop = _request_end(buf, pos)
            if stop < 0:
                break
            pos, count = stop, count + 1
        del buf[:pos]
        if self.rate_cap:
            self.queue.extend([c] * count)
        else:
            self.outs[c] += ANSWER * count
            self.send(c)

    def serve(self) -> None:
        """The model's service: a token bucket of ``rate_cap`` answers per second, in arrival order."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate_cap / 1e9)
        self.last = now
        due = int(self.tokens) if self.queue else 0
        self.tokens -= due
        touched = set()
        while due > 0 and self.queue:
            c = self.queue.popleft()
            if c in self.outs:              # a connection the client has closed is owed nothing
                self.outs[c] += ANSWER
                touched.add(c)
                due -= 1
        self.tokens += due                  # not spent: no one to serve
        for c in touched:
            self.send(c)

    def send(self, c) -> None:
        out = self.outs.get(c)
        if out is None:
            return
        try:
            sent = c.send(out) if out else 0
        except BlockingIOError:
            sent = 0
        except OSError:
            return
        del out[:sent]
        self.sel.modify(c, selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0), c)

    def close(self) -> None:
        for c in list(self.bufs):
            c.close()
        self.sel.close()
        self.sock.close()


def serve_null(sock: socket.socket, rate_cap: Optional[float], stop_after: float, clock=time.monotonic_ns) -> None:
    """Answer every request on ``sock``'s connections with ``ANSWER``: at once, or at most ``rate_cap`` per second
    in the order they arrived.  Returns after ``stop_after`` s."""
    server = _NullServer(sock, rate_cap, clock)
    try:
        server.run(stop_after)
    finally:
        server.close()


def _null_main(host: str, rate_cap: Optional[float], stop_after: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(1024)
    sys.stdout.write(f"{sock.getsockname()[1]}\n")
    sys.stdout.flush()
    serve_null(sock, rate_cap, stop_after)


class NullNorthbound:
    """A northbound that answers every HTTP request ``200`` with an empty body, at once or at most ``rate_cap`` per
    second (a model of a controller whose service rate is known); a process of its own on ``host`` (loopback), ended
    by :meth:`stop`, with its parent, or after ``stop_after`` s."""

    def __init__(self, rate_cap: Optional[float] = None, host: str = "127.0.0.1", stop_after: float = 600.0):
        if not host.startswith("127."):
            raise ValueError(f"the null northbound listens on loopback only (got {host})")
        self.rate_cap, self.host, self.stop_after = rate_cap, host, stop_after
        self.port = 0
        self.proc: Optional[ChildProcess] = None

    def __enter__(self) -> "NullNorthbound":
        self.proc = _child(["null", self.host, str(self.rate_cap or 0), str(self.stop_after)])
        self.proc.stdin.close()
        if not select.select([self.proc.stdout], [], [], 20)[0]:
            self.stop()
            raise LoadError("the null northbound did not start within 20 s")
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise LoadError("the null northbound did not start")
        self.port = int(line)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            _end(self.proc)
            self.proc = None

    def __exit__(self, *exc) -> None:
        self.stop()


def answered_rate(a: Answers) -> tuple:
    """(answers read per second from the schedule's start to the last answer, answers, that span in s)."""
    ok = [t for t in a.answered if t]
    span = (max(ok) - a.start_ns) / 1e9 if ok else 0.0
    return (len(ok) / span if span > 0 else 0.0), len(ok), span


def measure_ceiling(duration: float = 1.0, processes: int = 1, connections: int = 8,
                    rate: float = 200_000.0) -> dict:
    """The generator's own ceiling: answers read per second, async mode, against the uncapped null northbound (a
    process of its own on this host).  Both share the host's cores, so this is a lower bound of the generator's
    ceiling alone."""
    with NullNorthbound() as null:
        spec = LoadSpec(null.host, null.port, rate, duration, "async", connections, processes, grace=0.5)
        req = http_request("POST", "/null", {"i": 0}, host=f"{null.host}:{null.port}")
        a = run_load(spec, [req] * spec.count())
    rate_read, answered, span = answered_rate(a)
    if not answered:
        raise LoadError(f"no answer from the null northbound ({'; '.join(a.errors) or 'none read'})")
    return {"answered_per_s": rate_read, "offered_per_s": rate, "answered": answered, "seconds": span,
            "processes": processes, "connections": connections,
            "cpus": len(os.sched_getaffinity(0)), "errors": a.errors[:3]}


def main(argv: list) -> int:
    """The child processes' entry: ``worker`` (a pickled job on stdin, its pickled result on stdout) or ``null HOST
    RATE_CAP STOP_AFTER``; each ended with its parent (SIGKILL, PR_SET_PDEATHSIG, set by :func:`_child`'s
    ChildProcess: no load left behind)."""
    if argv[:1] == ["worker"]:
        spec, requests, indices, connections, start_ns = pickle.load(sys.stdin.buffer)
        try:
            result = drive(spec, requests, indices, connections, start_ns)
        except Exception as exc:        # noqa: BLE001 - reported to the parent, which decides
            result = {"fatal": f"{type(exc).__name__}: {exc}"}
        pickle.dump(result, sys.stdout.buffer)
        sys.stdout.flush()
        return 0
    if argv[:1] == ["null"] and len(argv) == 4:
        _null_main(argv[1], float(argv[2]) or None, float(argv[3]))
        return 0
    sys.stderr.write("usage: python -m emulator.nbload worker | null HOST RATE_CAP STOP_AFTER\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
