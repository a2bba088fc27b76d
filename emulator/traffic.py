"""PACKET_IN traffic and response matching (RFC 8456 §5.1.2, §5.1.3).

A :class:`TrafficSwitch` is a :class:`SwitchProtocol` whose PACKET_OUT and
FLOW_MOD messages take a fast path: each is matched to the PACKET_IN that caused
it and booked once per request.  A :class:`Traffic` drives one trial over a set
of connected switches in one of four modes:

* ``serial``      one outstanding request in the whole emulator (the default for §5.1.2);
* ``per-switch``  one outstanding request per switch (cbench's latency mode);
* ``paced``       an offered rate spread over the switches, open loop;
* ``max``         open loop, keeping every session's send buffer full.

Matching (a request is the seq in its xid, buffer_id and frame tag):

* a PACKET_OUT or FLOW_MOD with a buffer_id: the buffer_id is the request's seq;
* an unbuffered PACKET_OUT: the request tag (nonce, seq) in the frame it carries;
* an unbuffered FLOW_MOD: the eth_src it matches names the MAC index, and the
  oldest request still open from that MAC is the one answered.

The first valid response to a request counts; another one for the same request is
a duplicate; one for no request of this trial is stale (an earlier trial's, or
unmatched).  A response after the response timeout is late: its request is lost
(it counts against the loss ratio), though it still counts as a response received
within Td for the rate when it arrived before Td ended.

Each switch books requests in rings indexed by ``seq & mask``: send time, seq and
an answered flag.  A request still open when its slot is reused is counted as an
overrun (lost), and reported, since it means the ring was too small.
"""

from __future__ import annotations

import struct
import time
from array import array
from dataclasses import dataclass
from typing import Callable, Optional

from twisted.internet.defer import Deferred
from zope.interface import implementer
from twisted.internet.interfaces import IPushProducer

from . import codec, frames
from .protocol import SessionListener, SwitchProtocol, SwitchSpec

MODES = ("serial", "per-switch", "paced", "max")
RESPONSE_TYPES = ("either", "packet_out", "flow_mod")
KIND_PACKET_OUT, KIND_FLOW_MOD = 0, 1
_U32 = struct.Struct("!I")
_TAG = frames.TAG
SEQ_SPAN = 1 << 24        # requests per switch per trial before sequence numbers would repeat


def ring_size(n_switches: int) -> int:
    """Slots per switch: 2**17 for up to 32 switches, fewer for more (about 4M slots per process)."""
    size = 1 << 17
    while size > (1 << 12) and size * n_switches > (1 << 22):
        size >>= 1
    return size


@dataclass
class TrafficParams:
    mode: str = "serial"
    duration: float = 10.0            # Td, seconds
    response_timeout: float = 1.0     # seconds; a request unanswered by then is lost
    rate: Optional[float] = None      # offered messages/s over the whole emulator (paced mode)
    batch: int = 64                   # messages per write in the open-loop modes
    response_type: str = "either"
    busy_poll: bool = True            # closed-loop modes: poll instead of sleeping between responses
    tick: float = 0.0                 # max mode: seconds between send rounds (0: every reactor turn)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"traffic mode must be one of {', '.join(MODES)} (got {self.mode!r})")
        if self.response_type not in RESPONSE_TYPES:
            raise ValueError(f"response type must be one of {', '.join(RESPONSE_TYPES)} (got {self.response_type!r})")
        if not self.duration > 0:
            raise ValueError(f"trial duration must be positive (got {self.duration})")
        if not self.response_timeout > 0:
            raise ValueError(f"response timeout must be positive (got {self.response_timeout})")
        if self.mode == "paced" and not (self.rate and self.rate > 0):
            raise ValueError(f"paced mode needs a positive offered rate (got {self.rate})")
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1 (got {self.batch})")


