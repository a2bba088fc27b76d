"""The emulator's front door: every request the harness makes of an emulator shard, declared.

Each request is a frozen dataclass (a :class:`Command`) carrying its family's parameter
object whole (:mod:`emulator.params`); each names its typed response, and each response
knows how to ``merge`` the answers of several shards.  The shard side is a table of
responders (:mod:`emulator.shard`); the harness side calls ``ShardPool.call(command)``
(:mod:`emulator.pool`) and gets the merged response.  The shape is Twisted AMP's
``Command``/``responder``, carried over execnet channels.

Long commands may send :class:`Event` s before their answer (a capacity ramp's progress).
A command with ``answered = False`` is a notification (``StopRamp``).  Every failure, on
either side, is one :class:`EmulatorError`.

Pure: standard library only; both sides import it.
"""

from __future__ import annotations

import dataclasses
import sys
from array import array
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from .params import AsyncParams, CapacityParams, FabricParams, RampParams, ScreenParams, TrafficParams

# --------------------------------------------------------------------------- shared vocabulary

# How a session ended or failed.  LOCAL failures are the emulator's own limits, never the controller's.
CLOSE_BY_PEER = "closed"                    # FIN from the controller
CLOSE_RESET = "reset"                       # RST from the controller
CLOSE_HANDSHAKE_TIMEOUT = "handshake timeout"
CLOSE_VERSION = "version negotiation failed"
CLOSE_PROTOCOL = "protocol error"           # the controller sent bytes that are not OpenFlow
CLOSE_LOCAL = "closed by emulator"
CLOSE_ECHO_TIMEOUT = "echo timeout"         # the keep-alive's ECHO_REQUEST went unanswered (a frozen controller)
FAIL_REFUSED = "refused"
FAIL_CONNECT_TIMEOUT = "connect timeout"
FAIL_ECHO_TIMEOUT = "echo timeout"
FAIL_EARLIER_DROPPED = "earlier sessions dropped"
FAIL_LOCAL = "emulator resource limit"

# Why a capacity ramp stopped.
STOP_CAP = "session cap reached"
STOP_DROPPING = "controller started dropping sessions"
STOP_LOCAL = "emulator resource limit reached"
STOP_REQUESTED = "ramp stopped on request (another shard saw the controller drop sessions)"


class EmulatorError(RuntimeError):
    """The emulator could not do what it was asked; the message says which shard and why."""


# --------------------------------------------------------------------------- wire form

_WIRE: dict = {}


def wire(cls):
    """Register a dataclass so it crosses the channel as itself."""
    _WIRE[cls.__name__] = cls
    return cls


for _cls in (AsyncParams, CapacityParams, FabricParams, RampParams, ScreenParams, TrafficParams):
    wire(_cls)


def to_wire(obj):
    """Builtins only (what execnet channels carry): a dataclass becomes a dict tagged with its name."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"__t__": type(obj).__name__}
        for f in dataclasses.fields(obj):
            out[f.name] = to_wire(getattr(obj, f.name))
        return out
    if isinstance(obj, tuple):
        return tuple(to_wire(x) for x in obj)
    if isinstance(obj, list):
        return [to_wire(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_wire(v) for k, v in obj.items()}
    if isinstance(obj, array):
        return obj.tobytes()
    return obj


def from_wire(obj):
    if isinstance(obj, dict):
        name = obj.get("__t__")
        values = {k: from_wire(v) for k, v in obj.items() if k != "__t__"}
        if name is None:
            return values
        cls = _WIRE.get(name)
        if cls is None:
            raise EmulatorError(f"unknown message type {name!r} on the emulator channel (mismatched versions?)")
        return cls(**values)
    if isinstance(obj, (list, tuple)):
        return type(obj)(from_wire(x) for x in obj)
    return obj


def samples(raw) -> array:
    """An int64 array from the bytes a response carries."""
    out = array("q")
    out.frombytes(raw if isinstance(raw, (bytes, bytearray)) else bytes(raw))
    return out


# --------------------------------------------------------------------------- responses


class Response:
    @classmethod
    def merge(cls, answers: list):
        """One response from every shard's answer."""
        if len(answers) != 1:
            raise EmulatorError(f"{cls.__name__} comes from one shard, got {len(answers)} answers")
        return answers[0]


