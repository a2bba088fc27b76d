"""Parameter families: each option of the suite declared once, with its type, default and help.

A family is a frozen dataclass whose fields carry their command-line option in their
metadata (:func:`option`).  ``Family.add_options(group)`` registers them (pytest's or
argparse's ``addoption``/``add_argument``), with ``type=`` parsers so a bad value is refused
at the boundary, naming the option; ``Family.from_options(namespace)`` builds the object.
Cross-field checks are ``problems()``.  The object travels whole: the emulator's commands
(:mod:`emulator.commands`) carry it to the shards, which read what they need.

Pure: no Twisted, no pytest.  The families the emulator uses live here; the harness's own
(run, discovery, paths) are declared the same way in ``fixtures/``.

Adding an option: a field here (or in the harness family), and the code that reads it.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

# --------------------------------------------------------------------------- parsers (argparse ``type=``)


def _number(text, kind, what: str, ok: Callable[[float], bool]):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})") from None
    if isinstance(value, float) and not math.isfinite(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})")
    return value


def positive_int(text) -> int:
    return _number(text, int, "a positive integer", lambda v: v > 0)


def non_negative_int(text) -> int:
    return _number(text, int, "a non-negative integer", lambda v: v >= 0)


def positive_float(text) -> float:
    return _number(text, float, "a positive number", lambda v: v > 0)


def non_negative_float(text) -> float:
    return _number(text, float, "a non-negative number", lambda v: v >= 0)


def fraction(text) -> float:
    return _number(text, float, "a fraction between 0 and 1", lambda v: 0 < v < 1)


def port_number(text) -> int:
    return _number(text, int, "a port number 1..65535", lambda v: 0 < v < 65536)


def parse_endpoint(text: str) -> tuple:
    """``HOST:PORT`` as (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"controller address {text!r} is not HOST:PORT")
    return host, int(port)


def loopback_address(text: str) -> str:
    """An address in 127.0.0.0/8 (the emulator's source addresses, an attack's target)."""
    try:
        if ipaddress.ip_address(text).is_loopback:
            return text
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"source address {text!r} must be a loopback address (127.0.0.0/8)")


def choice(*names: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in names:
            raise argparse.ArgumentTypeError(f"must be one of {', '.join(names)} (got {text!r})")
        return text
    parse.__name__ = "choice"
    return parse


def comma_list(*names: str) -> Callable[[str], tuple]:
    """``a,b``: a non-empty comma list of ``names``, in the given order, without repeats."""
    def parse(text: str) -> tuple:
        items = tuple(dict.fromkeys(x.strip() for x in str(text).split(",") if x.strip()))
        bad = [x for x in items if x not in names]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"must be a comma list of {', '.join(names)} (got {text!r})")
        return items
    parse.__name__ = "comma_list"
    return parse


def ranged_list(kind: Callable[[str], float], low: float, high: float, what: str) -> Callable[[str], tuple]:
    """A parser of ``a,b,c``: numbers of ``kind`` (int or float), each ``low``..``high``, in the order given,
    without repeats; ``what`` names them in the error (``election timers in ms``)."""
    def parse(text: str) -> tuple:
        try:
            items = tuple(dict.fromkeys(kind(x) for x in str(text).split(",") if x.strip()))
        except ValueError:
            items = ()
        if not items or any(not low <= x <= high for x in items):
            raise argparse.ArgumentTypeError(f"must be {what}, {low:g}..{high:g}, comma-separated (got {text!r})")
        return items
    parse.__name__ = "ranged_list"
    return parse


def int_list(text: str) -> tuple:
    """``1,16,64``: positive integers."""
    try:
        items = tuple(int(x) for x in str(text).split(",") if x.strip())
    except ValueError:
        items = ()
    if not items or any(x < 1 for x in items):
        raise argparse.ArgumentTypeError(f"must be a positive number or a comma list of them (got {text!r})")
    return items


# --------------------------------------------------------------------------- families


