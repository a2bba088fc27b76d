"""Test ports TP1/TP2 (RFC 8456 Figures 1 and 2): traffic into and out of the emulated network.

A test port sits at a host port of an edge switch.  It announces the hosts it stands for with
gratuitous ARPs, sends streams of sequence-numbered IPv4/UDP frames at a set rate, one or many
unique (source, destination) address pairs per stream, and receives whatever the network
delivers at its port.  Every frame carries a tag at offset 42 (the UDP payload): a magic word,
the stream id, the flow index, the sequence number and the send instant (monotonic ns, the
emulator's clock, which every shard on this host shares).

Receive side, per stream: frames and unique frames (Ndf), duplicates, frames that arrived after
a higher sequence number (reordered), the first and last arrival, each flow's first arrival
(path activation), the latencies, and the longest silence between two arrivals with its
bounds; and each jump in the sequence numbers (frames lost, or late) with the arrivals on either side
(the T1/T2 of the failover and re-provisioning benchmarks, and the frames lost between them).

Pure: the clock and the sending function are passed in.  Frames are assembled from per-flow
headers computed once (addresses and IPv4 checksum) and a payload patched in place.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass, field
from typing import Callable, Optional

MAGIC = b"BMWG"
TAG_AT = 42
TAG = struct.Struct("!4sHIQq")        # magic, stream, flow, seq, send instant (ns): 26 bytes
MIN_SIZE = TAG_AT + TAG.size          # 68
MAX_SIZE = 9000
UDP_SPORT, UDP_DPORT = 40000, 50000
LOSSES_KEPT = 64                      # sequence jumps a receiving stream keeps (the latest)


def ip_text(value: int) -> str:
    return ".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0))


def ip_value(text: str) -> int:
    parts = [int(x) for x in text.split(".")]
    if len(parts) != 4 or not all(0 <= p <= 255 for p in parts):
        raise ValueError(f"{text!r} is not an IPv4 address")
    return (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]


def checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class Flow:
    """One (source, destination) address pair: MACs as 6 bytes, IPv4 addresses as ints."""
    src_mac: bytes
    dst_mac: bytes
    src_ip: int
    dst_ip: int


def synthetic_flows(n: int, src_net: int = 101, dst_net: int = 102, first: int = 1) -> list:
    """``n`` unique pairs, numbered from ``first``: sources 0a:<src_net>:00:ii:ii:ii / 10.<src_net>.x.y,
    destinations the same with ``dst_net`` (the S1..Sn, D1..Dn of RFC 8456 A.4.6).  MACs are unique
    up to index 0xFFFF00; the IPv4 addresses hold the index's low 16 bits (they repeat after 65535)."""
    if not 1 <= first or not 1 <= n or first + n - 1 > 0xFFFF00:
        raise ValueError(f"flows must be numbered within 1..{0xFFFF00} (got {n} from {first})")
    out = []
    for i in range(first, first + n):
        idx = i.to_bytes(3, "big")
        out.append(Flow(bytes([0x0A, src_net, 0]) + idx, bytes([0x0A, dst_net, 0]) + idx,
                        (10 << 24) | (src_net << 16) | (i & 0xFFFF), (10 << 24) | (dst_net << 16) | (i & 0xFFFF)))
    return out


def frame_header(flow: Flow, size: int) -> bytes:
    """Ethernet + IPv4 + UDP headers (42 bytes) for a frame of ``size`` bytes, checksum included."""
    ip_len = size - 14
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, ip_len, 0, 0x4000, 64, 17, 0, flow.src_ip, flow.dst_ip)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", UDP_SPORT, UDP_DPORT, ip_len - 20, 0)      # UDP checksum 0: none (IPv4)
    return flow.dst_mac + flow.src_mac + b"\x08\x00" + ip + udp


def garp(mac: bytes, ip: int) -> bytes:
    """A gratuitous ARP (reply form, broadcast) announcing ``mac`` at ``ip``, padded to 60 bytes."""
    arp = struct.pack("!HHBBH6sI6sI", 1, 0x0800, 6, 4, 2, mac, ip, mac, ip)
    return b"\xff" * 6 + mac + b"\x08\x06" + arp + bytes(18)


