"""Switches of one topology, wired together: discovery frames cross links, ports go down and up.

A discovery frame (LLDP or BDDP) that the controller sends out of a linked port of switch A,
in a PACKET_OUT, arrives at the linked port q of switch B as a PACKET_IN (unbuffered, the
whole frame, unmodified, reason NO_MATCH), as a real switch with a table-miss entry would
report it.  B may live in this process or in another shard: ``remote_send`` carries the frame
there (see :mod:`emulator.fabric_net`, a record over TCP on loopback) and that shard's fabric
:meth:`Fabric.deliver`s it.

The fabric records what RFC 8456 needs:

* §5.1.1: Tm1, the first discovery PACKET_OUT read; for every switch port, the first
  discovery PACKET_IN written there (the benchmark takes Tmn from these); every relayed
  PACKET_IN's write time; the relay latency (read of the PACKET_OUT to write of the PACKET_IN).
* §5.1.8: a change (link down or up, switch down) at a recorded instant: PORT_STATUS from the
  ends this process owns, or the closing of a switch's session.  Tcn is the first
  notification written; afterwards the first message of any kind from the controller, the
  first discovery PACKET_OUT (Tcd), and the first one to a switch the change touched (an end of
  the link, or a neighbour of the failed switch): the ports that changed are down, so a
  controller re-probing after the change does it from those switches' other ports.

Hosts announce themselves with a gratuitous ARP PACKET_IN at their edge port (with ``host_ingress`` and flow
tables: the gratuitous ARP enters the switch's tables at that port, as a real host's frame), once the
controller has shown it handles the switch (its first PACKET_OUT there) or ``host_delay``
seconds after the handshake, whichever is first, and again every ``host_refresh`` seconds.
With ``data_plane=True`` every switch has flow tables (:mod:`emulator.flowtable`): FLOW_MODs are
applied (errors answered as OpenFlow says), flow statistics answered, timeouts expired with
FLOW_REMOVED, and every frame, discovery ones included, moves by the tables: a frame arriving
at a port runs through its switch's pipeline and leaves by the ports its actions name, onto the
linked switch (hop by hop, across shards too) or to the host at an edge port, or up to the
controller as a PACKET_IN that names the flow entry that sent it (OpenFlow 1.3: its cookie, its
table, reason ACTION or NO_MATCH for a table-miss entry), which a multi-table controller such as
Faucet checks.  Without it, discovery frames are relayed straight to a PACKET_IN at
the peer (a switch whose table-miss sends to the controller) and other frames are not forwarded.

A switch may be connected to a cluster of controllers (OpenFlow 1.3 roles, :mod:`emulator.roles`): one
session per controller, all sharing the switch's role table and its one pipeline.  Asynchronous
messages fan out by role and asynchronous configuration: a PACKET_IN goes to every connection that
wants it (MASTER and EQUAL ones by default, never a SLAVE unless it asked with SET_ASYNC), PORT_STATUS
and FLOW_REMOVED likewise.  When one connection is lost the switch keeps its pipeline and its other
connections; the pipeline goes with the last one.  ``sessions[dpid]`` is one live connection of each
switch: its MASTER when it has one, else the earliest ready.  A FLOW_MOD ADD that repeats an entry
another connection installed identically (two EQUAL controllers both answering one PACKET_IN) is
applied but counted apart (``flow_mods_duplicate``), so the data-plane counts are not doubled.  Each
switch keeps a bounded timeline of its control-plane events (:class:`~emulator.roles.SwitchTimeline`):
connections ready and lost, role requests, and each connection's first FLOW_MOD and discovery
PACKET_OUT after it became MASTER or after another connection of its switch was lost.
"""

from __future__ import annotations

import bisect
import struct
import time
import weakref
from array import array
from typing import Callable, Optional

from . import codec
from . import flowcodec as fc
from . import flowtable as ftab
from . import roles as rl
from .flowtable import FlowModFailed, Pipeline
from .frames import garp_frame
from .malformed import exception_bytes
from .params import FabricParams
from .protocol import CLOSE_LOCAL, SessionListener, SessionRules, SwitchProtocol, SwitchSpec
from .topology import Endpoint, Topology

ETH_LLDP, ETH_BDDP = 0x88CC, 0x8942
DISCOVERY_ETHERTYPES = (ETH_LLDP, ETH_BDDP)
CONTROL_CHATTER = ("echo_request", "echo_reply")   # not a reaction to a change

# A frame crossing to another shard: destination dpid, port, the PACKET_OUT's read instant (ns).
REMOTE_HEAD = struct.Struct("!QIq")

# A frame that loops (FLOOD on a topology with cycles, or tables that send it round) stops after
# this many hops, and one arriving frame makes at most this many copies: a bounded storm.
MAX_HOPS = 32
MAX_COPIES = 4096
EXPIRE_PERIOD = 1.0         # seconds between flow timeout sweeps


def ethertype(frame: bytes) -> Optional[int]:
    """The frame's EtherType, past one 802.1Q tag if there is one."""
    if len(frame) < 14:
        return None
    value = int.from_bytes(frame[12:14], "big")
    if value == 0x8100 and len(frame) >= 18:
        value = int.from_bytes(frame[16:18], "big")
    return value