@dataclass(frozen=True)
class OptionSpec:
    flag: str
    help: str
    parse: Optional[Callable[[str], Any]] = None
    action: Optional[str] = None          # "store_true" (a bool, False by default) or "append" (a tuple)
    metavar: Optional[str] = None
    default_text: Optional[str] = None    # how --help shows the default (None: the default itself)
    aliases: tuple = ()                   # older names, accepted with a deprecation note

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def option(default, flag: str, help: str, parse=None, **kw):
    """A dataclass field that is also the command-line option ``flag``."""
    spec = OptionSpec(flag, help, parse, **kw)
    if isinstance(default, (list, dict, set)):
        raise TypeError("option defaults must be immutable (use a tuple)")
    return field(default=default, metadata={"option": spec})


class Family:
    """Mixin for the parameter dataclasses: options registered and read from their fields."""

    TITLE: ClassVar[str] = ""

    @classmethod
    def option_fields(cls) -> list:
        return [(f, f.metadata["option"]) for f in dataclasses.fields(cls) if "option" in f.metadata]

    @classmethod
    def add_options(cls, group, taken: Callable[[str], bool] = lambda flag: False, *,
                    only: Optional[tuple] = None, defaults: Optional[dict] = None) -> None:
        """Register every option on ``group`` (pytest's ``getgroup`` or an argparse group).
        ``taken(flag)`` says an alias is already someone else's: it is then left out.  A tool that needs a few of
        a family's options (the selfbench) names their flags in ``only``, and gives a default of its own in
        ``defaults`` (field name -> value), shown beside the suites' in its help."""
        fields = cls.option_fields()
        unknown = set(only or ()) - {spec.flag for _, spec in fields}
        unknown |= set(defaults or {}) - {f.name for f, _ in fields}
        if unknown:
            raise ValueError(f"{cls.__name__} has no option {', '.join(sorted(unknown))}")
        for f, spec in fields:
            if only is not None and spec.flag not in only:
                continue
            default = (defaults or {}).get(f.name, f.default)
            shown = spec.default_text if spec.default_text is not None else f.default
            if default != f.default:
                shown = f"{default}; the suites': {shown}"
            text = spec.help if spec.action == "store_true" else f"{spec.help} (default: {shown})"
            kwargs = dict(dest=spec.dest, help=text)
            if spec.action == "store_true":
                kwargs.update(action=spec.action, default=False)
            elif spec.action == "append":
                kwargs.update(action=spec.action, default=None, type=spec.parse)
            else:
                kwargs.update(default=default, type=spec.parse)
                if spec.metavar:
                    kwargs["metavar"] = spec.metavar
            names = [spec.flag] + [a for a in spec.aliases if not taken(a)]
            group.addoption(*names, **kwargs) if hasattr(group, "addoption") else group.add_argument(*names, **kwargs)

    @classmethod
    def from_options(cls, options, **overrides):
        """The family from a parsed namespace (pytest's ``config.option``); fields without an
        option keep their default unless given in ``overrides``."""
        values = {}
        for f, spec in cls.option_fields():
            value = getattr(options, spec.dest, f.default)
            if spec.action == "append":
                value = f.default if value is None else tuple(value)
            values[f.name] = value
        values.update(overrides)
        return cls(**values)

    def problems(self) -> list:
        """Checks that involve several fields; each problem names its options."""
        return []

    def report(self) -> dict:
        """The parameters as the report shows them."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


# --------------------------------------------------------------------------- the emulator's families


@dataclass(frozen=True)
class EmulatorParams(Family):
    """Where the emulator runs and how it waits: every benchmark's switches come through here."""
    TITLE: ClassVar[str] = "bmwg-sdn emulator"
    emulator_shards: int = option(1, "--emulator-shards", "emulator processes on this host the switches are "
                                  "spread over (the capacity benchmark adds more as its open-file limit needs)",
                                  positive_int)
    emulator_hosts: Optional[str] = option(None, "--emulator-hosts", "execnet gateway specs of the emulator "
                                           "shards, SPEC*N comma-separated, e.g. 'popen*2,ssh=user@hostB*4' "
                                           "(replaces --emulator-shards; see docs/architecture.md)",
                                           default_text="popen × --emulator-shards")
    busy_poll: bool = option(False, "--busy-poll", "the emulator spins instead of sleeping while it waits for "
                             "answers (opt-in: on a small host it takes CPU from the controller; the report "
                             "says when it was on)", action="store_true")
    cpu_affinity: str = option("auto", "--cpu-affinity", "pin an embedded controller and the emulator to "
                               "disjoint CPUs: auto (when the host has at least 2), off, or CTRL/EMU as CPU "
                               "lists, e.g. 1/0 or 2-3/0-1", metavar="auto|off|CTRL/EMU")

    def problems(self) -> list:
        out = []
        if self.emulator_hosts is not None:
            try:
                parse_hosts(self.emulator_hosts)
            except ValueError as exc:
                out.append(f"--emulator-hosts: {exc}")
        try:
            parse_affinity(self.cpu_affinity)
        except ValueError as exc:
            out.append(f"--cpu-affinity: {exc}")
        return out

    def placement(self) -> tuple:
        """(controller CPUs, emulator CPUs); (None, None) when the processes are not pinned."""
        return parse_affinity(self.cpu_affinity) or (None, None)

    def hosts(self) -> list:
        """[(execnet spec, count)] of the shards asked for."""
        if self.emulator_hosts is not None:
            return parse_hosts(self.emulator_hosts)
        return [("popen", self.emulator_shards)]


