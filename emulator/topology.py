"""Emulated network topologies: switches wired by links, hosts at the edges.

Pure data, no reactor.  A :class:`Topology` is built by one of the generators (linear, ring,
tree, leaf-spine, full mesh), from a spec string such as ``leaf-spine:2x4``, or from a file
(YAML, or GraphML as written by other emulators and the Internet Topology Zoo).  The graph
work is networkx's; this module only adds what OpenFlow needs: stable datapath ids, port
numbers and MACs, and validation that names what is wrong.

Numbering is deterministic: switches are dpids 1..N in the generator's order; on each
switch, ports are numbered from 1 in the order links are declared, then hosts.  Port MACs
are :func:`emulator.codec.port_mac`'s (``02:`` + dpid + port); host MACs ``0e:`` + dpid (3
bytes) + host index (2 bytes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Union

import networkx as nx

from emulator.codec import PORT_ALL, PORT_FLOOD, PORT_IN_PORT, port_spec
from emulator.documents import load_yaml

MAX_DPID = 0xFFFFFF      # three bytes of the port and host MACs
MAX_PORT = 0xFEFF        # OpenFlow 1.3 OFPP_MAX; 1.0 allows up to 0xFF00


class TopologyError(ValueError):
    """A topology that cannot be built, with what is wrong and where."""


@dataclass(frozen=True)
class Endpoint:
    dpid: int
    port: int

    def __str__(self) -> str:
        return f"switch {self.dpid} port {self.port}"


@dataclass(frozen=True)
class Link:
    a: Endpoint
    b: Endpoint


@dataclass(frozen=True)
class Host:
    name: str
    at: Endpoint
    mac: bytes
    ip: str


@dataclass
class Topology:
    """Switches, links and hosts, validated.  Use the generators or :func:`build`."""

    kind: str
    switches: list
    links: list
    hosts: list
    _peer: dict = field(default_factory=dict, repr=False)
    _ports: dict = field(default_factory=dict, repr=False)
    _port_sets: dict = field(default_factory=dict, repr=False)
    _host_at: dict = field(default_factory=dict, repr=False)

    def ports(self, dpid: int) -> list:
        """The switch's port numbers, ascending (links and hosts)."""
        return self._ports.get(dpid, [])

    def openflow10_problem(self) -> Optional[str]:
        """Why OpenFlow 1.0 cannot describe this topology (a switch with more ports than its FEATURES_REPLY
        holds), or None."""
        from emulator.codec import MAX_PORTS_10
        widest = max(self.switches, key=lambda s: len(self.ports(s)))
        if len(self.ports(widest)) > MAX_PORTS_10:
            return (f"{self.kind}: switch {widest} has {len(self.ports(widest))} ports; OpenFlow 1.0 describes at "
                    f"most {MAX_PORTS_10} (use --openflow 1.3)")
        return None

    def port_specs(self, dpid: int) -> tuple:
        """The switch's ports as FEATURES_REPLY / PORT_DESC describe them."""
        return tuple(port_spec(dpid, p) for p in self.ports(dpid))

    def peer(self, dpid: int, port: int) -> Optional[Endpoint]:
        """The switch port at the other end of a link, or None (host port or unused)."""
        return self._peer.get(Endpoint(dpid, port))

    def egress(self, dpid: int, in_port: int, out_ports: Iterable[int]) -> list:
        """The ports of switch ``dpid`` that a PACKET_OUT's OUTPUT actions send its frame out of
        (``out_ports`` as :func:`emulator.codec.packet_out_fields` gives them).  FLOOD and ALL are
        every port but ``in_port``; IN_PORT is ``in_port``; ports the switch lacks, and
        CONTROLLER, LOCAL, NORMAL and TABLE, send nothing onto a link or host."""
        have = self._port_sets.get(dpid, ())
        out: list = []
        for p in out_ports:
            if p in (PORT_FLOOD, PORT_ALL):
                out += [q for q in self.ports(dpid) if q != in_port]
            elif p == PORT_IN_PORT:
                out.append(in_port)
            elif p in have:
                out.append(p)
        return [p for p in dict.fromkeys(out) if p in have]

    def relay(self, dpid: int, in_port: int, out_ports: Iterable[int]) -> list:
        """Where a frame the controller sends out of switch ``dpid`` arrives: the linked switch
        ports (each becomes a PACKET_IN there), in egress order."""
        return [peer for p in self.egress(dpid, in_port, out_ports) if (peer := self.peer(dpid, p)) is not None]

    def host_at(self, dpid: int, port: int) -> Optional[Host]:
        return self._host_at.get(Endpoint(dpid, port))

    def graph(self) -> nx.MultiGraph:
        """Switches and their links (ports as edge attributes)."""
        g = nx.MultiGraph()
        g.add_nodes_from(self.switches)
        for link in self.links:
            g.add_edge(link.a.dpid, link.b.dpid, ports=(link.a.port, link.b.port))
        return g

    def to_dict(self) -> dict:
        """Plain data (for shards and results): :func:`from_dict` rebuilds the same topology."""
        return {"kind": self.kind, "switches": list(self.switches),
                "links": [[link.a.dpid, link.a.port, link.b.dpid, link.b.port] for link in self.links],
                "hosts": [[h.at.dpid, h.at.port] for h in self.hosts]}

    def directed_links(self) -> set:
        """Each link in both directions, as ((dpid, port), (dpid, port)) pairs."""
        out = set()
        for link in self.links:
            a, b = (link.a.dpid, link.a.port), (link.b.dpid, link.b.port)
            out.add((a, b))
            out.add((b, a))
        return out

    def summary(self) -> dict:
        return {"topology": self.kind, "nodes": len(self.switches), "links": len(self.links),
                "hosts": len(self.hosts)}