TRACE_FIELDS = ("eth_src", "eth_dst", "ipv4_src", "ipv4_dst", "arp_spa", "arp_tpa")
TRACE_LIMIT = 500_000     # FLOW_MOD records kept per trace (the report says when it was reached)


def trace_record(fm: dict) -> Optional[list]:
    """What a FLOW_MOD tells about the paths it serves: the address fields of its match as
    [name, value, mask] and whether it forwards (outputs to a port other than CONTROLLER).  None
    for a FLOW_MOD whose match names no address (a table-miss or discovery entry serves no
    particular path)."""
    fields = [[name, *fm["match"][name]] for name in TRACE_FIELDS if name in fm["match"]]
    if not fields:
        return None
    forwards = any(a[0] == "output" and a[1] != codec.PORT_CONTROLLER
                   for ins in fm["instructions"] if ins[0] in ("apply", "write") for a in ins[1])
    return [fields, forwards]


IN_MEMORY_RULES = SessionRules(handshake_timeout=0)   # a session opened in memory has no controller to wait for


class FabricSwitch(SwitchProtocol):
    """A switch session (one controller's connection to a switch of the fabric) whose PACKET_OUTs go to the
    fabric."""

    def __init__(self, spec: SwitchSpec, clock, fabric: "Fabric", **kwargs):
        super().__init__(spec, clock, listener=fabric, **kwargs)
        self.fabric = fabric
        self.hosts_announced = False
        self._frame = b""

    @property
    def pipeline(self) -> Optional[Pipeline]:
        """The switch's flow tables, shared by its connections: made when its first connection is ready (the
        version is known then), gone with its last; None without a data plane."""
        return self.fabric.pipelines.get(self.spec.datapath_id)

    def _handle(self, msg, frame: bytes, t: int) -> None:
        if self.ready:
            self.fabric.controller_message(self, msg, t)
        self._frame = frame
        super()._handle(msg, frame, t)

    def _on_packet_out(self, msg, t: int) -> None:
        self.fabric.packet_out(self, msg.fields, t)

    def _on_flow_mod(self, msg, t: int) -> None:
        pipeline = self.pipeline
        if pipeline is None:
            return                                     # no data plane: accepted silently
        try:
            fm = fc.decode_flow_mod(self._frame)
        except fc.FlowModError:
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_LEN, self._frame[:64])
            return
        duplicate = self.fabric.repeats_another_connection(self, pipeline, fm)
        try:
            changed = pipeline.flow_mod(fm, t)
        except FlowModFailed as exc:
            v = self.version
            code = {"TABLE_FULL": ftab.FMF_TABLE_FULL, "OVERLAP": ftab.FMF_OVERLAP,
                    "BAD_TABLE_ID": ftab.FMF_BAD_TABLE_ID, "BAD_COMMAND": ftab.FMF_BAD_COMMAND}[exc.code][v]
            self.fabric.flow_mods_failed += 1
            self._send_error(msg, ftab.OFPET_FLOW_MOD_FAILED[v], code, self._frame[:64])
            return
        self.fabric.flow_mod_applied(self, fm, t, changed, duplicate)

    def _on_stats_request(self, msg, t) -> None:
        if self.pipeline is None or msg.fields["stats_type"] != codec.MP_FLOW:
            super()._on_stats_request(msg, t)
            return
        try:
            want = fc.decode_flow_stats_request(self._frame)
        except (fc.FlowModError, struct.error):
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_LEN, self._frame[:64])
            return
        records = fc.encode_flow_stats(self.version, self.pipeline.select({**want, "priority": 0}), self.now_ns())
        for reply in fc.encode_flow_stats_replies(self.version, msg.xid, records):
            self.send(reply, "stats_reply", msg.xid)


ON_ITS_OWN = FabricParams(host_refresh=0.0)     # a fabric built without a benchmark's: hosts announced once