@implementer(IPushProducer)
class TrafficSwitch(SwitchProtocol):
    """An emulated switch that sends PACKET_INs and matches the responses."""

    def __init__(self, spec: SwitchSpec, clock, listener=None, ring: int = 1 << 12, **kwargs):
        super().__init__(spec, clock, listener, **kwargs)
        self.mask = ring - 1
        self.t_sent = array("q", bytes(8 * ring))
        self.s_sent = array("q", [-1]) * ring
        self.done = bytearray(b"\x01") * ring
        self.traffic: Optional["Traffic"] = None
        self.block: Optional[frames.PacketInBlock] = None
        self.paused = False
        self.flush = False
        self.mac_prefix = frames.src_mac(spec.datapath_id, 0)[:3]
        self.reset_counts(0)

    # ------------------------------------------------------------------ per-trial state
    def reset_counts(self, seq_base: int) -> None:
        """A new trial: no request of an earlier trial may still match (its answers are stale)."""
        ring = self.mask + 1
        self.s_sent = array("q", [-1]) * ring
        self.done = bytearray(b"\x01") * ring
        self.next_seq = self.seq_base = seq_base
        self.ntx = self.nrx = self.nrx_in_td = self.late = self.duplicates = self.stale = 0
        self.overrun = self.open = self.not_counted = 0
        self.rtt_sum = 0
        self.by_kind = [0, 0]
        self.mac_cursor: dict = {}
        self.timer = None

    def connectionMade(self):
        super().connectionMade()
        if hasattr(self.transport, "setTcpNoDelay"):
            self.transport.setTcpNoDelay(True)
        self.transport.registerProducer(self, True)

    # IPushProducer: the transport pauses us when its buffer passes its high-water mark.
    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False

    def stopProducing(self):
        self.paused = True

    # ------------------------------------------------------------------ sending
    def send_requests(self, count: int) -> int:
        """Write ``count`` PACKET_INs in one write; their send time is that write's timestamp."""
        seq = self.next_seq
        if seq + count > self.seq_base + SEQ_SPAN:
            count = self.seq_base + SEQ_SPAN - seq
            if count <= 0:
                return 0
        data = self.block.take(seq, count)
        t = self.now_ns()
        self.transport.write(data)
        if self.flush:
            # Closed loop: hand the request to the kernel now rather than on the reactor's next
            # turn (doWrite is the transport's IWriteDescriptor entry point).
            self.transport.doWrite()
        self.t_last_tx = t
        self.next_seq = seq + count
        self.ntx += count
        self.open += count
        mask = self.mask
        if count == 1:
            a = seq & mask
            if not self.done[a]:
                self.overrun += 1
                self.open -= 1
            self.t_sent[a] = t
            self.s_sent[a] = seq
            self.done[a] = 0
            return 1
        ring = mask + 1
        a = seq & mask
        left = count
        while left:
            k = min(left, ring - a)
            still_open = k - self.done.count(1, a, a + k)
            if still_open:
                self.overrun += still_open
                self.open -= still_open
            self.t_sent[a:a + k] = array("q", [t]) * k
            self.s_sent[a:a + k] = array("q", range(seq, seq + k))
            self.done[a:a + k] = bytes(k)
            seq += k
            left -= k
            a = 0
        return count

    # ------------------------------------------------------------------ receiving
    def dataReceived(self, data: bytes):
        tr = self.traffic
        if tr is None:
            super().dataReceived(data)
            return
        t = self.now_ns()
        self.t_last_rx = t
        buf = self._buffer + data if self._buffer else data
        n = len(buf)
        off = 0
        version = self.version
        limit = self.max_message_len
        while n - off >= 8:
            length = (buf[off + 2] << 8) | buf[off + 3]
            if length < 8 or length > limit:
                self._buffer = b""
                self.abort("protocol error", f"framing error: OpenFlow length field {length} at type {buf[off + 1]}")
                return
            end = off + length
            if end > n:
                break
            typ = buf[off + 1]
            if (typ == codec.PACKET_OUT or typ == codec.FLOW_MOD) and buf[off] == version:
                self._response(buf, off, end, typ, t, tr)
            else:
                frame = buf[off:end]
                self.counters.rx += 1
                self._handle(codec.decode(frame), frame, t)
                if self.closed or self._closing_kind:
                    return
            off = end
        self._buffer = buf[off:] if off < n else b""

    def _response(self, buf, off: int, end: int, typ: int, t: int, tr: "Traffic") -> None:
        if typ == codec.PACKET_OUT:
            kind = KIND_PACKET_OUT
            seq = _U32.unpack_from(buf, off + 8)[0]
            if seq == codec.NO_BUFFER:
                at = off + tr.po_actions_len_at
                tag_at = off + tr.po_head + ((buf[at] << 8) | buf[at + 1]) + frames.TAG_AT
                if tag_at + 8 > end:
                    tr.unmatched += 1
                    return
                nonce, seq = _TAG.unpack_from(buf, tag_at)
                if nonce != tr.nonce:
                    self.stale += 1
                    return
        else:
            kind = KIND_FLOW_MOD
            at = off + tr.fm_buffer_id_at
            if at + 4 > end:
                tr.unmatched += 1
                return
            seq = _U32.unpack_from(buf, at)[0]
            if seq == codec.NO_BUFFER:
                mac = codec.flow_mod_eth_src(buf[off:end])
                if mac is None or mac[:3] != self.mac_prefix:
                    tr.unmatched += 1
                    return
                seq = self._oldest_open(frames.mac_index(mac))
                if seq is None:
                    self.duplicates += 1
                    return
        if not tr.counts[kind]:
            self.not_counted += 1
            return
        self.answer(seq, t, kind)

    def _oldest_open(self, index: int) -> Optional[int]:
        """The oldest open request from MAC ``index`` (request seq uses index seq % n_macs)."""
        n = self.block.n
        if index >= n:
            return None
        cursor = self.mac_cursor.get(index)
        if cursor is None:
            first = self.seq_base + ((index - self.seq_base) % n)
            cursor = first
        mask = self.mask
        while cursor < self.next_seq:
            i = cursor & mask
            if self.s_sent[i] == cursor and not self.done[i]:
                self.mac_cursor[index] = cursor
                return cursor
            cursor += n
        self.mac_cursor[index] = cursor
        return None

    def answer(self, seq: int, t: int, kind: int) -> None:
        i = seq & self.mask
        if self.s_sent[i] != seq:
            self.stale += 1
            return
        if self.done[i]:
            self.duplicates += 1
            return
        self.done[i] = 1
        self.open -= 1
        tr = self.traffic
        rtt = t - self.t_sent[i]
        self.by_kind[kind] += 1
        if t <= tr.t_end:
            self.nrx_in_td += 1  # the rate counts every first response received within Td
        if rtt > tr.timeout_ns:
            self.late += 1       # answered, but after the response timeout: the request is lost
        else:
            self.nrx += 1
            self.rtt_sum += rtt
            tr.latencies.append(rtt)
        if tr.closed_loop:
            tr.answered(self)