def host_mac(dpid: int, index: int) -> bytes:
    return bytes([0x0E]) + dpid.to_bytes(3, "big") + index.to_bytes(2, "big")


class _Numbering:
    """One topology being validated and numbered: every problem found is kept, in the order found."""

    def __init__(self, switches: list):
        self.switches = switches
        self.problems: list = []
        self.seen: set = set()
        for s in switches:
            if not isinstance(s, int) or isinstance(s, bool) or not 1 <= s <= MAX_DPID:
                self.problems.append(f"switch id {s!r} is not an integer in 1..{MAX_DPID}")
            elif s in self.seen:
                self.problems.append(f"switch {s} is declared twice")
            self.seen.add(s)
        self.used: dict = {}        # Endpoint -> what uses it
        self.next_port = {s: 1 for s in switches}

    def take(self, dpid, port, what) -> Optional[Endpoint]:
        """The port ``what`` uses (None: the switch's next free one), or None after noting why it cannot."""
        if dpid not in self.seen:
            self.problems.append(f"{what}: dangling, switch {dpid!r} is not in the topology")
            return None
        if port is None:
            while Endpoint(dpid, self.next_port[dpid]) in self.used:
                self.next_port[dpid] += 1
            port = self.next_port[dpid]
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= MAX_PORT:
            self.problems.append(f"{what}: port {port!r} on switch {dpid} is not an integer in 1..{MAX_PORT}")
            return None
        ep = Endpoint(dpid, port)
        if ep in self.used:
            self.problems.append(f"{what}: duplicate port, {ep} is already used by {self.used[ep]}")
            return None
        self.used[ep] = what
        return ep

    def links(self, links: Iterable[tuple]) -> list:
        made = []
        for i, spec in enumerate(links, 1):
            if len(spec) == 2:
                a, ap, b, bp = spec[0], None, spec[1], None
            elif len(spec) == 4:
                a, ap, b, bp = spec
            else:
                self.problems.append(f"link {i}: expected (a, b) or (a, a_port, b, b_port), got {spec!r}")
                continue
            what = f"link {i} ({a}–{b})"
            if a == b and a in self.seen:
                self.problems.append(f"{what}: a link from a switch to itself")
                continue
            ea, eb = self.take(a, ap, what), self.take(b, bp, what)
            if ea and eb:
                made.append(Link(ea, eb))
        return made

    def hosts(self, hosts: Iterable) -> list:
        made = []
        per_switch: dict = {}
        for i, spec in enumerate(hosts, 1):
            dpid, port = (spec, None) if not isinstance(spec, (tuple, list)) else tuple(spec)
            ep = self.take(dpid, port, f"host {i}")
            if ep:
                index = per_switch[dpid] = per_switch.get(dpid, 0) + 1
                made.append(Host(name=f"h{dpid}-{index}", at=ep, mac=host_mac(dpid, index),
                                 ip=f"10.{dpid >> 8 & 0xFF}.{dpid & 0xFF}.{index}"))
        return made

    def check_connected(self, topo: Topology) -> None:
        if not self.problems and not nx.is_connected(topo.graph()):
            parts = sorted((sorted(c) for c in nx.connected_components(topo.graph())), key=len)
            self.problems.append(f"the topology is disconnected: {len(parts)} parts, the smallest is switches "
                                 f"{parts[0][:10]}")

    def index(self, topo: Topology) -> None:
        """The topology's lookup tables: each port's peer, each switch's ports, each host by its port."""
        for link in topo.links:
            topo._peer[link.a], topo._peer[link.b] = link.b, link.a
        for ep in self.used:
            topo._ports.setdefault(ep.dpid, []).append(ep.port)
        for dpid, ports in topo._ports.items():
            ports.sort()
            topo._port_sets[dpid] = frozenset(ports)
        topo._host_at = {h.at: h for h in topo.hosts}


