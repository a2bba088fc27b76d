"""OpenFlow 1.3 controller roles: one switch's role state, shared by all its control connections.

Pure: no I/O, no clock, no Twisted.  A connection is any hashable object (the switch protocol of one
control session); the switch keeps:

* a role per connection: EQUAL (the default), MASTER or SLAVE.  ROLE_REQUEST NOCHANGE answers the
  current role; a new MASTER demotes every other MASTER connection of the switch to SLAVE;
* one generation_id cache for the switch.  MASTER and SLAVE requests carry a 64-bit generation_id; a
  request is stale, and refused with ROLE_REQUEST_FAILED / STALE, when a cache exists and
  ``(int64)(generation_id - cached) < 0`` (so the comparison survives wrap-around).  EQUAL requests do
  not touch the cache;
* what a SLAVE may not do: the state-changing writes of :data:`SLAVE_REFUSED` are refused with
  BAD_REQUEST / IS_SLAVE and not applied;
* per connection, which asynchronous messages it wants (:class:`AsyncConfig`, set by SET_ASYNC and
  read back by GET_ASYNC), with the OpenFlow 1.3 defaults: a MASTER or EQUAL connection gets PACKET_IN
  for NO_MATCH and ACTION, every PORT_STATUS and every FLOW_REMOVED; a SLAVE gets every PORT_STATUS
  and nothing else.

OpenFlow 1.0 has no roles; the protocol does not consult this module for a 1.0 session.

:class:`SwitchTimeline` is the bounded record of one switch's control-plane events that the controller
failover benchmark (RFC 8456 §5.4.1) reads: connections ready and lost, role requests, and the first
FLOW_MOD and discovery PACKET_OUT a connection sends after it became MASTER or after another
connection of its switch was lost.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Hashable, Optional

from .codec import OFPBRC_IS_SLAVE, OFPET_ROLE_REQUEST_FAILED, OFPRRFC_BAD_ROLE, OFPRRFC_STALE, OFPRRFC_UNSUP  # noqa: F401
from .codec import OFPCR_ROLE_EQUAL as EQUAL
from .codec import OFPCR_ROLE_MASTER as MASTER
from .codec import OFPCR_ROLE_NOCHANGE as NOCHANGE
from .codec import OFPCR_ROLE_SLAVE as SLAVE

ROLE_NAMES = {NOCHANGE: "nochange", EQUAL: "equal", MASTER: "master", SLAVE: "slave"}

# What a SLAVE connection may not send: every message that changes the switch's state.
SLAVE_REFUSED = frozenset({"packet_out", "flow_mod", "group_mod", "port_mod", "table_mod", "meter_mod"})

# Asynchronous message kinds, in the order of ofp_async_config's mask pairs.
PACKET_IN, PORT_STATUS, FLOW_REMOVED = 0, 1, 2
ASYNC_KINDS = ("packet_in", "port_status", "flow_removed")

_U64 = (1 << 64) - 1
TIMELINE_LIMIT = 4096       # events kept per switch (the oldest go first)


def stale(generation_id: int, cached: Optional[int]) -> bool:
    """Whether ``generation_id`` is older than the cached one: their 64-bit difference, read as a signed
    integer, is negative.  Nothing is stale before the first MASTER or SLAVE request."""
    if cached is None:
        return False
    return (generation_id - cached) & _U64 >= 1 << 63


@dataclass(frozen=True)
class AsyncConfig:
    """Which asynchronous messages one connection wants: ``masks`` are ofp_async_config's six 32-bit
    masks in wire order (PACKET_IN master/equal, PACKET_IN slave, PORT_STATUS master/equal, PORT_STATUS
    slave, FLOW_REMOVED master/equal, FLOW_REMOVED slave); bit ``r`` of a mask stands for reason ``r``.

    The default is OpenFlow 1.3's: PACKET_IN reasons NO_MATCH and ACTION (not INVALID_TTL), PORT_STATUS
    ADD, DELETE and MODIFY for every role, FLOW_REMOVED IDLE_TIMEOUT, HARD_TIMEOUT, DELETE and
    GROUP_DELETE for a master or equal connection, none for a slave."""
    masks: tuple = (0b11, 0, 0b111, 0b111, 0b1111, 0)

    def wants(self, kind: int, reason: int, role: int) -> bool:
        """Does a connection in ``role`` want message ``kind`` (PACKET_IN ...) with ``reason``?"""
        if not 0 <= reason < 32:
            return False
        return bool(self.masks[2 * kind + (role == SLAVE)] >> reason & 1)

    def report(self) -> dict:
        """The masks by kind, as ``{"packet_in": [master/equal, slave], ...}``."""
        return {name: [self.masks[2 * i], self.masks[2 * i + 1]] for i, name in enumerate(ASYNC_KINDS)}


DEFAULT_ASYNC = AsyncConfig()


@dataclass(frozen=True)
class RoleAnswer:
    """What a ROLE_REQUEST got: the connection's role now and the generation_id its ROLE_REPLY carries,
    the role it had before, the connections demoted to SLAVE by it, or ``error`` (an OFPRRFC_* code)
    when it was refused and nothing changed."""
    role: int
    generation_id: int
    previous: int
    demoted: tuple = ()
    error: Optional[int] = None

    @property
    def outcome(self) -> str:
        if self.error == OFPRRFC_STALE:
            return "stale"
        if self.error is not None:
            return "bad role"
        return ROLE_NAMES[self.role]


class RoleTable:
    """One switch's roles: a role per connection and the switch's generation_id cache."""

    def __init__(self):
        self._roles: dict = {}
        self.generation_id: Optional[int] = None     # the cache: None until the first MASTER or SLAVE request

    def role_of(self, conn: Hashable) -> int:
        return self._roles.get(conn, EQUAL)

    def join(self, conn: Hashable) -> None:
        """A connection of the switch is up; it starts EQUAL."""
        self._roles.setdefault(conn, EQUAL)

    def leave(self, conn: Hashable) -> None:
        """A connection is gone: it holds no role any more (a lost MASTER leaves the switch without one)."""
        self._roles.pop(conn, None)

    def reset(self) -> None:
        """The switch has no connection left: it starts afresh, with no generation_id cached."""
        self._roles.clear()
        self.generation_id = None

    def connections(self) -> list:
        return list(self._roles)

    def master(self) -> Optional[Hashable]:
        for conn, role in self._roles.items():
            if role == MASTER:
                return conn
        return None

    def may_write(self, conn: Hashable) -> bool:
        """Whether ``conn`` may change the switch's state (every role but SLAVE may)."""
        return self._roles.get(conn, EQUAL) != SLAVE

    def request(self, conn: Hashable, role: int, generation_id: int) -> RoleAnswer:
        """Apply a ROLE_REQUEST from ``conn``: see the module's rules."""
        previous = self.role_of(conn)
        if role == NOCHANGE:
            return RoleAnswer(previous, self._reply_generation(), previous)
        if role not in (EQUAL, MASTER, SLAVE):
            return RoleAnswer(previous, self._reply_generation(), previous, error=OFPRRFC_BAD_ROLE)
        if role != EQUAL:
            if stale(generation_id, self.generation_id):
                return RoleAnswer(previous, self._reply_generation(), previous, error=OFPRRFC_STALE)
            self.generation_id = generation_id & _U64
        demoted = ()
        if role == MASTER:
            demoted = tuple(c for c, r in self._roles.items() if r == MASTER and c is not conn)
            for c in demoted:
                self._roles[c] = SLAVE
        self._roles[conn] = role
        return RoleAnswer(role, self._reply_generation(), previous, demoted)

    def _reply_generation(self) -> int:
        return 0 if self.generation_id is None else self.generation_id

    def report(self, label=str) -> list:
        """[[label(connection), role name], ...] in the order the connections joined."""
        return [[label(c), ROLE_NAMES[r]] for c, r in self._roles.items()]