class Traffic:
    """One trial over connected switches: send for Td, drain up to the response timeout, report."""

    def __init__(self, switches: list, params: TrafficParams, clock, now_ns: Callable[[], int] = time.monotonic_ns,
                 trial: int = 1, nonce: Optional[int] = None, limit: Optional[int] = None):
        if not switches:
            raise ValueError("a traffic trial needs at least one connected switch")
        self.switches = switches
        self.p = params
        self.clock = clock
        self.now_ns = now_ns
        self.nonce = nonce if nonce is not None else (0x5EED0000 + trial) & 0xFFFFFFFF
        self.timeout_ns = int(params.response_timeout * 1e9)
        self.closed_loop = params.mode in ("serial", "per-switch")
        self.counts = (params.response_type in ("either", "packet_out"), params.response_type in ("either", "flow_mod"))
        version = switches[0].version
        self.po_head = codec.PACKET_OUT_HEAD[version]
        self.po_actions_len_at = codec.PACKET_OUT_ACTIONS_LEN_AT[version]
        self.fm_buffer_id_at = codec.FLOW_MOD_BUFFER_ID_AT[version]
        self.latencies = array("q")
        self.unmatched = 0
        self.deferred_by_backpressure = 0
        self.t_start = self.t_end = 0
        self.sending = False
        self.done: Deferred = Deferred()
        self._rr = 0
        self._virtual_sent = 0
        self._serial_timer = None
        self.limit = limit          # closed-loop modes: stop after this many requests (preflight)
        seq_base = ((trial % 128) * SEQ_SPAN) & 0x7FFFFFFF
        for sw in switches:
            sw.flush = self.closed_loop and hasattr(sw.transport, "doWrite")
            sw.block.set_nonce(self.nonce)
            sw.reset_counts(seq_base)
            sw.traffic = self

    # ------------------------------------------------------------------ start / stop
    def start_at(self, t_start_ns: int) -> Deferred:
        """Start sending at the monotonic instant ``t_start_ns`` (shards share the clock)."""
        delay = max(0.0, (t_start_ns - self.now_ns()) / 1e9)
        self.clock.callLater(delay, self._begin)
        return self.done

    def _begin(self) -> None:
        self.t_start = self.now_ns()
        self.t_end = self.t_start + int(self.p.duration * 1e9)
        self.sending = True
        self.clock.callLater(self.p.duration, self._stop_sending)
        mode = self.p.mode
        if self.closed_loop and self.p.busy_poll:
            self._spin()
        if mode == "serial":
            self._send_serial()
        elif mode == "per-switch":
            for sw in self.switches:
                self._send_one(sw)
        else:
            self._tick()

    def _stop_sending(self) -> None:
        if not self.sending:
            return
        self.sending = False
        self.t_end = min(self.t_end, self.now_ns())
        self._drain_deadline = self.now_ns() + self.timeout_ns
        self._drain()

    def _drain(self) -> None:
        if self.done.called:
            return
        if any(sw.open for sw in self.switches if not sw.closed) and self.now_ns() < self._drain_deadline:
            self.clock.callLater(0.005, self._drain)
            return
        self._finish()

    def _finish(self) -> None:
        for sw in self.switches:
            if sw.timer is not None and sw.timer.active():
                sw.timer.cancel()
            sw.traffic = None
        if self._serial_timer is not None and self._serial_timer.active():
            self._serial_timer.cancel()
        self.done.callback(self.result())

    # ------------------------------------------------------------------ closed loop
    def _live(self):
        return [sw for sw in self.switches if not sw.closed]

    def _send_serial(self) -> None:
        if self.limit is not None and self._rr >= self.limit:
            self._stop_sending()
            return
        switches = self.switches
        n = len(switches)
        for _ in range(n):
            sw = switches[self._rr % n]
            self._rr += 1
            if not sw.closed:
                break
        else:
            self._stop_sending()  # every session is gone
            return
        if sw.send_requests(1):
            self._serial_owner = sw
            self._serial_seq = sw.next_seq - 1
            if self._serial_timer is not None and self._serial_timer.active():
                self._serial_timer.reset(self.p.response_timeout)
            else:
                self._serial_timer = self.clock.callLater(self.p.response_timeout, self._serial_expired)

    def _serial_expired(self) -> None:
        self._serial_timer = None
        if self.sending:
            self._send_serial()

    def _send_one(self, sw: TrafficSwitch) -> None:
        if self.limit is not None and sw.ntx >= self.limit:
            return
        if sw.closed or not sw.send_requests(1):
            return
        if sw.timer is not None and sw.timer.active():
            sw.timer.reset(self.p.response_timeout)
        else:
            sw.timer = self.clock.callLater(self.p.response_timeout, self._per_switch_expired, sw)

    def _per_switch_expired(self, sw: TrafficSwitch) -> None:
        sw.timer = None
        if self.sending:
            self._send_one(sw)

    def _spin(self) -> None:
        """Keep the reactor polling (epoll with a zero timeout) while sending, so a response is read
        as it lands instead of after the kernel wakes this process."""
        if self.sending:
            self.clock.callLater(0, self._spin)

    def answered(self, sw: TrafficSwitch) -> None:
        """A closed-loop request was answered: send the next one at once."""
        if not self.sending:
            return
        if self.p.mode == "serial":
            if sw is getattr(self, "_serial_owner", None):
                self._send_serial()
        else:
            self._send_one(sw)

    # ------------------------------------------------------------------ open loop
    def _tick(self) -> None:
        if not self.sending:
            return
        if self.p.mode == "max":
            for sw in self.switches:
                if not sw.paused and not sw.closed:
                    sw.send_requests(self.p.batch)
            self.clock.callLater(self.p.tick, self._tick)
            return
        rate = self.p.rate
        elapsed = (self.now_ns() - self.t_start) / 1e9
        due = int(elapsed * rate) - self._virtual_sent
        live = self._live()
        tries = 0
        while due > 0 and live and tries < len(live):
            sw = live[self._rr % len(live)]
            self._rr += 1
            if sw.paused:
                tries += 1
                continue
            tries = 0
            k = sw.send_requests(min(due, self.p.batch))
            if not k:
                tries += 1
                continue
            due -= k
            self._virtual_sent += k
        if due > 0:  # every session pushed back: these messages were not offered
            self.deferred_by_backpressure += due
            self._virtual_sent += due
        wait = (self._virtual_sent + 1) / rate - (self.now_ns() - self.t_start) / 1e9
        self.clock.callLater(max(0.0, wait), self._tick)

    # ------------------------------------------------------------------ result
    def result(self) -> dict:
        sws = self.switches
        total = lambda name: sum(getattr(sw, name) for sw in sws)  # noqa: E731
        return {
            "mode": self.p.mode, "duration_s": self.p.duration, "response_timeout_s": self.p.response_timeout,
            "offered_rate_target": self.p.rate, "switches": len(sws),
            "sessions_lost": sum(1 for sw in sws if sw.closed),
            "t_start_ns": self.t_start, "t_end_ns": self.t_end,
            "ntx": total("ntx"), "nrx": total("nrx"), "nrx_in_td": total("nrx_in_td"), "late": total("late"),
            "duplicates": total("duplicates"), "stale": total("stale"), "overrun": total("overrun"),
            "not_counted": total("not_counted"), "unmatched": self.unmatched,
            "deferred_by_backpressure": self.deferred_by_backpressure,
            "rtt_sum_ns": total("rtt_sum"),
            "packet_out": sum(sw.by_kind[KIND_PACKET_OUT] for sw in sws),
            "flow_mod": sum(sw.by_kind[KIND_FLOW_MOD] for sw in sws),
            "latencies_ns": self.latencies,
        }