@wire
@dataclass(frozen=True)
class Done(Response):
    @classmethod
    def merge(cls, answers: list):
        return cls()


@wire
@dataclass(frozen=True)
class ShardInfo(Response):
    pid: int
    hostname: str
    boot_id: str                 # shards with the harness's boot id share its CLOCK_MONOTONIC
    monotonic_ns: int
    nofile_soft: int
    nofile_hard: int
    version: str
    python: str
    packet_in_path: str = "python"   # emulator.fastpath.IMPL: compiled or python


@wire
@dataclass(frozen=True)
class FirstFailure:
    session: int                 # the datapath id of the switch whose session failed first
    kind: str
    detail: str
    after_s: float               # from the start of its shard's ramp
    phase: str
    established_before: int      # sessions of its shard ready before it
    at_ns: int = 0               # when (monotonic clock of its host)


@wire
@dataclass(frozen=True)
class SessionsResult(Response):
    """One Control Sessions Capacity trial (merged: every shard's)."""
    kept: int
    established: int
    established_before_failure: int
    attempted: int
    failed: int
    dropped_after_ready: int
    failures: dict               # failure kind -> count
    first_failure: Optional[FirstFailure]
    stop_reason: str
    ramp_s: Optional[float]
    setup_s: Optional[float]     # ramp start to the last session ready
    rss_bytes: Optional[int]     # emulator resident memory at the end of the ramp (sum over shards)
    rss_growth_bytes: Optional[int]
    echo_rtt_ns: bytes           # every ECHO round trip of the hold, int64 ns
    shards: int = 1
    ready_ns: bytes = b""        # when each session became ready (int64 ns), to count those before a failure
    ccn: int = 0                 # sessions established (answered after the handshake) when the first was lost
    first_loss_ns: int = 0       # when an established session was first lost (closed or reset); 0: none was
    new_failures: dict = field(default_factory=dict)   # failure kind -> count, sessions never established
    unanswered: int = 0          # established sessions alive at the end that did not answer the final ECHO

    @property
    def capped(self) -> bool:
        return self.stop_reason == STOP_CAP

    @property
    def emulator_bound(self) -> bool:
        return self.stop_reason == STOP_LOCAL

    @property
    def setup_rate_per_s(self) -> Optional[float]:
        return self.established / self.setup_s if self.setup_s else None

    @classmethod
    def merge(cls, answers: list) -> "SessionsResult":
        """Sums; the earliest first failure (by its instant) and the sessions of every shard ready before it;
        the worst stop reason; raw echo samples pooled."""
        total = {k: sum(getattr(a, k) for a in answers) for k in
                 ("kept", "established", "attempted", "failed", "dropped_after_ready")}
        failures: dict = {}
        for a in answers:
            for kind, n in a.failures.items():
                failures[kind] = failures.get(kind, 0) + n
        firsts = [a.first_failure for a in answers if a.first_failure is not None]
        reasons = {a.stop_reason for a in answers}
        if STOP_LOCAL in reasons:
            stop = STOP_LOCAL
        elif STOP_DROPPING in reasons:
            stop = STOP_DROPPING
        elif reasons == {STOP_CAP}:
            stop = STOP_CAP
        else:
            stop = sorted(r or "" for r in reasons)[-1]
        ramps = [a.ramp_s for a in answers if a.ramp_s]
        setups = [a.setup_s for a in answers if a.setup_s]
        rss = [a.rss_bytes for a in answers if a.rss_bytes]
        growth = [a.rss_growth_bytes for a in answers if a.rss_growth_bytes]
        first = min(firsts, key=lambda f: f.at_ns) if firsts else None
        ready = samples(b"".join(a.ready_ns for a in answers))
        before = sum(1 for t in ready if t < first.at_ns) if first else total["established"]
        losses = [a.first_loss_ns for a in answers if a.first_loss_ns]
        ccn = sum(1 for t in ready if t < min(losses)) if losses else total["established"]
        new_failures: dict = {}
        for a in answers:
            for kind, n in a.new_failures.items():
                new_failures[kind] = new_failures.get(kind, 0) + n
        return cls(**total, established_before_failure=before, failures=failures, first_failure=first,
                   stop_reason=stop, ramp_s=max(ramps) if ramps else None, setup_s=max(setups) if setups else None,
                   rss_bytes=sum(rss) if rss else None, rss_growth_bytes=sum(growth) if growth else None,
                   echo_rtt_ns=b"".join(a.echo_rtt_ns for a in answers), shards=sum(a.shards for a in answers),
                   ready_ns=ready.tobytes(), ccn=ccn, first_loss_ns=min(losses) if losses else 0,
                   new_failures=new_failures, unanswered=sum(a.unanswered for a in answers))