def read_tag(frame: bytes) -> Optional[tuple]:
    """(stream, flow, seq, sent_ns) of a test frame, or None for any other frame."""
    if len(frame) < MIN_SIZE or frame[TAG_AT:TAG_AT + 4] != MAGIC:
        return None
    return TAG.unpack_from(frame, TAG_AT)[1:]


@dataclass
class RxStream:
    frames: int = 0
    unique: int = 0
    duplicates: int = 0
    reordered: int = 0
    highest: int = -1
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None
    longest_gap_ns: int = 0
    gap_from_ns: Optional[int] = None       # last arrival before the longest silence (T1)
    gap_to_ns: Optional[int] = None         # first arrival after it (T2)
    losses: list = field(default_factory=list, repr=False)  # the latest LOSSES_KEPT sequence jumps
    seen: bytearray = field(default_factory=bytearray, repr=False)
    flow_first_ns: dict = field(default_factory=dict, repr=False)
    latency_ns: array = field(default_factory=lambda: array("q"), repr=False)

    def record(self, flow: int, seq: int, sent_ns: int, t: int) -> None:
        self.frames += 1
        byte, bit = seq >> 3, 1 << (seq & 7)
        if byte >= len(self.seen):
            self.seen.extend(bytes(max(byte + 1 - len(self.seen), len(self.seen))))
        if self.seen[byte] & bit:
            self.duplicates += 1
            return
        self.seen[byte] |= bit
        self.unique += 1
        if seq < self.highest:
            self.reordered += 1
        else:
            if seq > self.highest + 1 and self.last_ns is not None:
                # frames highest+1 .. seq-1 have not come (yet): [last arrival before, this arrival, the sequence
                # numbers on either side] -- the Tlfr / Tffr of the failover and re-provisioning benchmarks
                self.losses.append([self.last_ns, t, self.highest, seq])
                if len(self.losses) > LOSSES_KEPT:
                    del self.losses[0]
            self.highest = seq
        if self.first_ns is None:
            self.first_ns = t
        elif t - self.last_ns > self.longest_gap_ns:
            self.longest_gap_ns, self.gap_from_ns, self.gap_to_ns = t - self.last_ns, self.last_ns, t
        self.last_ns = t
        self.flow_first_ns.setdefault(flow, t)
        self.latency_ns.append(t - sent_ns)

    def report(self) -> dict:
        return {"frames": self.frames, "unique": self.unique, "duplicates": self.duplicates,
                "reordered": self.reordered, "first_ns": self.first_ns, "last_ns": self.last_ns,
                "flows_reached": len(self.flow_first_ns), "longest_gap_ns": self.longest_gap_ns,
                "gap_from_ns": self.gap_from_ns, "gap_to_ns": self.gap_to_ns,
                "losses": [list(g) for g in self.losses], "missing": self.highest + 1 - self.unique}


@dataclass
class TxStream:
    stream: int
    flows: list
    size: int
    rate: float                   # frames per second
    count: int                    # frames to send
    delay: float = 0.0            # seconds after start() before its first frame
    headers: list = field(default_factory=list, repr=False)
    sent: int = 0
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None
    flow_first_ns: dict = field(default_factory=dict, repr=False)
    done: bool = False

    def report(self) -> dict:
        return {"stream": self.stream, "flows": len(self.flows), "size": self.size, "rate": self.rate,
                "count": self.count, "sent": self.sent, "first_ns": self.first_ns, "last_ns": self.last_ns}