@dataclass(frozen=True)
class RampParams(Family):
    """How switches connect: every benchmark's sessions open through one ramp with this policy."""
    TITLE: ClassVar[str] = "bmwg-sdn connection ramp (every benchmark)"
    ramp_group: int = option(25, "--ramp-group", "sessions opened together in one ramp step", positive_int)
    ramp_delay: float = option(0.05, "--ramp-delay", "seconds between ramp steps", non_negative_float)
    connect_timeout: float = option(5.0, "--connect-timeout", "seconds a TCP connect may take", positive_float)
    handshake_timeout: float = option(10.0, "--handshake-timeout",
                                      "seconds from TCP connect to FEATURES_REQUEST answered", positive_float)

    def shared_by(self, shards: int) -> "RampParams":
        """The ramp of one of ``shards`` shards that ramp together: the group split between them."""
        return dataclasses.replace(self, ramp_group=max(1, -(-self.ramp_group // max(1, shards))))


@dataclass(frozen=True)
class CapacityParams(Family):
    """RFC 8456 §5.2.1 Control Sessions Capacity."""
    TITLE: ClassVar[str] = "bmwg-sdn control session capacity (RFC 8456 §5.2.1)"
    max_sessions: int = option(100000, "--max-sessions", "cap on sessions opened in one trial (a trial that "
                               "reaches it reports a lower bound)", positive_int)
    hold_time: float = option(3.0, "--hold-time", "seconds sessions must stay up after the ramp before they "
                              "are counted", non_negative_float)
    echo_interval: float = option(1.0, "--echo-interval", "seconds between ECHO probes while holding",
                                  positive_float)
    echo_timeout: float = option(3.0, "--echo-timeout", "seconds an ECHO_REQUEST may go unanswered",
                                 positive_float)
    sustained_steps: int = option(8, "--sustained-steps", "after a collapse (established sessions lost), the most "
                                  "steps of the sustained-capacity search, each with a fresh controller (0: no "
                                  "search)", non_negative_int)
    sustained_resolution: float = option(0.02, "--sustained-resolution", "the sustained-capacity search stops when "
                                         "its bracket is within this fraction of CCn (at least one session)",
                                         fraction)


TRAFFIC_MODES = ("serial", "per-switch", "paced", "max")
RESPONSE_TYPES = ("either", "packet_out", "flow_mod")
FRAME_KINDS = ("ipv4", "arp")
MIN_FRAME, MAX_FRAME = 64, 9000
MAX_MACS = 1 << 24


@dataclass(frozen=True)
class AsyncParams(Family):
    """RFC 8456 §5.1.2 and §5.1.3: the switches that send PACKET_INs, the trials and the rate search."""
    TITLE: ClassVar[str] = "bmwg-sdn asynchronous messages (RFC 8456 §5.1.2, §5.1.3)"
    switch_counts: tuple = option((16,), "--switches", "emulated switches sending PACKET_INs; a comma list "
                                  "(1,16,64) runs the series X = N", int_list, default_text="16")
    macs: int = option(1000, "--macs", "distinct source MACs per switch (cbench's default 1000)", positive_int)
    frame_kind: str = option("ipv4", "--frame-type", "frame in each PACKET_IN: ipv4 (UDP) or arp",
                             choice(*FRAME_KINDS))
    frame_size: int = option(128, "--frame-size", "frame size in bytes (RFC: 128, 512, 1508)", positive_int)
    no_buffer: bool = option(False, "--no-buffer", "send whole frames with no buffer_id (answers are matched "
                             "by the frame or the flow match)", action="store_true")
    no_learn: bool = option(False, "--no-learn", "do not announce each switch's destination host first (the "
                            "controller then floods)", action="store_true")
    mode: str = option("serial", "--async-mode", "processing-time trials: serial (one request outstanding in "
                       "the emulator) or per-switch (one per switch, cbench's latency mode)",
                       choice("serial", "per-switch"))
    duration: float = option(10.0, "--trial-duration", "Td, seconds of traffic per trial", positive_float)
    response_timeout: float = option(1.0, "--response-timeout",
                                     "seconds after which an unanswered PACKET_IN counts as lost", positive_float)
    response_type: str = option("either", "--response-type", "which answer counts: either, packet_out or "
                                "flow_mod", choice(*RESPONSE_TYPES))
    learn_timeout: float = option(10.0, "--announce-timeout", "seconds for the controller to answer every "
                                  "switch's destination-host announcement before trial 1", positive_float)
    rate_step: float = option(0.1, "--rate-step", "STEP of the rate search, as a fraction of the rate answered "
                              "at the maximum offered rate", fraction)
    rate_resolution: float = option(0.01, "--rate-resolution", "the rate search bisects the loss-free "
                                    "boundary until its bracket is this fraction of the rate", fraction)
    tolerance: float = option(0.05, "--rate-tolerance", "P: trials at a benchmark level repeat until two agree "
                              "within this fraction", fraction)
    max_confirm: int = option(5, "--max-confirm", "most trials at one benchmark level", positive_int)
    loss_goal: float = option(0.005, "--rate-loss-goal", "§5.1.3 also reports, from the same search, the APR at the "
                              "highest level whose trials all lost at most this fraction (beside the loss-free rate, "
                              "which one pause of a JIT or a garbage collector fails)", fraction)
    search: str = option("calibrated", "--rate-search", "§5.1.3's search: calibrated (a short closed-loop "
                         "calibration, short probing trials to bracket, full-Td trials at the two benchmark levels) "
                         "or top-down (the RFC's literal procedure: trial 1 at the maximum possible offered rate, "
                         "every trial Td long)", choice("calibrated", "top-down"))
    probe_duration: float = option(0.5, "--probe-duration", "calibrated search: seconds of each calibration and "
                                   "probing trial (at most Td)", positive_float)
    window: int = option(16, "--calibration-window", "calibrated search: PACKET_INs each switch keeps "
                         "outstanding in the calibration trial", positive_int)
    settle: float = option(1.0, "--settle", "seconds after connecting before traffic starts",
                           non_negative_float)
    rest: float = option(1.0, "--rest", "seconds of silence from the controller required between the trials "
                         "of a rate search", non_negative_float)
    no_ceiling: bool = option(False, "--no-ceiling", "skip measuring the emulator's own ceiling against the "
                              "null controller", action="store_true")
    switches: int = 16       # this series point (one of switch_counts)

    @property
    def buffered(self) -> bool:
        return not self.no_buffer

    @property
    def learn(self) -> bool:
        return not self.no_learn

    def at(self, switches: int) -> "AsyncParams":
        return dataclasses.replace(self, switches=switches)

    def problems(self) -> list:
        out = []
        if any(not 1 <= n <= 65535 for n in self.switch_counts):
            out.append(f"--switches must be 1..65535 (got {','.join(map(str, self.switch_counts))})")
        if self.macs > MAX_MACS:
            out.append(f"--macs must be 1..{MAX_MACS} (got {self.macs})")
        if not MIN_FRAME <= self.frame_size <= MAX_FRAME:
            out.append(f"--frame-size must be {MIN_FRAME}..{MAX_FRAME} bytes (got {self.frame_size})")
        if self.max_confirm < 2:
            out.append(f"--max-confirm must be at least 2 (got {self.max_confirm})")
        if self.rate_resolution >= self.rate_step:
            out.append(f"--rate-resolution ({self.rate_resolution:g}) must be finer than --rate-step "
                       f"({self.rate_step:g})")
        return out

    def report(self) -> dict:
        d = super().report()
        d.pop("switch_counts")
        d["frame"] = f"{self.frame_kind}, {self.frame_size} bytes"
        d["packet_in_buffering"] = "buffer_id per request" if self.buffered else "unbuffered (whole frame)"
        return d


@dataclass(frozen=True)
class TrafficParams:
    """One traffic trial, as the harness asks a shard for it (not an option family)."""
    mode: str = "serial"
    duration: float = 10.0            # Td, seconds
    response_timeout: float = 1.0     # seconds; a request unanswered by then is lost
    rate: Optional[float] = None      # offered messages/s of this shard (paced mode)
    batch: int = 64                   # paced mode: messages per write, spread round-robin over the switches
    max_batch: int = 1024             # max mode's writes; paced mode's when more is due than a round of ``batch``
    response_type: str = "either"
    busy_poll: bool = False           # closed-loop modes: spin instead of sleeping between responses
    tick: float = 0.0                 # max mode: seconds between send rounds (0: every reactor turn)
    window: int = 1                   # per-switch mode: requests each switch keeps outstanding (cbench's 1)

    def __post_init__(self):
        if self.mode not in TRAFFIC_MODES:
            raise ValueError(f"traffic mode must be one of {', '.join(TRAFFIC_MODES)} (got {self.mode!r})")
        if self.response_type not in RESPONSE_TYPES:
            raise ValueError(f"response type must be one of {', '.join(RESPONSE_TYPES)} "
                             f"(got {self.response_type!r})")
        if not self.duration > 0:
            raise ValueError(f"trial duration must be positive (got {self.duration})")
        if not self.response_timeout > 0:
            raise ValueError(f"response timeout must be positive (got {self.response_timeout})")
        if self.mode == "paced" and not (self.rate and self.rate > 0):
            raise ValueError(f"paced mode needs a positive offered rate (got {self.rate})")
        if self.batch < 1 or self.max_batch < 1:
            raise ValueError(f"batch must be at least 1 (got {self.batch}, max mode {self.max_batch})")
        if self.window < 1:
            raise ValueError(f"window must be at least 1 (got {self.window})")


TABLE_MISS = ("controller", "drop", "table")   # a switch's table-miss policies (emulator.flowtable.Pipeline)


@dataclass(frozen=True)
class FabricParams:
    """A deployed topology's switches, as a benchmark wants them (not an option family).

    The keep-alive and the reconnection are off by default (a run without them behaves as before they
    existed); the controller failover benchmark (RFC 8456 §5.4.1) turns them on: ``echo_interval`` > 0 sends
    an ECHO_REQUEST on every connection that often and closes a connection whose ECHO_REPLY has not come
    within ``echo_timeout`` (how a frozen controller is told from a slow one: its TCP stays up);
    ``reconnect`` makes a switch reconnect to a controller after losing it, ``reconnect_delay`` s later,
    doubling after each failed try up to ``reconnect_max_delay``.  A bad value is refused here, in one
    line naming the field."""
    host_refresh: float = 5.0         # hosts re-announce themselves (gratuitous ARP) this often; 0: once
    host_delay: float = 1.0           # after a switch is ready, before its hosts announce themselves
    data_plane: bool = False          # flow tables (path benchmarks) or discovery relay only
    table_miss: str = "controller"
    table_capacity: Optional[int] = None
    host_ingress: bool = False        # hosts' announcements enter their switch's flow tables (with data_plane)
    echo_interval: float = 0.0        # seconds between keep-alive ECHO_REQUESTs per connection; 0: none
    echo_timeout: float = 3.0         # seconds an ECHO_REQUEST of the keep-alive may go unanswered
    reconnect: bool = False           # reconnect to a controller after a connection is lost
    reconnect_delay: float = 0.25     # seconds before the first try; doubled after each failed one
    reconnect_max_delay: float = 4.0  # ... up to this
    timeline_limit: int = 4096        # control-plane events kept per switch (emulator.roles.SwitchTimeline)

    def __post_init__(self):
        def number(name: str, ok, what: str) -> None:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not ok(value):
                raise ValueError(f"fabric {name.replace('_', ' ')} must be {what} (got {value!r})")

        number("host_refresh", lambda v: v >= 0, "a non-negative number of seconds")
        number("host_delay", lambda v: v >= 0, "a non-negative number of seconds")
        number("echo_interval", lambda v: v >= 0, "a non-negative number of seconds (0: no keep-alive)")
        number("echo_timeout", lambda v: v > 0, "a positive number of seconds")
        number("reconnect_delay", lambda v: v > 0, "a positive number of seconds")
        number("reconnect_max_delay", lambda v: v >= self.reconnect_delay,
               f"a number of seconds no smaller than the reconnect delay ({self.reconnect_delay!r})")
        if isinstance(self.timeline_limit, bool) or not isinstance(self.timeline_limit, int) or self.timeline_limit < 1:
            raise ValueError(f"fabric timeline limit must be a positive integer (got {self.timeline_limit!r})")
        if self.table_miss not in TABLE_MISS:
            raise ValueError(f"fabric table miss must be one of {', '.join(TABLE_MISS)} (got {self.table_miss!r})")
        if self.table_capacity is not None and (isinstance(self.table_capacity, bool)
                                                or not isinstance(self.table_capacity, int) or self.table_capacity < 1):
            raise ValueError(f"fabric table capacity must be a positive integer or None (got {self.table_capacity!r})")


# --------------------------------------------------------------------------- shard hosts and CPU placement


def parse_hosts(text: str) -> list:
    """``popen*2,ssh=user@host*4`` -> [("popen", 2), ("ssh=user@host", 4)]."""
    out = []
    for item in (x.strip() for x in str(text).split(",")):
        if not item:
            continue
        spec, star, count = item.rpartition("*")
        if star and count.isdigit():
            n = int(count)
        else:
            spec, n = item, 1
        if n < 1:
            raise ValueError(f"{item!r}: the count after '*' must be at least 1")
        keys = {part.split("=", 1)[0] for part in spec.split("//")}
        if not keys & {"popen", "ssh"}:
            raise ValueError(f"{item!r}: an execnet gateway spec has popen or ssh=USER@HOST "
                             "(options after //, e.g. ssh=me@hostB//python=/opt/venv/bin/python)")
        out.append((spec, n))
    if not out:
        raise ValueError(f"no gateway spec in {text!r}")
    return out


def _cpu_list(text: str) -> list:
    cpus = []
    for part in text.split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError(f"{text!r} is not a CPU list such as 0 or 0-1 or 0,2")
        cpus += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
    return cpus


def available_cpus() -> list:
    """The CPUs this process may run on (a cpuset may leave out some, and number the rest freely)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def parse_affinity(text: str, cpus: Optional[list] = None) -> Optional[tuple]:
    """(controller CPUs, emulator CPUs), or None when the processes are not pinned.  ``cpus``: those available
    (default: this process's); ``auto`` gives the controller the upper half of them, the emulator the lower."""
    cpus = available_cpus() if cpus is None else list(cpus)
    if text == "off":
        return None
    if text == "auto":
        if len(cpus) < 2:
            return None
        half = len(cpus) // 2
        return tuple(cpus[half:]), tuple(cpus[:half])
    ctrl, slash, emu = text.partition("/")
    if not slash:
        raise ValueError(f"expected auto, off or CTRL/EMU CPU lists (got {text!r})")
    a, b = _cpu_list(ctrl), _cpu_list(emu)
    if set(a) & set(b):
        raise ValueError(f"the controller's and the emulator's CPUs must be disjoint (got {text!r})")
    missing = sorted(set(a + b) - set(cpus))
    if missing:
        raise ValueError(f"CPU(s) {missing} are not available here (available: {cpus})")
    return tuple(a), tuple(b)


@dataclass(frozen=True)
class ScreenParams(Family):
    """The robustness screen (an extension beside RFC 8456 §5.3.1): which malformed kinds, how often, and
    the windows and thresholds its outcomes are judged by."""
    TITLE: ClassVar[str] = "bmwg-sdn malformed-message robustness screen (extension, security)"
    kinds: Optional[str] = option(None, "--malformed-kinds", "catalogue kinds to send, by id or class letter, "
                                  "comma-separated (e.g. B03,H or A,B,C); docs/benchmarks/"
                                  "malformed_message_handling.md lists them", default_text="all that apply to "
                                  "--openflow")
    runs: int = option(3, "--malformed-runs", "passes over the chosen kinds (a flakiness check: each kind's "
                       "outcome is its worst)", positive_int)
    baseline_s: float = option(1.0, "--sentinel-baseline", "seconds the sentinel session is sampled before each "
                               "kind is sent", positive_float)
    window_s: float = option(3.0, "--malformed-window", "seconds watched after a kind is sent (at least "
                             "--hang-after plus the sampling interval)", positive_float)
    interval_s: float = option(0.1, "--sentinel-interval", "seconds between the sentinel's ECHO and PACKET_IN "
                               "probes", positive_float)
    hang_s: float = option(2.0, "--hang-after", "seconds a sentinel probe may stay unanswered, the controller "
                           "alive, before the kind is a HANG", positive_float)
    handshake_s: float = option(2.0, "--fresh-handshake-timeout", "seconds a new switch's handshake may take "
                                "after a kind was sent", positive_float)
    collateral_ratio: float = option(3.0, "--collateral-ratio", "sentinel p99 round trip after a kind, over its "
                                     "p99 before, above which the kind is COLLATERAL", positive_float)
    collateral_floor_ms: float = option(10.0, "--collateral-floor", "ms the sentinel p99 must also rise by to be "
                                        "COLLATERAL (sub-millisecond baselines on a shared host otherwise "
                                        "flag scheduler noise)", non_negative_float)
    fuzz: tuple = option((), "--fuzz", "add the seeded fuzzer's cases: boundary (every fixed field of each "
                         "switch-to-controller message at 0, 1, max-1, max, sign-flipped, +-1), random "
                         "(--fuzz-cases single-field mutations), or boundary,random", comma_list("boundary", "random"),
                         default_text="none")
    fuzz_cases: int = option(50, "--fuzz-cases", "random fuzzer cases", positive_int)
    fuzz_seed: int = option(8456, "--fuzz-seed", "seed of the random fuzzer cases", non_negative_int)
    known_findings: Optional[str] = option(None, "--known-findings", "YAML mapping kind ids to a note (an issue, "
                                           "a CVE): failures of these kinds are reported as known findings and do "
                                           "not fail the run (a regression guard); fixtures/profiles/ has Ryu's",
                                           default_text="none")
    settle_s: float = 0.3              # after a handshake, before probing (the controller installs its table-miss)

    def problems(self) -> list:
        out = []
        if self.window_s < self.hang_s + self.interval_s:
            out.append(f"--malformed-window {self.window_s:g} s must be at least --hang-after {self.hang_s:g} s "
                       f"plus --sentinel-interval {self.interval_s:g} s, or a hang cannot be seen")
        if self.kinds is not None:
            from .malformed import select
            try:
                if not (select(self.kinds, 1) or select(self.kinds, 4) or self.fuzz):
                    out.append(f"--malformed-kinds {self.kinds!r} names no kind (and no --fuzz)")
            except ValueError as exc:
                out.append(str(exc))
        return out