@wire
@dataclass(frozen=True)
class Connected(Response):
    connected: int
    failures: tuple = ()         # ((datapath id, reason), ...)
    retries: int = 0
    masters: int = 0             # a cluster's switches: those with a MASTER session when the roles settled
    unmastered: tuple = ()       # (datapath id, ...) with none: their PACKET_INs go to their first EQUAL session

    @classmethod
    def merge(cls, answers: list) -> "Connected":
        return cls(sum(a.connected for a in answers), tuple(f for a in answers for f in a.failures),
                   sum(a.retries for a in answers), sum(a.masters for a in answers),
                   tuple(d for a in answers for d in a.unmastered))


@wire
@dataclass(frozen=True)
class Announced(Response):
    """Destination hosts announced; ``unconfirmed``: switches whose announcement the controller never answered."""
    sent: int
    confirmed: int
    unconfirmed: tuple = ()
    waited_s: float = 0.0
    lost_detail: str = ""        # sessions that closed meanwhile, and why

    @classmethod
    def merge(cls, answers: list) -> "Announced":
        return cls(sum(a.sent for a in answers), sum(a.confirmed for a in answers),
                   tuple(d for a in answers for d in a.unconfirmed), max((a.waited_s for a in answers), default=0.0),
                   "; ".join(a.lost_detail for a in answers if a.lost_detail))


TRAFFIC_COUNTERS = ("ntx", "nrx", "nrx_in_td", "late", "duplicates", "stale", "overrun", "not_counted", "unmatched",
                    "deferred_by_backpressure", "rtt_sum_ns", "packet_out", "flow_mod", "switches", "sessions_lost")


@wire
@dataclass(frozen=True)
class TrafficResult(Response):
    """One traffic trial's counts.  ``bucket_*``: requests by send time in ``BUCKETS`` equal parts of Td,
    with how many were answered in time, their summed round trips and the longest (latency through the trial)."""
    mode: str
    duration_s: float
    response_timeout_s: float
    offered_rate_target: Optional[float]
    t_start_ns: int
    t_end_ns: int
    latencies_ns: bytes
    bucket_sent: tuple
    bucket_answered: tuple
    bucket_rtt_ns: tuple
    bucket_max_rtt_ns: tuple = (0,) * 20
    ntx: int = 0
    nrx: int = 0
    nrx_in_td: int = 0
    late: int = 0
    duplicates: int = 0
    stale: int = 0
    overrun: int = 0
    not_counted: int = 0
    unmatched: int = 0
    deferred_by_backpressure: int = 0
    rtt_sum_ns: int = 0
    packet_out: int = 0
    flow_mod: int = 0
    switches: int = 0
    sessions_lost: int = 0
    lost_detail: str = ""
    shards: int = 1
    start_skew_us: float = 0.0
    pids: tuple = ()
    BUCKETS: ClassVar[int] = 20

    @classmethod
    def merge(cls, answers: list) -> "TrafficResult":
        first = answers[0]
        sums = {k: sum(getattr(a, k) for a in answers) for k in TRAFFIC_COUNTERS}
        starts = [a.t_start_ns for a in answers]

        def add(name):
            return tuple(map(sum, zip(*(getattr(a, name) for a in answers))))
        return cls(mode=first.mode, duration_s=first.duration_s, response_timeout_s=first.response_timeout_s,
                   offered_rate_target=None if first.offered_rate_target is None else
                   sum(a.offered_rate_target or 0 for a in answers),
                   t_start_ns=min(starts), t_end_ns=max(a.t_end_ns for a in answers),
                   latencies_ns=b"".join(a.latencies_ns for a in answers),
                   bucket_sent=add("bucket_sent"), bucket_answered=add("bucket_answered"),
                   bucket_rtt_ns=add("bucket_rtt_ns"),
                   bucket_max_rtt_ns=tuple(map(max, zip(*(a.bucket_max_rtt_ns for a in answers)))), **sums,
                   lost_detail="; ".join(a.lost_detail for a in answers if a.lost_detail),
                   shards=len(answers), start_skew_us=(max(starts) - min(starts)) / 1e3,
                   pids=tuple(p for a in answers for p in a.pids))


