"""Switches of one topology, wired together inside one emulator process.

A discovery frame (LLDP or BDDP) that the controller sends out of a linked port of switch A,
in a PACKET_OUT, arrives at the linked port q of switch B as a PACKET_IN (unbuffered, the
whole frame, reason NO_MATCH), as a real switch with a table-miss entry would report it.
The fabric records the instants RFC 8456 §5.1.1 needs: Tm1, the first discovery PACKET_OUT
read, and the write of each relayed PACKET_IN (the benchmark takes Tmn from these), plus the
relay latency inside the emulator (read of the PACKET_OUT to write of the PACKET_IN).

Other frames (the data plane) are not forwarded here yet.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from . import codec
from .protocol import SessionListener, SwitchProtocol, SwitchSpec
from .topology import Endpoint, Topology

ETH_LLDP, ETH_BDDP = 0x88CC, 0x8942
DISCOVERY_ETHERTYPES = (ETH_LLDP, ETH_BDDP)


def ethertype(frame: bytes) -> Optional[int]:
    """The frame's EtherType, past one 802.1Q tag if there is one."""
    if len(frame) < 14:
        return None
    value = int.from_bytes(frame[12:14], "big")
    if value == 0x8100 and len(frame) >= 18:
        value = int.from_bytes(frame[16:18], "big")
    return value


class FabricSwitch(SwitchProtocol):
    """A switch session whose PACKET_OUTs go to the fabric."""

    def __init__(self, spec: SwitchSpec, clock, fabric: "Fabric", **kwargs):
        super().__init__(spec, clock, listener=fabric, **kwargs)
        self.fabric = fabric

    def _on_packet_out(self, msg, t: int) -> None:
        self.fabric.packet_out(self, msg.fields, t)


class Fabric(SessionListener):
    """The topology's switches in this process, keyed by datapath id once their handshake is done."""

    def __init__(self, topology: Topology, versions=(codec.OFP13,), now_ns: Callable[[], int] = time.monotonic_ns,
                 listener: Optional[SessionListener] = None):
        self.topology = topology
        self.versions = tuple(versions)
        self.now_ns = now_ns
        self.listener = listener or SessionListener()
        self.sessions: dict = {}                 # dpid -> ready FabricSwitch
        self.t_first_discovery_out: Optional[int] = None   # Tm1
        self.t_last_relayed_in: Optional[int] = None
        self.relayed = 0            # PACKET_INs written at a linked port
        self.not_delivered = 0      # the peer switch has no ready session
        self.discovery_outs = 0     # discovery PACKET_OUTs read
        self.other_outs = 0         # PACKET_OUTs with other frames (not forwarded yet)
        self.buffered_outs = 0      # PACKET_OUTs naming a buffer: the fabric never buffers
        self.relay_latency_ns: list = []
        self.links_seen: set = set()   # (from Endpoint, to Endpoint) relayed at least once

    def spec(self, dpid: int) -> SwitchSpec:
        return SwitchSpec(datapath_id=dpid, versions=self.versions, ports=self.topology.port_specs(dpid))

    def make_protocol(self, dpid: int, clock, **kwargs) -> FabricSwitch:
        return FabricSwitch(self.spec(dpid), clock, self, now_ns=self.now_ns, **kwargs)

    # ------------------------------------------------------------------ SessionListener
    def session_ready(self, session: SwitchProtocol) -> None:
        self.sessions[session.spec.datapath_id] = session
        self.listener.session_ready(session)

    def session_closed(self, session: SwitchProtocol, kind: str, detail: str) -> None:
        if self.sessions.get(session.spec.datapath_id) is session:
            del self.sessions[session.spec.datapath_id]
        self.listener.session_closed(session, kind, detail)

    def echo_answered(self, session: SwitchProtocol, rtt_ns: int) -> None:
        self.listener.echo_answered(session, rtt_ns)

    # ------------------------------------------------------------------ the relay
    def packet_out(self, sw: FabricSwitch, fields: dict, t: int) -> None:
        data = fields.get("data", b"")
        if fields.get("buffer_id", codec.NO_BUFFER) != codec.NO_BUFFER and not data:
            self.buffered_outs += 1
            return
        if ethertype(data) not in DISCOVERY_ETHERTYPES:
            self.other_outs += 1
            return
        self.discovery_outs += 1
        if self.t_first_discovery_out is None:
            self.t_first_discovery_out = t
        dpid = sw.spec.datapath_id
        for port in self.topology.egress(dpid, fields["in_port"], fields["out_ports"]):
            peer = self.topology.peer(dpid, port)
            if peer is None:
                continue
            target = self.sessions.get(peer.dpid)
            if target is None or target.closed:
                self.not_delivered += 1
                continue
            target.send(codec.encode_packet_in(target.version, target.next_xid(), codec.NO_BUFFER, peer.port, data),
                        "packet_in")
            sent = self.now_ns()
            self.relayed += 1
            self.t_last_relayed_in = sent
            self.relay_latency_ns.append(sent - t)
            self.links_seen.add((Endpoint(dpid, port), peer))