class Fabric(SessionListener):
    """The topology's switches in this process (``owned``; all by default), keyed by datapath id
    once their handshake is done."""

    def __init__(self, topology: Topology, versions=(codec.OFP13,), now_ns: Callable[[], int] = time.monotonic_ns,
                 listener: Optional[SessionListener] = None, owned=None,
                 remote_send: Optional[Callable[[Endpoint, bytes, int], None]] = None, clock=None,
                 params: FabricParams = ON_ITS_OWN):
        """``params``: the switches as the benchmark wants them (:class:`emulator.params.FabricParams`: hosts'
        announcements, flow tables and their table miss, the timelines' length); the keep-alive and reconnection
        fields are the shard's (emulator/fabric_net.py).  ``host_receive(host, frame, t)``, set after: a frame
        delivered to a host port."""
        self.topology = topology
        self.versions = tuple(versions)
        self.now_ns = now_ns
        self.listener = listener or SessionListener()
        self.owned = set(topology.switches if owned is None else owned)
        self.remote_send = remote_send
        self.clock = clock
        self.host_delay = params.host_delay
        self.host_refresh = params.host_refresh
        self.sessions: dict = {}                 # dpid -> a ready FabricSwitch: its MASTER, else the earliest ready
        self.connections: dict = {}              # dpid -> [ready FabricSwitch, ...] (one per controller)
        self.pipelines: dict = {}                # dpid -> its Pipeline (data plane), shared by its connections
        self.roles: dict = {}                    # dpid -> its RoleTable, shared by its connections
        self.timelines: dict = {}                # dpid -> its SwitchTimeline
        self.timeline_limit = params.timeline_limit
        self.down_links: set = set()             # frozenset({Endpoint, Endpoint})
        self.t_first_discovery_out: Optional[int] = None   # Tm1
        self.t_last_relayed_in: Optional[int] = None
        self.first_in: dict = {}                 # Endpoint -> first discovery PACKET_IN written there
        self.relay_times = array("q")            # every relayed PACKET_IN's write, ascending
        self.relay_latency_ns = array("q")
        self.relayed = 0            # PACKET_INs written at a linked port of this process
        self.sent_remote = 0        # frames handed to another shard
        self.received_remote = 0    # frames another shard handed here
        self.not_delivered = 0      # the peer switch has no ready session, or the link is down
        self.packet_ins_unwanted = 0   # the switch has sessions, but none wants the PACKET_IN (slaves only)
        self.discovery_outs = 0     # discovery PACKET_OUTs read
        self.other_outs = 0         # PACKET_OUTs with other frames (not forwarded yet)
        self.buffered_outs = 0      # PACKET_OUTs naming a buffer: the fabric never buffers
        self.hosts_announced = 0    # gratuitous ARP PACKET_INs written
        self.links_seen: set = set()   # (from Endpoint, to Endpoint) relayed at least once here
        self.change: Optional[dict] = None
        self._refresh_call = None
        self._announce_calls: dict = {}   # session -> its hosts' first announcement, pending
        self._garp: dict = {}        # host MAC -> its gratuitous ARP frame (Scapy builds each once)
        # data plane
        self.data_plane = params.data_plane
        self.host_ingress = params.host_ingress and params.data_plane   # announcements through the tables
        self.table_miss = params.table_miss
        self.table_capacity = params.table_capacity
        self.host_receive: Optional[Callable[[object, bytes, int], None]] = None
        self.flow_mods = 0              # FLOW_MODs applied
        self.flow_mods_duplicate = 0    # ADDs repeating an entry another connection installed identically
        self._installed_by = weakref.WeakKeyDictionary()   # FlowEntry -> the connection that installed it
        self.flow_mods_failed = 0       # refused with an OFPT_ERROR
        self.flow_mod_times: dict = {}  # dpid -> array of FLOW_MOD read instants (ns)
        self.flow_removed_sent = 0
        self.frames_forwarded = 0       # frames that crossed a link
        self.frames_to_hosts = 0        # frames delivered at a host port
        self.packet_ins_data = 0        # PACKET_INs of non-discovery frames
        self.exceptions = None          # an ExceptionPlan (§5.3.1): some PACKET_INs replaced by invalid messages
        self.async_messages = 0         # PACKET_INs due while a plan was set, replaced or not
        self.exceptions_sent = 0
        self.storm_drops = 0            # copies dropped by the hop or copy bound
        self.unsupported_outputs = 0    # output to NORMAL / LOCAL / TABLE from a table
        self.trace: Optional[dict] = None   # per-flow provisioning records, while start_trace() is on
        self._expire_call = None

    def prepare_hosts(self) -> None:
        """Build the hosts' frames now, so that no Scapy work falls inside a measured relay."""
        for host in self.topology.hosts:
            if host.at.dpid in self.owned and host.mac not in self._garp:
                self._garp[host.mac] = garp_frame(host.mac, host.ip)

    def spec(self, dpid: int) -> SwitchSpec:
        return SwitchSpec(datapath_id=dpid, versions=self.versions, ports=self.topology.port_specs(dpid))

    def make_protocol(self, dpid: int, clock, **kwargs) -> FabricSwitch:
        """A connection of switch ``dpid`` to one controller (``controller=``: its address, for the timeline)."""
        return FabricSwitch(self.spec(dpid), clock, self, now_ns=self.now_ns, roles=self.role_table(dpid), **kwargs)

    def role_table(self, dpid: int) -> rl.RoleTable:
        table = self.roles.get(dpid)
        if table is None:
            table = self.roles[dpid] = rl.RoleTable()
        return table

    def timeline(self, dpid: int) -> rl.SwitchTimeline:
        tl = self.timelines.get(dpid)
        if tl is None:
            tl = self.timelines[dpid] = rl.SwitchTimeline(self.timeline_limit)
        return tl

    def open_in_memory(self, dpid: int, clock, controller: str = "", **kwargs) -> tuple:
        """Switch ``dpid`` with its handshake done over Twisted's in-memory ``StringTransport`` (no
        socket, no controller): for self-measurement and tests.  (session, transport), cleared.  Called
        again for the same switch, it opens another connection (another controller) of it."""
        from twisted.internet.testing import StringTransport
        version = max(self.versions)
        kwargs.setdefault("rules", IN_MEMORY_RULES)
        session = self.make_protocol(dpid, clock, controller=controller or f"memory:{dpid}", **kwargs)
        transport = StringTransport()
        session.makeConnection(transport)
        session.dataReceived(codec.encode_hello(version, 1) + codec.header(version, codec.FEATURES_REQUEST, 8, 2))
        transport.clear()
        return session, transport

    # ------------------------------------------------------------------ SessionListener
    def session_ready(self, session: SwitchProtocol) -> None:
        dpid = session.spec.datapath_id
        conns = self.connections.setdefault(dpid, [])
        conns.append(session)
        self._elect(dpid)
        self.timeline(dpid).add(session.t_ready or self.now_ns(), "ready", session.controller)
        if self.data_plane and isinstance(session, FabricSwitch) and dpid not in self.pipelines:
            self.pipelines[dpid] = Pipeline(session.version, capacity=self.table_capacity, miss=self.table_miss)
            if self.clock is not None and self._expire_call is None:
                self._expire_call = self.clock.callLater(EXPIRE_PERIOD, self._expire)
        self.listener.session_ready(session)
        if self.clock is not None and self.host_delay > 0:
            self._announce_calls[session] = self.clock.callLater(self.host_delay, self._announce_first, session)
        if self.clock is not None and self.host_refresh > 0 and self._refresh_call is None:
            self._refresh_call = self.clock.callLater(self.host_refresh, self._refresh_hosts)

    def session_closed(self, session: SwitchProtocol, kind: str, detail: str) -> None:
        dpid = session.spec.datapath_id
        conns = self.connections.get(dpid)
        if conns and session in conns:
            conns.remove(session)
            t = self.now_ns()
            tl = self.timeline(dpid)
            tl.forget(session)
            tl.add(t, "lost", session.controller, kind=kind, detail=detail)
            for other in conns:                  # the survivors' first reactions are what a failover shows
                tl.arm(other, f"loss of {session.controller}", t)
            if not conns:                        # the last connection: the switch starts afresh when one comes
                del self.connections[dpid]
                self.pipelines.pop(dpid, None)
                self.role_table(dpid).reset()
            self._elect(dpid)
        self.listener.session_closed(session, kind, detail)

    def role_requested(self, session: SwitchProtocol, role: int, generation_id: int, answer: rl.RoleAnswer,
                       t: int) -> None:
        dpid = session.spec.datapath_id
        tl = self.timeline(dpid)
        tl.add(t, "role_request", session.controller, role=rl.ROLE_NAMES.get(role, str(role)),
               generation_id=generation_id, outcome=answer.outcome)
        if answer.error is None:
            for other in answer.demoted:
                tl.add(t, "demoted", other.controller, by=session.controller)
            if answer.role == rl.MASTER and answer.previous != rl.MASTER:
                tl.arm(session, "master", t)
            self._elect(dpid)
        self.listener.role_requested(session, role, generation_id, answer, t)

    def _elect(self, dpid: int) -> None:
        """``sessions[dpid]``: the switch's MASTER connection if it has one, else its earliest ready one."""
        conns = self.connections.get(dpid)
        if not conns:
            self.sessions.pop(dpid, None)
            return
        master = self.role_table(dpid).master()
        self.sessions[dpid] = master if master in conns else conns[0]

    def _targets(self, dpid: int, kind: int, reason: int):
        """The live connections of switch ``dpid`` that want asynchronous message ``kind`` with ``reason``."""
        conns = self.connections.get(dpid)
        if not conns:
            return ()
        if len(conns) == 1:                      # the common case, on the relay's hot path
            c = conns[0]
            return (c,) if not c.closed and c.wants_async(kind, reason) else ()
        return [c for c in conns if not c.closed and c.wants_async(kind, reason)]

    def all_connections(self) -> list:
        return [c for conns in self.connections.values() for c in conns]

    def master_of(self, dpid: int) -> Optional[str]:
        """The controller of switch ``dpid``'s MASTER connection, or None."""
        master = self.role_table(dpid).master() if dpid in self.roles else None
        return master.controller if master is not None and master in self.connections.get(dpid, ()) else None

    def timeline_report(self, dpids=(), since_ns: Optional[int] = None) -> dict:
        """dpid -> {"events", "dropped", "roles": [[controller, role], ...], "master"} for the switches this
        process owns (``dpids``: only these)."""
        out = {}
        for dpid in sorted(dpids or self.owned):
            if dpid not in self.owned:
                continue
            rep = self.timelines[dpid].report(since_ns) if dpid in self.timelines else {"events": [], "dropped": 0}
            conns = self.connections.get(dpid, ())
            rep["roles"] = [[c.controller, rl.ROLE_NAMES[c.controller_role]] for c in conns]
            rep["master"] = self.master_of(dpid)
            out[dpid] = rep
        return out

    def echo_answered(self, session: SwitchProtocol, rtt_ns: int) -> None:
        self.listener.echo_answered(session, rtt_ns)

    # ------------------------------------------------------------------ hosts
    def announce_hosts(self, sw: FabricSwitch, again: bool = False) -> int:
        """Each host on ``sw`` sends a gratuitous ARP (a PACKET_IN at its port) to this connection's controller,
        unless it is one that wants no PACKET_IN (a SLAVE); the number sent."""
        if sw.closed or not sw.ready or (sw.hosts_announced and not again):
            return 0
        if not self.host_ingress and not sw.wants_async(rl.PACKET_IN, codec.OFPR_NO_MATCH):
            return 0        # (through the tables, the entry that sends it up says the reason)
        sw.hosts_announced = True
        n = 0
        for port in self.topology.ports(sw.spec.datapath_id):
            host = self.topology.host_at(sw.spec.datapath_id, port)
            if host is not None and not self._port_down(Endpoint(sw.spec.datapath_id, port)):
                frame = self._garp.get(host.mac)
                if frame is None:
                    frame = self._garp[host.mac] = garp_frame(host.mac, host.ip)
                if self.host_ingress:      # as the host's frame: through the switch's flow tables
                    self.ingress(Endpoint(sw.spec.datapath_id, port), frame, self.now_ns())
                else:
                    sw.send(codec.encode_packet_in(sw.version, sw.next_xid(), codec.NO_BUFFER, port, frame),
                            "packet_in")
                n += 1
        self.hosts_announced += n
        return n

    def _announce_first(self, session: FabricSwitch) -> None:
        self._announce_calls.pop(session, None)
        self.announce_hosts(session)

    def _refresh_hosts(self) -> None:
        self._refresh_call = None
        for sw in self.all_connections():
            self.announce_hosts(sw, again=True)
        if self.sessions:
            self._refresh_call = self.clock.callLater(self.host_refresh, self._refresh_hosts)

    def stop(self) -> None:
        """No timer of the fabric fires any more (host announcements, their refresh, flow expiry)."""
        calls, self._announce_calls = list(self._announce_calls.values()), {}
        for name in ("_refresh_call", "_expire_call"):
            calls.append(getattr(self, name))
            setattr(self, name, None)
        for call in calls:
            if call is not None and call.active():
                call.cancel()

    # ------------------------------------------------------------------ the relay
    def controller_message(self, sw: FabricSwitch, msg, t: int) -> None:
        """Every message a ready connection reads, before it is handled: the first reaction to a change, and a
        connection's first FLOW_MOD and discovery PACKET_OUT since it was armed (the timeline)."""
        name = msg.name
        ch = self.change
        if ch is not None and ch["t_first_message"] is None and name not in CONTROL_CHATTER:
            ch["t_first_message"], ch["first_message"] = t, f"{name} to switch {sw.spec.datapath_id}"
        if name == "flow_mod" or name == "packet_out":
            tl = self.timelines.get(sw.spec.datapath_id)
            kind = "flow_mod" if name == "flow_mod" else "lldp_out"
            if tl is None or not tl.armed(sw, kind):
                return
            if kind == "lldp_out" and ethertype(msg.fields.get("data", b"")) not in DISCOVERY_ETHERTYPES:
                return
            role = sw.controller_role
            extra = {"role": rl.ROLE_NAMES[role]}
            if role == rl.SLAVE and sw.version == codec.OFP13:
                extra["refused"] = "IS_SLAVE"
            tl.first(sw, kind, t, sw.controller, **extra)

    def packet_out(self, sw: FabricSwitch, fields: dict, t: int) -> None:
        if not sw.hosts_announced:
            self.announce_hosts(sw)
        data = fields.get("data", b"")
        if fields.get("buffer_id", codec.NO_BUFFER) != codec.NO_BUFFER and not data:
            self.buffered_outs += 1
            return
        discovery = ethertype(data) in DISCOVERY_ETHERTYPES
        if not discovery:
            self.other_outs += 1
            if not self.data_plane:
                return
        else:
            self._discovery_out(sw, fields, t)
        if self.data_plane:
            dpid = sw.spec.datapath_id
            budget = [MAX_COPIES]
            for port in fields["out_ports"]:
                if port == codec.PORT_TABLE:
                    pipeline = self.pipelines.get(dpid)
                    if pipeline is not None:
                        self._process(dpid, pipeline, fields["in_port"], data, t, 0, budget)
                else:
                    self._output(dpid, fields["in_port"], port, data, 1, t, 0, budget)
            return
        self._relay(sw, fields, data, t)

    def _discovery_out(self, sw: FabricSwitch, fields: dict, t: int) -> None:
        self.discovery_outs += 1
        if self.t_first_discovery_out is None:
            self.t_first_discovery_out = t
        dpid = sw.spec.datapath_id
        ch = self.change
        if ch is not None:
            if ch["t_first_discovery_out"] is None:
                ch["t_first_discovery_out"] = t
            if ch["t_first_discovery_out_affected"] is None and dpid in ch["affected_switches"]:
                ch["t_first_discovery_out_affected"] = t

    def _relay(self, sw: FabricSwitch, fields: dict, data: bytes, t: int) -> None:
        """Without a data plane: a discovery frame goes straight to a PACKET_IN at each peer port."""
        dpid = sw.spec.datapath_id
        for port in self.topology.egress(dpid, fields["in_port"], fields["out_ports"]):
            peer = self.topology.peer(dpid, port)
            if peer is None:
                continue
            if frozenset((Endpoint(dpid, port), peer)) in self.down_links:
                self.not_delivered += 1
                continue
            if peer.dpid in self.owned:
                if self.deliver(peer, data, t):
                    self.links_seen.add((Endpoint(dpid, port), peer))
            elif self.remote_send is not None:
                self.remote_send(peer, data, t)
                self.sent_remote += 1
            else:
                self.not_delivered += 1

    def deliver(self, at: Endpoint, data: bytes, t_out: int, reason: int = codec.OFPR_NO_MATCH, table_id: int = 0,
                cookie: int = 0) -> bool:
        """Write ``data`` as a PACKET_IN at ``at`` (a port of a switch this process owns), to every connection of
        the switch that wants it; counted once however many they are.  ``table_id`` and ``cookie`` (OpenFlow 1.3)
        name the flow entry that sent it up, when the data plane's tables did.  Under an exception plan (§5.3.1)
        some are replaced by an invalid message, which counts as neither relayed nor delivered."""
        targets = self._targets(at.dpid, rl.PACKET_IN, reason)
        if not targets:
            if at.dpid in self.connections:
                self.packet_ins_unwanted += 1
            else:
                self.not_delivered += 1
            return False
        plan = self.exceptions
        if plan is not None:
            self.async_messages += 1
            if plan.take():
                for target in targets:
                    target.send(exception_bytes(plan.kind, target.version, target.next_xid(), at.port, data, reason),
                                "exception")
                self.exceptions_sent += 1
                return True
        for target in targets:
            target.send(codec.encode_packet_in(target.version, target.next_xid(), codec.NO_BUFFER, at.port, data,
                                               reason=reason, table_id=table_id, cookie=cookie), "packet_in")
        if self.data_plane and ethertype(data) not in DISCOVERY_ETHERTYPES:
            self.packet_ins_data += 1
            if self.trace is not None:
                self.trace["packet_ins"].setdefault((data[6:12], data[:6]), (self.now_ns(), at.dpid))
            return True
        sent = self.now_ns()
        self.relayed += 1
        self.t_last_relayed_in = sent
        self.relay_times.append(sent)
        self.relay_latency_ns.append(sent - t_out)
        self.first_in.setdefault(at, sent)
        return True

    def deliver_remote(self, datagram: bytes) -> bool:
        """A frame another shard relayed here (:data:`REMOTE_HEAD` + frame)."""
        self.received_remote += 1
        dpid, port, t_out = REMOTE_HEAD.unpack_from(datagram)
        if self.data_plane:
            self.ingress(Endpoint(dpid, port), datagram[REMOTE_HEAD.size:], t_out)
            return True
        return self.deliver(Endpoint(dpid, port), datagram[REMOTE_HEAD.size:], t_out)

    # ------------------------------------------------------------------ the data plane
    def ingress(self, at: Endpoint, frame: bytes, t_out: int, hops: int = 0, budget: Optional[list] = None) -> None:
        """``frame`` arrives at switch port ``at`` (from a link or a host): run it through the tables."""
        pipeline = self.pipelines.get(at.dpid)
        if pipeline is None:
            self.not_delivered += 1
            return
        self._process(at.dpid, pipeline, at.port, frame, t_out, hops, budget if budget is not None else [MAX_COPIES])

    def host_send(self, host, frame: bytes) -> None:
        """A host sends ``frame`` into its edge switch."""
        self.send_at(host.at, frame)

    def send_at(self, at: Endpoint, frame: bytes) -> None:
        """A frame enters the network at the edge port ``at`` (a host's or a test port's)."""
        if self._port_down(at):
            self.not_delivered += 1
            return
        self.ingress(at, frame, self.now_ns())

    def _process(self, dpid: int, pipeline: Pipeline, in_port: int, frame: bytes, t_out: int, hops: int,
                 budget: list) -> None:
        for port, _max_len, out, reason, table_id, cookie in pipeline.process(frame, in_port, self.now_ns()):
            self._output(dpid, in_port, port, out, reason, t_out, hops, budget, table_id, cookie)

    def _output(self, dpid: int, in_port: int, port: int, frame: bytes, reason: int, t_out: int, hops: int,
                budget: list, table_id: int = 0, cookie: int = ftab.NO_COOKIE) -> None:
        if port == codec.PORT_CONTROLLER:
            self.deliver(Endpoint(dpid, in_port), frame, t_out, reason, table_id, cookie)
            return
        if port >= codec.PORT_IN_PORT and port not in (codec.PORT_FLOOD, codec.PORT_ALL, codec.PORT_IN_PORT):
            self.unsupported_outputs += 1
            return
        for p in self.topology.egress(dpid, in_port, (port,)):
            if p != in_port or port == codec.PORT_IN_PORT:    # back out of the ingress port: only via IN_PORT
                self._transmit(Endpoint(dpid, p), frame, t_out, hops, budget)

    def _transmit(self, ep: Endpoint, frame: bytes, t_out: int, hops: int, budget: list) -> None:
        """``frame`` leaves switch port ``ep``: onto its link, or to the host there."""
        peer = self.topology.peer(ep.dpid, ep.port)
        if peer is None:
            host = self.topology.host_at(ep.dpid, ep.port)
            if host is not None:
                self.frames_to_hosts += 1
                if self.host_receive is not None:
                    self.host_receive(host, frame, self.now_ns())
            return
        if frozenset((ep, peer)) in self.down_links:
            self.not_delivered += 1
            return
        if hops >= MAX_HOPS or budget[0] <= 0:
            self.storm_drops += 1
            return
        budget[0] -= 1
        self.frames_forwarded += 1
        if peer.dpid in self.owned:
            if ethertype(frame) in DISCOVERY_ETHERTYPES:
                self.links_seen.add((ep, peer))
            self.ingress(peer, frame, t_out, hops + 1, budget)
        elif self.remote_send is not None:
            self.remote_send(peer, frame, t_out)
            self.sent_remote += 1
        else:
            self.not_delivered += 1

    def repeats_another_connection(self, sw: FabricSwitch, pipeline: Pipeline, fm: dict) -> bool:
        """Whether FLOW_MOD ``fm`` from ``sw`` is an ADD of an entry another connection of the switch installed
        identically (same table, priority, match, instructions, cookie, timeouts and flags): two EQUAL
        controllers both answering one PACKET_IN."""
        if fm["command"] != fc.ADD or len(self.connections.get(sw.spec.datapath_id, ())) < 2:
            return False                  # one controller: nothing to repeat (and no lookup on the hot path)
        table = pipeline.tables.get(fm["table_id"])
        old = table.find_exact(fm["match"], fm["priority"]) if table is not None else None
        if old is None:
            return False
        origin = self._installed_by.get(old)
        return (origin is not None and origin is not sw and old.raw_instructions == fm["raw_instructions"]
                and (old.cookie, old.idle_timeout, old.hard_timeout, old.flags)
                == (fm["cookie"], fm["idle_timeout"], fm["hard_timeout"], fm["flags"]))

    def flow_mod_applied(self, sw: FabricSwitch, fm: dict, t: int, changed: Optional[dict] = None,
                         duplicate: bool = False) -> None:
        """Count an applied FLOW_MOD (a ``duplicate`` apart: it changed nothing a controller asked for) and send
        the FLOW_REMOVED it caused."""
        if duplicate:
            self.flow_mods_duplicate += 1
            self._send_flow_removed(sw.spec.datapath_id)
            return
        if len(self.connections.get(sw.spec.datapath_id, ())) > 1:
            for entry in (changed or {}).get("added", ()):
                self._installed_by[entry] = sw
        self.flow_mods += 1
        times = self.flow_mod_times.get(sw.spec.datapath_id)
        if times is None:
            times = self.flow_mod_times[sw.spec.datapath_id] = array("q")
        times.append(t)
        if self.trace is not None and fm["command"] not in (fc.DELETE, fc.DELETE_STRICT):
            rec = trace_record(fm)
            if rec is not None and len(self.trace["flow_mods"]) < TRACE_LIMIT:
                self.trace["flow_mods"].append([t, sw.spec.datapath_id, *rec])
            elif rec is not None:
                self.trace["truncated"] = True
        self._send_flow_removed(sw.spec.datapath_id)

    # ------------------------------------------------------------------ provisioning trace
    def start_trace(self) -> None:
        """Record, from now on, the first data PACKET_IN of every (source MAC, destination MAC)
        pair and every FLOW_MOD whose match names an address: what the path-provisioning
        benchmarks attribute to their test flows (see :func:`trace_record`)."""
        self.trace = {"packet_ins": {}, "flow_mods": [], "truncated": False}

    def trace_report(self) -> dict:
        """The trace as plain data: ``packet_ins`` [[src hex, dst hex, t_ns, dpid]], ``flow_mods``
        [[t_ns, dpid, [[field, value, mask]...], forwards]]."""
        if self.trace is None:
            return {"packet_ins": [], "flow_mods": [], "truncated": False}
        return {"packet_ins": [[s.hex(), d.hex(), t, dpid] for (s, d), (t, dpid) in self.trace["packet_ins"].items()],
                "flow_mods": list(self.trace["flow_mods"]), "truncated": self.trace["truncated"]}

    def _send_flow_removed(self, dpid: int) -> None:
        """FLOW_REMOVED for the entries switch ``dpid`` removed with SEND_FLOW_REM, to every connection that wants
        it (counted once per entry)."""
        pipeline = self.pipelines.get(dpid)
        if pipeline is None:
            return
        pending = pipeline.removed_pending
        if pending:
            now = self.now_ns()
            for entry, reason in pending:
                targets = self._targets(dpid, rl.FLOW_REMOVED, reason)
                for sw in targets:
                    sw.send(fc.encode_flow_removed(sw.version, sw.next_xid(), entry, reason, now - entry.installed_ns),
                            "flow_removed")
                if targets:
                    self.flow_removed_sent += 1
        pending.clear()

    def _expire(self) -> None:
        self._expire_call = None
        now = self.now_ns()
        for dpid, pipeline in list(self.pipelines.items()):
            if pipeline.expire(now):
                self._send_flow_removed(dpid)
        if self.sessions and self.clock is not None:
            self._expire_call = self.clock.callLater(EXPIRE_PERIOD, self._expire)

    def last_relay_before(self, t: int) -> Optional[int]:
        """The last relayed PACKET_IN written at or before ``t``."""
        i = bisect.bisect_right(self.relay_times, t)
        return self.relay_times[i - 1] if i else None

    # ------------------------------------------------------------------ changes (§5.1.8)
    def _port_down(self, ep: Endpoint) -> bool:
        peer = self.topology.peer(ep.dpid, ep.port)
        return peer is not None and frozenset((ep, peer)) in self.down_links

    def _begin_change(self, kind: str, what: str, affected: set) -> dict:
        self.change = {"kind": kind, "what": what, "affected": affected,
                       "affected_switches": {e.dpid for e in affected}, "t_change": self.now_ns(),
                       "t_first_notice": None, "notices": 0, "t_first_message": None, "first_message": None,
                       "t_first_discovery_out": None, "t_first_discovery_out_affected": None}
        return self.change

    def _notice(self, ch: dict, t: int) -> None:
        ch["notices"] += 1
        if ch["t_first_notice"] is None:
            ch["t_first_notice"] = t

    def _port_status(self, ch: dict, ep: Endpoint, down: bool) -> None:
        """PORT_STATUS (MODIFY) for port ``ep`` to every connection of its switch that wants it."""
        if ep.dpid not in self.owned:
            return
        targets = self._targets(ep.dpid, rl.PORT_STATUS, codec.OFPPR_MODIFY)
        if not targets:
            return
        port = codec.port_spec(ep.dpid, ep.port)
        if down:
            port = codec.PortSpec(port.port_no, port.hw_addr, port.name, state=codec.OFPPS_LINK_DOWN)
        for sw in targets:
            sw.send(codec.encode_port_status(sw.version, sw.next_xid(), codec.OFPPR_MODIFY, port), "port_status")
        self._notice(ch, self.now_ns())

    def set_link(self, a: Endpoint, up: bool) -> dict:
        """Take the link at ``a`` down (or bring it back): no frame crosses it while down, and each
        end this process owns sends PORT_STATUS (MODIFY, state LINK_DOWN or 0)."""
        b = self.topology.peer(a.dpid, a.port)
        if b is None:
            raise ValueError(f"{a} is not the end of a link")
        key = frozenset((a, b))
        ch = self._begin_change("link up" if up else "link down", f"link {a} – {b}", {a, b})
        if up:
            self.down_links.discard(key)
        else:
            self.down_links.add(key)
        for ep in (a, b):
            self._port_status(ch, ep, down=not up)
        return ch

    def switch_down(self, dpid: int) -> dict:
        """Switch ``dpid`` fails: its session closes (if this process owns it), its links go down and
        the neighbours this process owns send PORT_STATUS for their ports facing it."""
        if dpid not in self.topology.switches:
            raise ValueError(f"switch {dpid} is not in the topology")
        mine = [Endpoint(dpid, p) for p in self.topology.ports(dpid)]
        facing = [peer for ep in mine if (peer := self.topology.peer(ep.dpid, ep.port)) is not None]
        ch = self._begin_change("switch down", f"switch {dpid}", set(facing))
        for ep in mine:
            peer = self.topology.peer(ep.dpid, ep.port)
            if peer is not None:
                self.down_links.add(frozenset((ep, peer)))
        live = [sw for sw in self.connections.get(dpid, ()) if not sw.closed]
        if dpid in self.owned and live:
            for sw in live:
                sw.abort(CLOSE_LOCAL, "switch down (the benchmark's topology change)")
            t = self.now_ns()
            ch["t_session_closed"] = t
            self._notice(ch, t)
        for ep in facing:
            self._port_status(ch, ep, down=True)
        return ch

    # ------------------------------------------------------------------ reporting
    def status(self, before_ns: Optional[int] = None) -> dict:
        """Counters and instants as plain data (for the shard channel)."""
        ch = None
        if self.change is not None:
            ch = {k: v for k, v in self.change.items() if k not in ("affected", "affected_switches")}
            ch["affected"] = [[e.dpid, e.port] for e in sorted(self.change["affected"], key=lambda e: (e.dpid, e.port))]
        return {"ready": len(self.sessions), "owned": len(self.owned),
                "connections": sum(len(c) for c in self.connections.values()),
                "packet_ins_unwanted": self.packet_ins_unwanted,
                "t_first_discovery_out": self.t_first_discovery_out, "t_last_relayed_in": self.t_last_relayed_in,
                "last_relay_before": self.last_relay_before(before_ns) if before_ns is not None else None,
                "first_in": [[e.dpid, e.port, t] for e, t in self.first_in.items()],
                "relayed": self.relayed, "sent_remote": self.sent_remote, "received_remote": self.received_remote,
                "async_messages": self.async_messages, "exceptions_sent": self.exceptions_sent,
                "not_delivered": self.not_delivered,
                "discovery_outs": self.discovery_outs, "other_outs": self.other_outs,
                "buffered_outs": self.buffered_outs, "hosts_announced": self.hosts_announced,
                "relay_latency_ns": self.relay_latency_ns.tobytes(), "change": ch,
                "data_plane": self.data_plane and {
                    "flow_mods": self.flow_mods, "flow_mods_failed": self.flow_mods_failed,
                    "flow_mods_duplicate": self.flow_mods_duplicate,
                    "flow_removed_sent": self.flow_removed_sent, "frames_forwarded": self.frames_forwarded,
                    "frames_to_hosts": self.frames_to_hosts, "packet_ins_data": self.packet_ins_data,
                    "storm_drops": self.storm_drops, "unsupported_outputs": self.unsupported_outputs,
                    "flow_entries": sum(p.count for p in self.pipelines.values())}}