@wire
@dataclass(frozen=True)
class Quiet(Response):
    waited_s: float
    quiet: bool

    @classmethod
    def merge(cls, answers: list) -> "Quiet":
        return cls(max(a.waited_s for a in answers), all(a.quiet for a in answers))


@wire
@dataclass(frozen=True)
class FabricReady(Response):
    relay: tuple                 # (host, port) of this shard's frame relay


@wire
@dataclass(frozen=True)
class FabricState(Response):
    """The fabric's counters and instants (:meth:`emulator.fabric.Fabric.status`), merged over shards."""
    ready: int
    owned: int
    counters: dict               # relayed, sent_remote, ... summed
    t_first_discovery_out: Optional[int]
    t_last_relayed_in: Optional[int]
    last_relay_before: Optional[int]
    first_in: tuple              # ((dpid, port, t_ns), ...)
    relay_latency_ns: bytes
    change: Optional[dict]
    data_plane: Optional[dict]
    sessions_lost: int = 0
    lost_detail: str = ""
    pids: tuple = ()
    CHANGE_FIRSTS: ClassVar[tuple] = ("t_change", "t_first_notice", "t_first_discovery_out",
                                      "t_first_discovery_out_affected", "t_session_closed")

    @classmethod
    def merge(cls, answers: list) -> "FabricState":
        def first(key):
            vals = [getattr(a, key) for a in answers if getattr(a, key) is not None]
            return min(vals) if vals else None

        def last(key):
            vals = [getattr(a, key) for a in answers if getattr(a, key) is not None]
            return max(vals) if vals else None

        counters: dict = {}
        for a in answers:
            for k, v in a.counters.items():
                counters[k] = counters.get(k, 0) + v
        planes = [a.data_plane for a in answers if a.data_plane]
        changes = [a.change for a in answers if a.change]
        change = None
        if changes:
            change = dict(changes[0])
            for key in cls.CHANGE_FIRSTS:
                vals = [c[key] for c in changes if c.get(key) is not None]
                change[key] = min(vals) if vals else None
            change["notices"] = sum(c["notices"] for c in changes)
            firsts = [c for c in changes if c.get("t_first_message") is not None]
            best = min(firsts, key=lambda c: c["t_first_message"]) if firsts else None
            change["t_first_message"] = best["t_first_message"] if best else None
            change["first_message"] = best["first_message"] if best else None
        return cls(ready=sum(a.ready for a in answers), owned=sum(a.owned for a in answers), counters=counters,
                   t_first_discovery_out=first("t_first_discovery_out"), t_last_relayed_in=last("t_last_relayed_in"),
                   last_relay_before=last("last_relay_before"),
                   first_in=tuple(x for a in answers for x in a.first_in),
                   relay_latency_ns=b"".join(a.relay_latency_ns for a in answers), change=change,
                   data_plane={k: sum(d[k] for d in planes) for k in planes[0]} if planes else None,
                   sessions_lost=sum(a.sessions_lost for a in answers),
                   lost_detail="; ".join(a.lost_detail for a in answers if a.lost_detail),
                   pids=tuple(p for a in answers for p in a.pids))

    def first_in_map(self) -> dict:
        return {(d, p): t for d, p, t in self.first_in}