def build(kind: str, switches: Iterable[int], links: Iterable[tuple], hosts: Iterable[tuple] = (),
          connected: bool = True) -> Topology:
    """Validate and number a topology.

    ``links``: ``(a, b)`` or ``(a, a_port, b, b_port)`` with either port None for the next free
    one.  ``hosts``: a switch dpid, or ``(dpid, port)``.  Errors name every problem found.
    """
    switches = list(switches)
    n = _Numbering(switches)
    made_links = n.links(links)
    made_hosts = n.hosts(hosts)
    if not switches:
        n.problems.append("the topology has no switches")
    topo = Topology(kind, switches, made_links, made_hosts)
    if connected:
        n.check_connected(topo)
    if n.problems:
        raise TopologyError(f"{kind}: " + "; ".join(n.problems))
    n.index(topo)
    return topo


def isolated(kind: str, switches: Iterable[int], host_ports: Iterable[int] = (1,)) -> Topology:
    """Switches with no links between them, a host at each of ``host_ports`` of every switch: how the benchmarks
    that connect switches one by one (§5.2.1's sessions, §5.1.2/§5.1.3's traffic switches) describe them to a
    controller that serves only the switches it is configured with."""
    switches = list(switches)
    ports = tuple(host_ports)
    return build(kind, switches, [], [(dpid, port) for dpid in switches for port in ports], connected=False)


def from_dict(data: dict) -> Topology:
    """The topology :meth:`Topology.to_dict` described (validated again)."""
    try:
        return build(data["kind"], data["switches"], [tuple(link) for link in data["links"]],
                     [tuple(h) for h in data.get("hosts", ())], connected=False)
    except (KeyError, TypeError) as exc:
        raise TopologyError(f"topology data is incomplete or malformed: {exc!r}") from None


def _need(kind: str, **sizes) -> None:
    bad = [f"{name} must be a whole number ≥ {low} (got {value!r})" for name, (value, low) in sizes.items()
           if not isinstance(value, int) or isinstance(value, bool) or value < low]
    if bad:
        raise TopologyError(f"{kind}: " + "; ".join(bad))


def _from_graph(kind: str, g: nx.Graph, hosts_per: dict) -> Topology:
    """Switches are the graph's nodes, relabelled 1..N in the generator's node order."""
    order = {node: i for i, node in enumerate(g.nodes, 1)}
    links = [(order[u], order[v]) for u, v in g.edges]
    hosts = [order[node] for node, count in hosts_per.items() for _ in range(count)]
    return build(kind, order.values(), links, hosts)