FIRST_KINDS = ("flow_mod", "lldp_out")


class SwitchTimeline:
    """One switch's control-plane events, oldest first, at most ``limit`` of them (the oldest are dropped).

    An event is a plain dict: ``t_ns`` (the emulator's monotonic clock), ``event`` and ``controller`` (the
    connection's controller address), and what the event says:

    * ``ready``: a connection's handshake completed;
    * ``lost``: a ready connection ended, ``kind`` how (closed by the controller (FIN), reset (RST), echo
      timeout ...) and ``detail``;
    * ``role_request``: ``role`` asked, ``generation_id``, ``outcome`` (the role granted, ``stale`` or
      ``bad role``);
    * ``demoted``: a MASTER turned SLAVE because the connection named in ``by`` became MASTER;
    * ``first_flow_mod``, ``first_lldp_out``: the first FLOW_MOD (``refused`` when it came from a slave) and
      the first discovery (LLDP or BDDP) PACKET_OUT read from a connection after it was *armed*: when it
      became MASTER or when another connection of its switch was lost; ``after`` says which, ``after_ns``
      when.  These are what the failover benchmark reads as the surviving controller's first reactions.
    """

    def __init__(self, limit: int = TIMELINE_LIMIT):
        if limit < 1:
            raise ValueError(f"a timeline keeps at least one event (got {limit})")
        self.events: deque = deque(maxlen=limit)
        self.recorded = 0
        self._armed: dict = {}        # connection -> {kind: (cause, t_ns)}

    @property
    def dropped(self) -> int:
        return self.recorded - len(self.events)

    def add(self, t_ns: int, event: str, controller: str, **details) -> dict:
        record = {"t_ns": t_ns, "event": event, "controller": controller, **details}
        self.events.append(record)
        self.recorded += 1
        return record

    def arm(self, conn: Hashable, cause: str, t_ns: int) -> None:
        """From now on, record the first FLOW_MOD and the first discovery PACKET_OUT of ``conn``."""
        self._armed[conn] = {kind: (cause, t_ns) for kind in FIRST_KINDS}

    def armed(self, conn: Hashable, kind: str) -> bool:
        if not self._armed:
            return False
        pending = self._armed.get(conn)
        return pending is not None and kind in pending

    def first(self, conn: Hashable, kind: str, t_ns: int, controller: str, **details) -> Optional[dict]:
        """``conn`` sent a message of ``kind`` (one of :data:`FIRST_KINDS`) at ``t_ns``: recorded if it is the
        first since the connection was armed."""
        pending = self._armed.get(conn)
        if pending is None or kind not in pending:
            return None
        cause, armed_ns = pending.pop(kind)
        if not pending:
            del self._armed[conn]
        return self.add(t_ns, "first_" + kind, controller, after=cause, after_ns=armed_ns, **details)

    def forget(self, conn: Hashable) -> None:
        """A connection is gone: nothing more is awaited from it."""
        self._armed.pop(conn, None)

    def report(self, since_ns: Optional[int] = None) -> dict:
        """``{"events": [...], "dropped": n}``, the events at or after ``since_ns`` when given."""
        events = [dict(e) for e in self.events if since_ns is None or e["t_ns"] >= since_ns]
        return {"events": events, "dropped": self.dropped}