@wire
@dataclass(frozen=True)
class Timeline(Response):
    """Each switch's control-plane timeline and roles (:meth:`emulator.fabric.Fabric.timeline_report`), merged
    over shards (each switch lives on one).  ``switches``: dpid -> {"events": [{"t_ns", "event", "controller",
    ...}], "dropped": events the bound let go, "roles": [[controller, role], ...] of its live connections,
    "master": the controller of its MASTER connection or None}; the events are described in
    :class:`emulator.roles.SwitchTimeline`.  ``flow_mods_duplicate``: FLOW_MODs that repeated an entry another
    connection had installed identically (not counted as FLOW_MODs applied)."""
    switches: dict
    flow_mods_duplicate: int = 0
    pids: tuple = ()

    @classmethod
    def merge(cls, answers: list) -> "Timeline":
        switches: dict = {}
        for a in answers:
            switches.update(a.switches)
        return cls(switches, sum(a.flow_mods_duplicate for a in answers), tuple(p for a in answers for p in a.pids))

    def master_of(self, dpid: int) -> Optional[str]:
        """The controller (``host:port``) of switch ``dpid``'s MASTER connection; None when it has none."""
        return self.switches.get(dpid, {}).get("master")

    def roles_of(self, dpid: int) -> list:
        """[[controller, role], ...] of switch ``dpid``'s live connections."""
        return [list(r) for r in self.switches.get(dpid, {}).get("roles", ())]

    def events(self, event: Optional[str] = None, dpid: Optional[int] = None) -> list:
        """Every switch's events (or ``dpid``'s), of kind ``event`` if given, in time order, each with its dpid."""
        out = [{**e, "dpid": d} for d, sw in self.switches.items() if dpid is None or d == dpid
               for e in sw.get("events", ()) if event is None or e["event"] == event]
        return sorted(out, key=lambda e: e["t_ns"])


@wire
@dataclass(frozen=True)
class TraceStarted(Response):
    started_ns: int

    @classmethod
    def merge(cls, answers: list) -> "TraceStarted":
        return cls(min(a.started_ns for a in answers))


@wire
@dataclass(frozen=True)
class Trace(Response):
    """The provisioning trace: each (src, dst) pair's first PACKET_IN (t, dpid), and every FLOW_MOD naming
    an address [t, dpid, fields, forwards], in time order."""
    packet_ins: dict
    flow_mods: tuple
    truncated: bool

    @classmethod
    def merge(cls, answers: list) -> "Trace":
        pins: dict = {}
        for a in answers:
            for key, (t, dpid) in a.packet_ins.items():
                if key not in pins or t < pins[key][0]:
                    pins[key] = (t, dpid)
        return cls(pins, tuple(sorted((r for a in answers for r in a.flow_mods), key=lambda r: r[0])),
                   any(a.truncated for a in answers))


@wire
@dataclass(frozen=True)
class PortAnswer(Response):
    """A test port's answer (one shard owns the port): its report or what the action returned."""
    tx: dict = field(default_factory=dict)
    rx: dict = field(default_factory=dict)
    other_rx: int = 0
    announced: int = 0
    rx_flow_first: Optional[dict] = None


@wire
@dataclass(frozen=True)
class ScreenObservation(Response):
    """What the emulator saw around one malformed kind (:mod:`emulator.screen`); times in ms after it was sent.
    ``error``: the kind could not be sent (the sentinel or the probe never got a session) and nothing else holds."""
    kind: str
    error: str = ""
    replies: list = field(default_factory=list)     # [[ms, name, xid, error type, error code]] on the probe
    acted: list = field(default_factory=list)       # [[ms, name, how]]: answers naming the kind's buffer or MAC
    answers: int = 0                                # PACKET_OUT and FLOW_MOD on the probe after the send
    probe_closed: str = ""                          # how the probe (or its twin, D04) ended in the window
    probe_closed_ms: Optional[float] = None
    features_requested: bool = False
    baseline_ms: list = field(default_factory=list) # sentinel round trips before the send
    during_ms: list = field(default_factory=list)   # and after it
    sentinel_sent: int = 0
    sentinel_answered: int = 0
    sentinel_max_wait_ms: float = 0.0               # the longest a sentinel probe waited (unanswered: until the end)
    sentinel_closed: str = ""
    sentinel_liveness: str = "echo+packet_in"       # "echo": no PACKET_IN was answered before the send (see screen)
    fresh_handshake_ms: Optional[float] = None
    fresh_error: str = ""
    sent_bytes: int = 0

    @classmethod
    def merge(cls, answers: list) -> "ScreenObservation":
        return answers[0]


# --------------------------------------------------------------------------- events (before an answer)


@wire
@dataclass(frozen=True)
class Progress:
    phase: str
    attempted: int
    established: int
    failed: int
    elapsed_s: float


@wire
@dataclass(frozen=True)
class RampEnded:
    reason: str
    established: int
    attempted: int


# --------------------------------------------------------------------------- commands


class Command:
    response: ClassVar[type] = Done
    answered: ClassVar[bool] = True


@wire
@dataclass(frozen=True)
class Hello(Command):
    """Who the shard is; it raises its open-file soft limit to the hard one first."""
    response: ClassVar[type] = ShardInfo