def linear(n: int, hosts_per_switch: int = 1) -> Topology:
    _need("linear", n=(n, 1), hosts_per_switch=(hosts_per_switch, 0))
    g = nx.path_graph(n)
    return _from_graph(f"linear:{n}", g, {v: hosts_per_switch for v in g})


def ring(n: int, hosts_per_switch: int = 1) -> Topology:
    _need("ring", n=(n, 3), hosts_per_switch=(hosts_per_switch, 0))
    g = nx.cycle_graph(n)
    return _from_graph(f"ring:{n}", g, {v: hosts_per_switch for v in g})


def tree(depth: int, fanout: int, hosts_per_leaf: int = 1) -> Topology:
    """A balanced tree of switches (depth 1 is a single switch); hosts on the bottom layer."""
    _need("tree", depth=(depth, 1), fanout=(fanout, 1), hosts_per_leaf=(hosts_per_leaf, 0))
    g = nx.balanced_tree(fanout, depth - 1)
    leaves = [v for v in g if g.degree(v) <= 1 and (v != 0 or depth == 1)]
    return _from_graph(f"tree:{depth},{fanout}", g, {v: hosts_per_leaf for v in leaves})


def leaf_spine(spines: int, leaves: int, hosts_per_leaf: int = 1) -> Topology:
    """RFC 8455 §2.1.12: every leaf linked to every spine.  Spines are dpids 1..S, leaves
    S+1..S+L; TP1 belongs on the first leaf and TP2 on the last (RFC 8456 §4.1)."""
    _need("leaf-spine", spines=(spines, 1), leaves=(leaves, 1), hosts_per_leaf=(hosts_per_leaf, 0))
    g = nx.complete_bipartite_graph(spines, leaves)
    return _from_graph(f"leaf-spine:{spines}x{leaves}", g,
                       {v: hosts_per_leaf for v in range(spines, spines + leaves)})


def mesh(n: int, hosts_per_switch: int = 1) -> Topology:
    _need("mesh", n=(n, 1), hosts_per_switch=(hosts_per_switch, 0))
    g = nx.complete_graph(n)
    return _from_graph(f"mesh:{n}", g, {v: hosts_per_switch for v in g})


SIZED_FAMILIES = {"linear": 1, "ring": 3, "mesh": 1, "leaf-spine": 2}


def sized(family: str, nodes: int) -> Topology:
    """A topology of ``family`` with exactly ``nodes`` switches, for searches that add or remove
    one node at a time (RFC 8456 §5.2.2).  A leaf-spine of N nodes has 2 spines (1 when N = 2)
    and N − 2 leaves."""
    if family not in SIZED_FAMILIES:
        raise TopologyError(f"topology family {family!r} cannot be grown one node at a time "
                            f"(use one of {', '.join(SIZED_FAMILIES)})")
    low = SIZED_FAMILIES[family]
    if not isinstance(nodes, int) or nodes < low:
        raise TopologyError(f"{family} needs at least {low} switches (asked for {nodes!r})")
    if family == "leaf-spine":
        spines = 1 if nodes == 2 else 2
        return leaf_spine(spines, nodes - spines)
    return {"linear": linear, "ring": ring, "mesh": mesh}[family](nodes)


def load(path: Union[str, Path]) -> Topology:
    """A topology from a YAML or GraphML file (by extension)."""
    path = Path(path)
    if not path.is_file():
        raise TopologyError(f"topology file {path}: not found")
    if path.suffix.lower() in (".yaml", ".yml"):
        return _load_yaml(path)
    if path.suffix.lower() == ".graphml":
        return _load_graphml(path)
    raise TopologyError(f"topology file {path}: unknown format (use .yaml, .yml or .graphml)")