class TestPort:
    """One test port at a host port of an edge switch.

    ``send(frame)`` puts a frame into the switch at this port; ``clock`` has ``callLater``;
    ``now_ns`` is the shared monotonic clock."""

    __test__ = False                 # not a pytest class

    def __init__(self, send: Callable[[bytes], None], clock, now_ns: Callable[[], int], tick: float = 0.001):
        self._send = send
        self.clock = clock
        self.now_ns = now_ns
        self.tick = tick
        self.tx: dict = {}            # stream id -> TxStream
        self.rx: dict = {}            # stream id -> RxStream
        self.other_rx = 0             # frames arriving here that are not test frames
        self.announced = 0
        self._call = None

    def announce(self, hosts) -> int:
        """Gratuitous ARPs for ``hosts`` [(mac, ip int)]: the controller learns where they are."""
        for mac, ip in hosts:
            self._send(garp(mac, ip))
        self.announced += len(hosts)
        return len(hosts)

    def add_stream(self, stream: int, flows: list, size: int = 128, rate: float = 1000.0,
                   count: Optional[int] = None, duration: Optional[float] = None, delay: float = 0.0) -> TxStream:
        """A stream of frames cycling through ``flows``, ``count`` frames (or ``rate`` × ``duration``), its
        first ``delay`` s after :meth:`start` (a test flow that starts once background traffic runs)."""
        if not 0 <= stream <= 0xFFFF or stream in self.tx:
            raise ValueError(f"stream id {stream} is out of range 0..65535 or already used on this port")
        if not flows:
            raise ValueError("a stream needs at least one flow")
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(f"frame size must be {MIN_SIZE}..{MAX_SIZE} bytes for a tagged test frame (got {size})")
        if not rate > 0:
            raise ValueError(f"rate must be above 0 frames/s (got {rate})")
        if count is None:
            if duration is None or duration <= 0:
                raise ValueError("give a frame count or a duration above 0 s")
            count = max(1, int(rate * duration))
        if delay < 0:
            raise ValueError(f"a stream's delay must be 0 s or more (got {delay})")
        s = TxStream(stream, list(flows), size, float(rate), int(count), float(delay))
        s.headers = [frame_header(f, size) for f in s.flows]
        self.tx[stream] = s
        return s

    def frame(self, s: TxStream, seq: int, t: int) -> bytes:
        flow = seq % len(s.flows)
        return (s.headers[flow] + TAG.pack(MAGIC, s.stream, flow, seq, t)
                + bytes(s.size - MIN_SIZE))

    def start(self, on_done: Optional[Callable[[], None]] = None) -> None:
        """Send every stream at its rate, paced on the clock; ``on_done`` when all are sent."""
        t0 = self.now_ns()
        for s in self.tx.values():
            s.done = False
        self._pace(t0, on_done)

    def _pace(self, t0: int, on_done) -> None:
        self._call = None
        now = self.now_ns()
        elapsed = (now - t0) / 1e9
        pending = False
        for s in self.tx.values():
            if s.done:
                continue
            due = min(s.count, int(s.rate * (elapsed - s.delay)) + 1) if elapsed >= s.delay else 0
            while s.sent < due:
                t = self.now_ns()
                seq = s.sent
                self._send(self.frame(s, seq, t))
                if s.first_ns is None:
                    s.first_ns = t
                s.flow_first_ns.setdefault(seq % len(s.flows), t)
                s.last_ns = t
                s.sent += 1
            if s.sent >= s.count:
                s.done = True
            else:
                pending = True
        if pending:
            self._call = self.clock.callLater(self.tick, self._pace, t0, on_done)
        elif on_done is not None:
            on_done()

    def stop(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        for s in self.tx.values():
            s.done = True

    def receive(self, frame: bytes, t: int) -> None:
        tag = read_tag(frame)
        if tag is None:
            self.other_rx += 1
            return
        stream, flow, seq, sent = tag
        rx = self.rx.get(stream)
        if rx is None:
            rx = self.rx[stream] = RxStream()
        rx.record(flow, seq, sent, t)

    def report(self, flow_times: bool = False) -> dict:
        """Per-stream figures; ``flow_times`` adds each flow's first arrival (``rx_flow_first``:
        stream -> [[flow index, t_ns], ...])."""
        out = {"tx": {s: v.report() for s, v in self.tx.items()},
               "rx": {s: v.report() for s, v in self.rx.items()}, "other_rx": self.other_rx,
               "announced": self.announced}
        if flow_times:
            out["rx_flow_first"] = {s: [[f, t] for f, t in v.flow_first_ns.items()] for s, v in self.rx.items()}
        return out