@wire
@dataclass(frozen=True)
class Pin(Command):
    """Run this shard on these CPUs only (empty: leave it)."""
    cpus: tuple = ()


@wire
@dataclass(frozen=True)
class OpenSessions(Command):
    """§5.2.1: open ``sessions`` sessions through the ramp until the controller drops one or the cap is
    reached, hold, probe with ECHO, count.  Events: Progress, RampEnded."""
    response: ClassVar[type] = SessionsResult
    address: tuple
    versions: tuple
    capacity: CapacityParams
    ramp: RampParams
    sessions: int
    first_dpid: int = 1
    source_base: Optional[str] = "127.0.0.1"
    sessions_per_source: int = 20000
    deadline: float = 600.0
    progress_interval: float = 1.0


@wire
@dataclass(frozen=True)
class StopRamp(Command):
    """Open no further group (another shard saw the controller drop sessions)."""
    answered: ClassVar[bool] = False


def controller_addresses(address, command: str) -> tuple:
    """``address`` as ((host, port), ...): one controller's (host, port) or a cluster's ((host, port), ...);
    EmulatorError naming ``command`` when it is neither."""
    addr = tuple(address)
    if len(addr) == 2 and isinstance(addr[0], str):
        addr = (addr,)
    out = []
    for a in addr:
        a = tuple(a) if isinstance(a, (tuple, list)) else ()
        if len(a) != 2 or not isinstance(a[0], str) or isinstance(a[1], bool) or not isinstance(a[1], int) \
                or not 0 < a[1] < 65536:
            raise EmulatorError(f"a controller address is (host, port) with a port 1..65535 (got {address!r})")
        out.append(a)
    if not out:
        raise EmulatorError(f"{command} names no controller address")
    if len(set(out)) != len(out):
        raise EmulatorError(f"a controller address is named twice: {address!r}")
    return tuple(out)


ROLE_WAIT_S = 10.0    # ConnectSwitches to a cluster: seconds for every switch to get a MASTER session after connecting


@wire
@dataclass(frozen=True)
class ConnectSwitches(Command):
    """§5.1.2/§5.1.3: connect traffic switches ``datapath_ids`` and keep them for the trials.  ``address``: the
    controller's (host, port), or a cluster's ((host, port), ...): each switch then has one session per member,
    which share its OpenFlow 1.3 roles, and sends its PACKET_INs on its MASTER session (or, without one, on its
    first EQUAL session; never a SLAVE's)."""
    response: ClassVar[type] = Connected
    address: tuple
    versions: tuple
    datapath_ids: tuple
    params: AsyncParams
    ramp: RampParams

    def controllers(self) -> tuple:
        """The controllers as ((host, port), ...), whichever form ``address`` took."""
        return controller_addresses(self.address, "ConnectSwitches")


@wire
@dataclass(frozen=True)
class AnnounceDestinations(Command):
    """Each switch's destination host announces itself (gratuitous ARP), again every ``retry`` s until
    the controller answers it (PACKET_OUT or FLOW_MOD on that session) or ``timeout``."""
    response: ClassVar[type] = Announced
    timeout: float = 10.0
    retry: float = 0.5


@wire
@dataclass(frozen=True)
class RunTraffic(Command):
    """One traffic trial starting at the harness's monotonic instant ``start_at_ns``."""
    response: ClassVar[type] = TrafficResult
    traffic: TrafficParams
    trial: int
    start_at_ns: int
    limit: Optional[int] = None      # closed-loop modes: requests per switch (preflight)


@wire
@dataclass(frozen=True)
class Quiesce(Command):
    """Answer once the controller has sent nothing for ``quiet`` s, or at ``max_wait``."""
    response: ClassVar[type] = Quiet
    quiet: float
    max_wait: float = 120.0


@wire
@dataclass(frozen=True)
class Disconnect(Command):
    """The end of a trial: every switch this shard holds (traffic switches, a topology, a capacity trial, a
    screen) stops connecting (no further group, retry or reconnect; connects under way stopped) and closes its
    session; answered once all are gone, so nothing of the trial touches the controller's ports afterwards.  The
    process stays."""


@wire
@dataclass(frozen=True)
class DeployFabric(Command):
    """The shard's switches of a topology, and its frame relay listener for the other shards."""
    response: ClassVar[type] = FabricReady
    topology: dict
    owned: tuple
    versions: tuple
    fabric: FabricParams


