"""PACKET_IN traffic and response matching (RFC 8456 §5.1.2, §5.1.3).

A :class:`TrafficSwitch` is a :class:`SwitchProtocol` whose PACKET_OUT and
FLOW_MOD messages take a fast path: each is matched to the PACKET_IN that caused
it and booked once per request.  A :class:`Traffic` drives one trial over a set
of connected switches in one of four modes:

* ``serial``      one outstanding request in the whole emulator (the default for §5.1.2);
* ``per-switch``  one outstanding request per switch (cbench's latency mode), or ``window`` of them (the
                  rate search's calibration: the controller kept busy with a bounded queue);
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
from typing import Callable, Optional

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

from . import codec, fastpath, frames
from . import roles as rl
from .commands import (
    CLOSE_LOCAL,
    CLOSE_PROTOCOL,
    ROLE_WAIT_S,
    Announced,
    AnnounceDestinations,
    Connected,
    ConnectSwitches,
    TrafficResult,
)
from .params import TrafficParams  # noqa: F401  (re-exported: a trial's parameters)
from .protocol import PushProducer, SessionRules, SwitchProtocol, SwitchSpec
from .ramp import Ramp, RampLedger

KIND_PACKET_OUT, KIND_FLOW_MOD = 0, 1
_U32 = struct.Struct("!I")
_TAG = frames.TAG
SEQ_SPAN = 1 << 24        # requests per switch per trial before sequence numbers would repeat
BUCKETS = TrafficResult.BUCKETS
_ZERO_COUNTERS = array("q", bytes(8 * (fastpath.CTX_LEN - fastpath.NRX)))
CLOSE_GRACE = 2.0         # seconds a closing session may take to send what it has queued before it is reset


def ring_size(n_switches: int) -> int:
    """Slots per switch: 2**17 for up to 32 switches, fewer for more (about 4M slots per process)."""
    size = 1 << 17
    while size > (1 << 12) and size * n_switches > (1 << 22):
        size >>= 1
    return size


@implementer(IPushProducer)
class TrafficSwitch(PushProducer, SwitchProtocol):
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
        self.host_mac = frames.host_mac(spec.datapath_id)
        self.t_last_answer: Optional[int] = None   # the controller's answer to the host's announcement
        self.member = 0             # the cluster member this session is to (0 for a controller alone)
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
        self.bucket_sent = [0] * BUCKETS
        self.bucket_answered = array("q", bytes(8 * BUCKETS))
        self.bucket_rtt = array("q", bytes(8 * BUCKETS))
        self.bucket_max_rtt = array("q", bytes(8 * BUCKETS))
        self.ctx = array("q", bytes(8 * fastpath.CTX_LEN))    # the compiled path's inputs and counters

    def connectionMade(self):
        super().connectionMade()
        if hasattr(self.transport, "setTcpNoDelay"):
            self.transport.setTcpNoDelay(True)
        self.transport.registerProducer(self, True)

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
        self.bucket_sent[self.traffic.bucket(t)] += count
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
        native = fastpath.native
        while n - off >= 8:
            if native is not None:
                off = self._match_native(native, buf, off, t, tr)
                if n - off < 8:
                    break
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
                try:
                    self._response(buf, off, end, typ, t, tr)
                except (ValueError, IndexError) as exc:   # struct.error: fields past the message's end
                    self._buffer = b""
                    self.abort(CLOSE_PROTOCOL, f"malformed {codec.type_name(version, typ)} from the controller "
                                               f"({exc}): {bytes(buf[off:min(end, off + 32)]).hex()}")
                    return
            else:
                self.counters.rx += 1
                self.handle_frame(buf[off:end], t)
                if self.closed or self._closing_kind:
                    return
            off = end
        self._buffer = buf[off:] if off < n else b""

    def _match_native(self, native, buf, off: int, t: int, tr: "Traffic") -> int:
        """The compiled path over ``buf`` from ``off``: what it booked added to this switch's counters; returns
        the offset of the first message it left to Python."""
        c = self.ctx
        c[fastpath.T], c[fastpath.T_END], c[fastpath.T_START] = t, tr.t_end, tr.t_start
        off, lat = native.match(buf, off, c, self.t_sent, self.s_sent, self.done, self.bucket_answered,
                                self.bucket_rtt, self.bucket_max_rtt)
        if lat:
            tr.latencies.frombytes(lat)
        (nrx, in_td, late, dup, stale, opened, not_counted, rtt_sum, po, fm, unmatched, answered) = c[fastpath.COUNTERS]
        c[fastpath.COUNTERS] = _ZERO_COUNTERS
        self.nrx += nrx
        self.nrx_in_td += in_td
        self.late += late
        self.duplicates += dup
        self.stale += stale
        self.open -= opened
        self.not_counted += not_counted
        self.rtt_sum += rtt_sum
        self.by_kind[KIND_PACKET_OUT] += po
        self.by_kind[KIND_FLOW_MOD] += fm
        tr.unmatched += unmatched
        if answered and tr.closed_loop:
            tr.answered(self, answered)
        return off

    def _handle(self, msg, frame: bytes, t: int) -> None:
        if msg.name == "packet_out" and msg.fields.get("data", b"")[6:12] == self.host_mac:
            self.t_last_answer = t      # the controller sent the destination host's announcement on: it read it
        elif msg.name == "flow_mod" and codec.flow_mod_eth_src(frame) == self.host_mac:
            self.t_last_answer = t      # ... or installed a flow for that host
        super()._handle(msg, frame, t)

    def _response(self, buf, off: int, end: int, typ: int, t: int, tr: "Traffic") -> None:
        if typ == codec.PACKET_OUT:
            if end - off < tr.po_head:
                raise ValueError(f"{end - off} bytes, shorter than its fixed fields")
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
            b = tr.bucket(self.t_sent[i])
            self.bucket_answered[b] += 1
            self.bucket_rtt[b] += rtt
            if rtt > self.bucket_max_rtt[b]:
                self.bucket_max_rtt[b] = rtt
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
        self.nonce = (nonce if nonce is not None else 0x5EED0000 + trial) & 0xFFFFFFFF
        self.timeout_ns = int(params.response_timeout * 1e9)
        self.duration_ns = max(1, int(params.duration * 1e9))
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
        self._serial_owner: Optional[TrafficSwitch] = None     # serial mode: the switch of the one outstanding
        self._serial_seq = -1                                  # request, and its seq
        self.limit = limit          # closed-loop modes: stop after this many requests (preflight)
        seq_base = ((trial % 128) * SEQ_SPAN) & 0x7FFFFFFF
        for sw in switches:
            sw.flush = self.closed_loop and hasattr(sw.transport, "doWrite")
            sw.block.set_nonce(self.nonce)
            sw.reset_counts(seq_base)
            sw.traffic = self
            c = sw.ctx
            c[fastpath.TIMEOUT], c[fastpath.DURATION], c[fastpath.MASK] = self.timeout_ns, self.duration_ns, sw.mask
            c[fastpath.NONCE], c[fastpath.VERSION], c[fastpath.MAX_LEN] = self.nonce, sw.version, sw.max_message_len
            c[fastpath.PO_HEAD], c[fastpath.PO_ALEN_AT] = self.po_head, self.po_actions_len_at
            c[fastpath.FM_BID_AT], c[fastpath.COUNT_PO], c[fastpath.COUNT_FM] = self.fm_buffer_id_at, *self.counts

    def bucket(self, t_sent: int) -> int:
        """Which twentieth of Td a request sent at ``t_sent`` belongs to (the first or last when outside)."""
        b = (t_sent - self.t_start) * BUCKETS // self.duration_ns
        return 0 if b < 0 else BUCKETS - 1 if b >= BUCKETS else b

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
                self._send_one(sw, self.p.window)
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

    def _send_one(self, sw: TrafficSwitch, count: int = 1) -> None:
        if self.limit is not None:
            count = min(count, self.limit - sw.ntx)
            if count <= 0:
                return
        if sw.closed or not sw.send_requests(count):
            return
        if sw.timer is not None and sw.timer.active():
            sw.timer.reset(self.p.response_timeout)
        else:
            sw.timer = self.clock.callLater(self.p.response_timeout, self._per_switch_expired, sw)

    def _per_switch_expired(self, sw: TrafficSwitch) -> None:
        """Nothing answered on this switch for the response timeout: what it had outstanding is lost; it sends
        a whole window again."""
        sw.timer = None
        if self.sending:
            self._send_one(sw, self.p.window)

    def _spin(self) -> None:
        """Keep the reactor polling (epoll with a zero timeout) while sending, so a response is read
        as it lands instead of after the kernel wakes this process."""
        if self.sending:
            self.clock.callLater(0, self._spin)

    def answered(self, sw: TrafficSwitch, count: int = 1) -> None:
        """``count`` closed-loop requests were answered: send as many at once (serial: the next one)."""
        if not self.sending:
            return
        if self.p.mode == "serial":
            # the next request only once the outstanding one is answered: a late answer to an earlier request (its
            # timer already sent the next) arriving in the same read must not send a second (both paths alike: the
            # pure-Python one calls here once per answer, the compiled one once per receive buffer)
            if sw is self._serial_owner and sw.done[self._serial_seq & sw.mask] \
                    and sw.s_sent[self._serial_seq & sw.mask] == self._serial_seq:
                self._send_serial()
        else:
            self._send_one(sw, count)
            if self.limit is not None and self._limit_answered():
                self._stop_sending()      # a preflight ends once every switch's requests are answered

    def _limit_answered(self) -> bool:
        """With a request limit (the preflight's): every live switch has sent its limit and has none open."""
        live = self._live()
        return bool(live) and all(sw.ntx >= self.limit and sw.open == 0 for sw in live)

    # ------------------------------------------------------------------ open loop
    def _tick(self) -> None:
        if not self.sending:
            return
        if self.p.mode == "max":
            for sw in self.switches:
                if not sw.paused and not sw.closed:
                    sw.send_requests(self.p.max_batch)
            self.clock.callLater(self.p.tick, self._tick)
            return
        rate = self.p.rate
        elapsed = (self.now_ns() - self.t_start) / 1e9
        due = int(elapsed * rate) - self._virtual_sent
        live = self._live()
        # round-robin writes of ``batch``; when more is due than one round of those carries, the due requests are
        # spread evenly, one write per switch of up to ``max_batch`` (so paced trials reach the max mode's rates)
        chunk = min(self.p.max_batch, max(self.p.batch, -(-due // len(live)) if live else 0))
        tries = 0
        while due > 0 and live and tries < len(live):
            sw = live[self._rr % len(live)]
            self._rr += 1
            if sw.paused:
                tries += 1
                continue
            tries = 0
            k = sw.send_requests(min(due, chunk))
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
    def result(self) -> TrafficResult:
        sws = self.switches
        lost = [sw for sw in sws if sw.closed]

        def total(name):
            return sum(getattr(sw, name) for sw in sws)

        def buckets(name):
            return tuple(map(sum, zip(*(getattr(sw, name) for sw in sws))))
        return TrafficResult(
            mode=self.p.mode, duration_s=self.p.duration, response_timeout_s=self.p.response_timeout,
            offered_rate_target=self.p.rate, t_start_ns=self.t_start, t_end_ns=self.t_end,
            latencies_ns=self.latencies.tobytes(), bucket_sent=buckets("bucket_sent"),
            bucket_answered=buckets("bucket_answered"), bucket_rtt_ns=buckets("bucket_rtt"),
            bucket_max_rtt_ns=tuple(map(max, zip(*(sw.bucket_max_rtt for sw in sws)))),
            ntx=total("ntx"), nrx=total("nrx"), nrx_in_td=total("nrx_in_td"), late=total("late"),
            duplicates=total("duplicates"), stale=total("stale"), overrun=total("overrun"),
            not_counted=total("not_counted"), unmatched=self.unmatched,
            deferred_by_backpressure=self.deferred_by_backpressure, rtt_sum_ns=total("rtt_sum"),
            packet_out=sum(sw.by_kind[KIND_PACKET_OUT] for sw in sws),
            flow_mod=sum(sw.by_kind[KIND_FLOW_MOD] for sw in sws), switches=len(sws), sessions_lost=len(lost),
            lost_detail="; ".join(f"switch {sw.spec.datapath_id}: {sw.close_kind}" for sw in lost[:3]))


# --------------------------------------------------------------------------- a shard's switches

class SwitchSet(RampLedger):
    """One shard's traffic switches, connected through the ramp and kept for several trials."""

    def __init__(self, reactor, cmd: ConnectSwitches, now_ns: Callable[[], int] = time.monotonic_ns,
                 source_base: Optional[str] = "127.0.0.1"):
        self.reactor = reactor
        self.cmd = cmd
        self.p = cmd.params
        self.now_ns = now_ns
        self.switches: list = []       # the sessions that became ready, by datapath id once connected
        self.sessions: list = []       # every session the ramp opened, ready or not
        self._abort_call = None
        super().__init__()
        self.template = frames.build_template(self.p.frame_kind, self.p.frame_size)
        self._ring = ring_size(len(cmd.datapath_ids))
        members = cmd.controllers()
        self.cluster = len(members) > 1
        self.roles: dict = {}          # a cluster's switches: dpid -> the RoleTable its sessions share
        if self.cluster:
            keys = [(dpid, i) for dpid in cmd.datapath_ids for i in range(len(members))]
            self.ramp = Ramp.from_params(cmd.ramp, reactor, members[0], keys, self._build, self, settle_first=True,
                                         source_base=source_base, address_of=lambda key: members[key[1]])
        else:
            self.ramp = Ramp.from_params(cmd.ramp, reactor, members[0], cmd.datapath_ids, self._build, self,
                                         settle_first=True, source_base=source_base)

    # ------------------------------------------------------------------ connecting
    def _build(self, index: int, key) -> TrafficSwitch:
        dpid, member = key if self.cluster else (key, 0)
        kwargs = {"roles": self.roles.setdefault(dpid, rl.RoleTable())} if self.cluster else {}
        sw = TrafficSwitch(SwitchSpec.simple(dpid, tuple(self.cmd.versions), n_ports=2), self.reactor, self.ramp,
                           ring=self._ring, rules=SessionRules(handshake_timeout=self.cmd.ramp.handshake_timeout),
                           now_ns=self.now_ns,
                           **kwargs)
        sw.member = member
        self.sessions.append(sw)
        return sw

    def connect(self) -> Deferred:
        def done(_):
            self.switches.sort(key=lambda sw: (sw.spec.datapath_id, sw.member))
            if self.cluster and not self.failures:
                return self._roles_settled()
            return self._connected()
        return self.ramp.start().addCallback(done)

    def _connected(self) -> Connected:
        unmastered = tuple(sorted(d for d, t in self.roles.items() if t.master() is None))
        return Connected(connected=len(self.switches), failures=tuple(self.failures), retries=self.ramp.retried,
                         masters=len(self.roles) - len(unmastered), unmastered=unmastered)

    def _roles_settled(self) -> Deferred:
        """A cluster's switches, once each has a MASTER session or :data:`ROLE_WAIT_S` has passed (a cluster of
        EQUAL members, Faucet's, sends no ROLE_REQUEST: its switches keep their first EQUAL session)."""
        done: Deferred = Deferred()
        began = self.now_ns()

        def check():
            waiting = any(t.master() is None for t in self.roles.values())
            if not waiting or self.now_ns() - began >= ROLE_WAIT_S * 1e9:
                done.callback(self._connected())
            else:
                self.reactor.callLater(0.01, check)
        check()
        return done

    def session_ready(self, session: TrafficSwitch) -> None:
        self.switches.append(session)

    def live(self) -> list:
        """The sessions that send: one per switch (a cluster's switch: its MASTER session, else its first EQUAL
        one, never a SLAVE), still open."""
        live = [sw for sw in self.switches if not sw.closed]
        if not self.cluster:
            return live
        out, seen = [], set()
        for sw in sorted(live, key=lambda sw: (sw.roles.role_of(sw) != rl.MASTER, sw.member)):
            dpid = sw.spec.datapath_id
            if dpid not in seen and sw.roles.role_of(sw) != rl.SLAVE:
                seen.add(dpid)
                out.append(sw)
        return sorted(out, key=lambda sw: sw.spec.datapath_id)

    def refresh_block(self, sw: TrafficSwitch) -> None:
        """(Re)build a switch's PACKET_IN block when it has none or the controller changed miss_send_len."""
        if sw.block is None or sw.block.miss_send_len != sw.miss_send_len:
            sw.block = frames.PacketInBlock(sw.version, sw.spec.datapath_id, self.template, self.p.macs,
                                            nonce=0, buffered=self.p.buffered, miss_send_len=sw.miss_send_len)

    # ------------------------------------------------------------------ before the trials
    def announce(self, cmd: AnnounceDestinations) -> Deferred:
        """Each switch's destination host (port 2) sends a gratuitous ARP, unbuffered, again every
        ``retry`` s until the controller answers on that session (it has read it: a learning
        controller floods the announcement or installs a flow), or ``timeout``."""
        done: Deferred = Deferred()
        began = self.now_ns()
        pending = {sw: None for sw in self.live()}
        announced = len(pending)
        sent = [0]

        def send(sw):
            frame = frames.learn_frame(sw.spec.datapath_id)
            sw.send(codec.encode_packet_in(sw.version, sw.next_xid(), codec.NO_BUFFER, frames.HOST_PORT, frame),
                    "packet_in")
            sent[0] += 1
            pending[sw] = self.now_ns()

        def check():
            now = self.now_ns()
            for sw, t_sent in list(pending.items()):
                if sw.closed:
                    continue
                if sw.t_last_answer is not None and sw.t_last_answer >= began:
                    del pending[sw]
                elif now - t_sent >= cmd.retry * 1e9:
                    send(sw)
            left = [sw for sw in pending if not sw.closed]
            if not left or now - began >= cmd.timeout * 1e9:
                unconfirmed = tuple(sorted(sw.spec.datapath_id for sw in pending))
                lost = [sw for sw in pending if sw.closed]
                done.callback(Announced(sent=sent[0], confirmed=announced - len(unconfirmed),
                                        unconfirmed=unconfirmed, waited_s=(now - began) / 1e9,
                                        lost_detail="; ".join(f"switch {sw.spec.datapath_id}: {sw.close_kind} "
                                                              f"({sw.close_detail})" for sw in lost[:3])))
            else:
                self.reactor.callLater(0.005, check)

        for sw in list(pending):
            send(sw)
        self.reactor.callLater(0, check)
        return done

    def close_all(self) -> Deferred:
        """The end of the trials: no further connect, and every session closed, those still in their handshake
        too (FIN after what is queued; reset, whatever is left, :data:`CLOSE_GRACE` s later).  Fires once every
        session is gone."""
        self.ramp.close()
        for sw in self.sessions:
            if not sw.closed and sw.transport is not None:
                sw.abort(CLOSE_LOCAL, "end of run")
        gone = self.ramp.gone()
        if not gone.called:
            self._abort_call = self.reactor.callLater(CLOSE_GRACE, self._abort_rest)
            gone.addBoth(self._gone)
        return gone

    def _abort_rest(self) -> None:
        """A controller that reads nothing never lets a FIN out: reset what is still open."""
        self._abort_call = None
        for sw in self.sessions:
            if not sw.closed and sw.transport is not None:
                sw.transport.abortConnection()

    def _gone(self, result):
        if self._abort_call is not None and self._abort_call.active():
            self._abort_call.cancel()
        self._abort_call = None
        return result