# --------------------------------------------------------------------------- a shard's switches

class SwitchSet(SessionListener):
    """Connects ``count`` traffic switches to a controller and keeps them for several trials."""

    def __init__(self, reactor, host: str, port: int, datapath_ids: list, versions: tuple,
                 frame_kind: str = "ipv4", frame_size: int = 128, n_macs: int = 1000, buffered: bool = True,
                 ramp_group: int = 25, handshake_timeout: float = 10.0, source: str = "127.0.0.1",
                 now_ns: Callable[[], int] = time.monotonic_ns):
        self.reactor = reactor
        self.host, self.port = host, port
        self.datapath_ids = list(datapath_ids)
        self.versions = tuple(versions)
        self.frame_kind, self.frame_size, self.n_macs, self.buffered = frame_kind, frame_size, n_macs, buffered
        self.ramp_group = ramp_group
        self.handshake_timeout = handshake_timeout
        self.source = source
        self.now_ns = now_ns
        self.switches: list = []
        self.failures: list = []
        self.ready: Deferred = Deferred()
        self._pending = 0
        self._next = 0
        self._ring = ring_size(len(self.datapath_ids))
        self.template = frames.build_template(frame_kind, frame_size)

    # ------------------------------------------------------------------ connecting
    def connect(self) -> Deferred:
        self._open_group()
        return self.ready

    def _open_group(self) -> None:
        from twisted.internet.protocol import ClientFactory

        group = self.datapath_ids[self._next:self._next + self.ramp_group]
        self._next += len(group)
        self._pending = len(group)
        for dpid in group:
            spec = SwitchSpec.simple(dpid, self.versions, n_ports=2)
            owner = self

            class _Factory(ClientFactory):
                def buildProtocol(self, addr, spec=spec):
                    sw = TrafficSwitch(spec, owner.reactor, owner, ring=owner._ring,
                                       handshake_timeout=owner.handshake_timeout, now_ns=owner.now_ns)
                    sw.factory = self
                    return sw

                def clientConnectionFailed(self, connector, reason, dpid=dpid):
                    owner._failed(dpid, f"connect failed: {reason.getErrorMessage()}")

            self.reactor.connectTCP(self.host, self.port, _Factory(), timeout=5, bindAddress=(self.source, 0))

    def session_ready(self, session: TrafficSwitch) -> None:
        self.switches.append(session)
        self._settled()

    def _failed(self, dpid: int, reason: str) -> None:
        self.failures.append({"datapath_id": dpid, "reason": reason})
        self._settled()

    def session_closed(self, session, kind: str, detail: str) -> None:
        if not session.ready:
            self._failed(session.spec.datapath_id, f"{kind}: {detail}")

    def _settled(self) -> None:
        self._pending -= 1
        if self._pending > 0:
            return
        if self._next < len(self.datapath_ids):
            self._open_group()
        elif not self.ready.called:
            self.switches.sort(key=lambda sw: sw.spec.datapath_id)
            self.ready.callback({"connected": len(self.switches), "failures": self.failures})

    def refresh_block(self, sw: TrafficSwitch) -> None:
        """(Re)build a switch's PACKET_IN block when it has none or the controller changed miss_send_len."""
        if sw.block is None or sw.block.miss_send_len != sw.miss_send_len:
            sw.block = frames.PacketInBlock(sw.version, sw.spec.datapath_id, self.template, self.n_macs,
                                            nonce=0, buffered=self.buffered, miss_send_len=sw.miss_send_len)

    # ------------------------------------------------------------------ before the trials
    def learn_destinations(self) -> int:
        """Each switch sends a gratuitous ARP from its destination host (port 2), unbuffered."""
        sent = 0
        for sw in self.switches:
            if sw.closed:
                continue
            frame = frames.learn_frame(sw.spec.datapath_id)
            sw.send(codec.encode_packet_in(sw.version, sw.next_xid(), codec.NO_BUFFER, frames.HOST_PORT, frame),
                    "packet_in")
            sent += 1
        return sent

    def close_all(self) -> None:
        for sw in self.switches:
            if not sw.closed and sw.transport is not None:
                sw.abort("closed by emulator", "end of run")