@wire
@dataclass(frozen=True)
class ConnectFabric(Command):
    """Connect the shard's switches: ``address`` is one controller (host, port), or a cluster ((host, port),
    ...), which every switch connects to once per member (OpenFlow 1.3 roles, :mod:`emulator.roles`)."""
    response: ClassVar[type] = Connected
    address: tuple
    peers: dict                  # dpid -> (host, port) of the shard relay that owns it
    ramp: RampParams

    def controllers(self) -> tuple:
        """The controllers as ((host, port), ...), whichever form ``address`` took."""
        return controller_addresses(self.address, "ConnectFabric")


@wire
@dataclass(frozen=True)
class GetFabricState(Command):
    response: ClassVar[type] = FabricState
    before_ns: Optional[int] = None


@wire
@dataclass(frozen=True)
class GetTimeline(Command):
    """Every switch's control-plane timeline and roles (``dpids``: only these; ``since_ns``: only events from
    then on)."""
    response: ClassVar[type] = Timeline
    dpids: tuple = ()
    since_ns: Optional[int] = None


@wire
@dataclass(frozen=True)
class ChangeTopology(Command):
    """link_down / link_up / switch_down: every shard applies it to its own ends."""
    kind: str
    dpid: int
    port: Optional[int] = None


@wire
@dataclass(frozen=True)
class SetExceptions(Command):
    """RFC 8456 §5.3.1: from now on ``percent`` % of the fabric's PACKET_INs, at seeded positions, are replaced by
    the invalid kind ``kind`` (emulator.malformed.ExceptionPlan); 0 stops it."""
    percent: float
    kind: str = "B03"
    seed: int = 8456


@wire
@dataclass(frozen=True)
class StartTrace(Command):
    response: ClassVar[type] = TraceStarted


@wire
@dataclass(frozen=True)
class GetTrace(Command):
    response: ClassVar[type] = Trace


@wire
@dataclass(frozen=True)
class TestPortCommand(Command):
    """A test port at host port ``at`` = (dpid, port), on the shard that owns that switch.
    ``action``: attach, announce (``hosts``: ((mac hex, ip), ...)), stream, start, stop, report."""
    __test__: ClassVar[bool] = False
    response: ClassVar[type] = PortAnswer
    at: tuple
    action: str
    hosts: tuple = ()
    stream: Optional["StreamSpec"] = None
    flow_times: bool = False
    ACTIONS: ClassVar[tuple] = ("attach", "announce", "stream", "start", "stop", "report")

    def __post_init__(self):
        if self.action not in self.ACTIONS:
            raise EmulatorError(f"unknown test-port action {self.action!r} ({', '.join(self.ACTIONS)})")


@wire
@dataclass(frozen=True)
class StreamSpec:
    """A TP stream: frames cycling over ``flows`` unique address pairs from pair ``first``."""
    stream: int
    flows: int
    first: int = 1
    rate: float = 1000.0
    count: Optional[int] = None
    duration: Optional[float] = None
    size: int = 128
    src_net: int = 101
    dst_net: int = 102
    delay: float = 0.0
    one_destination: bool = False     # every source to pair ``first``'s destination (A.7.1's S1..Sn, D1)


@wire
@dataclass(frozen=True)
class ScreenKind(Command):
    """The robustness screen: send malformed kind ``kind`` on a probe session while a sentinel session and a
    fresh handshake measure the controller's liveness (datapath ids from ``first_dpid``)."""
    response: ClassVar[type] = ScreenObservation
    address: tuple
    version: int
    kind: str
    screen: ScreenParams
    first_dpid: int = 0xB4D00


@wire
@dataclass(frozen=True)
class Close(Command):
    """What ``Disconnect`` does, then stop the shard's reactor."""


COMMANDS = tuple(c for c in _WIRE.values() if isinstance(c, type) and issubclass(c, Command))


def _self_check() -> None:
    for cls in COMMANDS:
        if cls.answered and not issubclass(cls.response, Response):
            raise TypeError(f"{cls.__name__}.response must be a Response")


_self_check()
if sys.version_info < (3, 9):  # pragma: no cover
    raise ImportError("bmwg-sdn's emulator needs Python 3.9 or newer")