def _load_yaml(path: Path) -> Topology:
    """``switches``: a count or a list of dpids; ``links``: ``[a, b]`` or ``{a, b, a_port,
    b_port}``; ``hosts``: a dpid or ``{switch, port}``; ``connected``: false to allow islands."""
    doc = load_yaml(path, "topology file", TopologyError)
    if not isinstance(doc, dict) or "switches" not in doc:
        raise TopologyError(f"topology file {path}: expected a mapping with 'switches' (and 'links', 'hosts')")
    sw = doc["switches"]
    switches = list(range(1, sw + 1)) if isinstance(sw, int) and not isinstance(sw, bool) else sw
    if not isinstance(switches, list):
        raise TopologyError(f"topology file {path}: 'switches' must be a count or a list of ids")
    links = []
    for i, item in enumerate(doc.get("links") or [], 1):
        if isinstance(item, dict) and "a" in item and "b" in item:
            links.append((item["a"], item.get("a_port"), item["b"], item.get("b_port")))
        elif isinstance(item, list) and len(item) == 2:
            links.append(tuple(item))
        else:
            raise TopologyError(f"topology file {path}: link {i} must be [a, b] or {{a, b, a_port, b_port}}, "
                                f"got {item!r}")
    hosts = []
    for i, item in enumerate(doc.get("hosts") or [], 1):
        if isinstance(item, dict) and "switch" in item:
            hosts.append((item["switch"], item.get("port")))
        elif isinstance(item, int):
            hosts.append(item)
        else:
            raise TopologyError(f"topology file {path}: host {i} must be a switch id or {{switch, port}}, "
                                f"got {item!r}")
    return build(f"file:{path.name}", switches, links, hosts, connected=doc.get("connected", True))


def _natural(key) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(key)))


def _load_graphml(path: Path) -> Topology:
    """Every node is a switch unless its ``type`` attribute is ``host``; switches are numbered
    1..N in natural order of their node ids.  Parallel edges are parallel links."""
    try:
        g = nx.read_graphml(path)
    except Exception as exc:   # networkx raises several kinds for malformed files
        raise TopologyError(f"topology file {path}: not readable as GraphML ({exc})") from None
    is_host = {n: str(d.get("type", "")).lower() == "host" for n, d in g.nodes(data=True)}
    order = {n: i for i, n in enumerate(sorted((n for n in g if not is_host[n]), key=_natural), 1)}
    links, hosts = [], []
    for u, v in g.edges():
        if is_host[u] and is_host[v]:
            raise TopologyError(f"topology file {path}: edge {u}–{v} joins two hosts")
        if is_host[u] or is_host[v]:
            hosts.append(order[v] if is_host[u] else order[u])
        else:
            links.append((order[u], order[v]))
    for n in g:
        if is_host[n] and g.degree(n) != 1:
            raise TopologyError(f"topology file {path}: host {n} must have exactly one link (has {g.degree(n)})")
    return build(f"file:{path.name}", order.values(), links, hosts)


_SPEC = {
    "linear": (linear, 1), "ring": (ring, 1), "mesh": (mesh, 1), "tree": (tree, 2), "leaf-spine": (leaf_spine, 2),
}


def from_spec(spec: str) -> Topology:
    """``linear:N``, ``ring:N``, ``mesh:N``, ``tree:DEPTH,FANOUT``, ``leaf-spine:SxL``,
    ``file:PATH`` (or a path ending in .yaml/.yml/.graphml)."""
    kind, _, arg = spec.partition(":")
    if kind == "file" or Path(spec).suffix.lower() in (".yaml", ".yml", ".graphml"):
        return load(arg if kind == "file" else spec)
    if kind not in _SPEC:
        raise TopologyError(f"topology {spec!r}: unknown kind {kind!r} (one of {', '.join(_SPEC)}, file:PATH)")
    fn, count = _SPEC[kind]
    parts = [p for p in re.split(r"[x,]", arg) if p != ""]
    if len(parts) != count or not all(p.strip().isdigit() for p in parts):
        example = {1: f"{kind}:8", 2: "tree:3,2" if kind == "tree" else "leaf-spine:2x4"}[count]
        raise TopologyError(f"topology {spec!r}: expected {count} whole number(s), e.g. {example}")
    return fn(*(int(p) for p in parts))
