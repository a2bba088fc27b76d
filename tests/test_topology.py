"""Topology generators, files and validation (emulator/topology.py)."""

import networkx as nx
import pytest

from emulator import topology as tp
from emulator.topology import Endpoint, TopologyError


def test_leaf_spine_wires_every_leaf_to_every_spine_with_hosts_on_leaves():
    t = tp.leaf_spine(2, 4, hosts_per_leaf=2)
    assert t.summary() == {"topology": "leaf-spine:2x4", "nodes": 6, "links": 8, "hosts": 8}
    spines, leaves = [1, 2], [3, 4, 5, 6]
    g = t.graph()
    assert all(g.has_edge(s, leaf) for s in spines for leaf in leaves) and not g.has_edge(1, 2)
    assert {h.at.dpid for h in t.hosts} == set(leaves)
    assert t.ports(1) == [1, 2, 3, 4] and t.ports(3) == [1, 2, 3, 4]   # 2 uplinks, 2 hosts
    assert t.host_at(3, 3).name == "h3-1" and t.peer(3, 3) is None


def test_links_are_symmetric_and_ports_stable():
    t = tp.ring(4)
    for link in t.links:
        assert t.peer(link.a.dpid, link.a.port) == link.b and t.peer(link.b.dpid, link.b.port) == link.a
    again = tp.ring(4)
    assert again.links == t.links and again.hosts == t.hosts
    ports = t.port_specs(2)
    assert [p.port_no for p in ports] == [1, 2, 3] and ports[0].hw_addr == bytes.fromhex("020000020001")
    assert ports[2].name == "s2-eth3"


@pytest.mark.parametrize("make, nodes, links, hosts", [
    (lambda: tp.linear(5), 5, 4, 5),
    (lambda: tp.ring(6, hosts_per_switch=0), 6, 6, 0),
    (lambda: tp.tree(3, 3), 13, 12, 9),
    (lambda: tp.mesh(5), 5, 10, 5),
    (lambda: tp.tree(1, 4), 1, 0, 1),
])
def test_generators_have_the_expected_sizes(make, nodes, links, hosts):
    t = make()
    assert (len(t.switches), len(t.links), len(t.hosts)) == (nodes, links, hosts)
    assert nx.is_connected(t.graph())


def test_spec_strings():
    assert tp.from_spec("leaf-spine:2x8").summary()["nodes"] == 10
    assert tp.from_spec("tree:2,3").summary()["nodes"] == 4
    assert tp.from_spec("linear:3").summary()["links"] == 2
    with pytest.raises(TopologyError, match="unknown kind 'star'"):
        tp.from_spec("star:4")
    with pytest.raises(TopologyError, match="e.g. leaf-spine:2x4"):
        tp.from_spec("leaf-spine:4")
    with pytest.raises(TopologyError, match="n must be a whole number ≥ 3"):
        tp.from_spec("ring:2")


def test_validation_names_dangling_links_duplicate_ports_and_islands():
    with pytest.raises(TopologyError) as err:
        tp.build("t", [1, 2, 3], [(1, 1, 2, 1), (2, 1, 3, 1), (1, 9)], hosts=[(3, 1)])
    text = str(err.value)
    assert "link 2 (2–3): duplicate port, switch 2 port 1 is already used by link 1 (1–2)" in text
    assert "link 3 (1–9): dangling, switch 9 is not in the topology" in text
    assert "host 1: duplicate port, switch 3 port 1" in text
    with pytest.raises(TopologyError, match="disconnected: 2 parts, the smallest is switches \\[3\\]"):
        tp.build("t", [1, 2, 3], [(1, 2)])
    assert len(tp.build("t", [1, 2, 3], [(1, 2)], connected=False).switches) == 3
    with pytest.raises(TopologyError, match="a link from a switch to itself"):
        tp.build("t", [1], [(1, 1)])
    with pytest.raises(TopologyError, match="switch 2 is declared twice"):
        tp.build("t", [1, 2, 2], [(1, 2)])


def test_explicit_ports_are_kept_and_auto_ports_skip_them():
    t = tp.build("t", [1, 2], [(1, 1, 2, 7), (1, None, 2, None)], hosts=[1])
    assert t.peer(2, 7) == Endpoint(1, 1) and t.peer(1, 2) == Endpoint(2, 1)
    assert t.host_at(1, 3) is not None


def test_yaml_file(tmp_path):
    f = tmp_path / "lab.yaml"
    f.write_text("switches: 3\nlinks:\n  - [1, 2]\n  - {a: 2, a_port: 5, b: 3, b_port: 1}\nhosts:\n  - 1\n"
                 "  - {switch: 3, port: 4}\n")
    t = tp.load(f)
    assert t.summary() == {"topology": "file:lab.yaml", "nodes": 3, "links": 2, "hosts": 2}
    assert t.peer(2, 5) == Endpoint(3, 1) and t.host_at(3, 4) is not None
    f.write_text("switches: 2\nlinks:\n  - [1, 2, 3]\n")
    with pytest.raises(TopologyError, match="link 1 must be \\[a, b\\]"):
        tp.load(f)
    f.write_text("links: []\n")
    with pytest.raises(TopologyError, match="expected a mapping with 'switches'"):
        tp.load(f)


def test_graphml_file_with_hosts_and_parallel_links(tmp_path):
    g = nx.MultiGraph()
    g.add_nodes_from(["s10", "s2", "s1"])
    g.add_node("h1", type="host")
    g.add_edges_from([("s1", "s2"), ("s1", "s2"), ("s2", "s10"), ("h1", "s10")])
    f = tmp_path / "zoo.graphml"
    nx.write_graphml(g, f)
    t = tp.load(f)
    assert t.summary() == {"topology": "file:zoo.graphml", "nodes": 3, "links": 3, "hosts": 1}
    assert t.hosts[0].at.dpid == 3           # natural order: s1, s2, s10
    assert t.ports(1) == [1, 2]              # two parallel links to s2
    (tmp_path / "bad.graphml").write_text("<graphml><not-closed>")
    with pytest.raises(TopologyError, match="not readable as GraphML"):
        tp.load(tmp_path / "bad.graphml")
    (tmp_path / "lab.txt").write_text("x")
    with pytest.raises(TopologyError, match="unknown format"):
        tp.load(tmp_path / "lab.txt")


def test_relay_sends_a_flooded_frame_to_every_linked_peer_but_the_in_port():
    from emulator import codec
    t = tp.leaf_spine(2, 3)                       # spines 1, 2; leaves 3, 4, 5 (ports 1, 2 up, 3 host)
    assert t.egress(3, codec.PORT_CONTROLLER, [codec.PORT_FLOOD]) == [1, 2, 3]
    assert t.relay(3, codec.PORT_CONTROLLER, [codec.PORT_FLOOD]) == [t.peer(3, 1), t.peer(3, 2)]
    assert t.relay(1, 1, [codec.PORT_ALL]) == [Endpoint(4, 1), Endpoint(5, 1)]
    assert t.relay(1, 2, [codec.PORT_IN_PORT, 2, 99, codec.PORT_CONTROLLER]) == [Endpoint(4, 1)]
    assert t.relay(3, 1, [3]) == []                # the host port: no switch behind it


@pytest.mark.parametrize("family", ["linear", "ring", "mesh", "leaf-spine"])
def test_sized_families_have_exactly_the_nodes_asked_for(family):
    for n in (3, 4, 9):
        assert len(tp.sized(family, n).switches) == n
    assert tp.sized("leaf-spine", 10).summary()["links"] == 2 * 8


def test_sized_rejects_families_and_sizes_it_cannot_build():
    with pytest.raises(tp.TopologyError, match="tree.*cannot be grown"):
        tp.sized("tree", 5)
    with pytest.raises(tp.TopologyError, match="ring needs at least 3"):
        tp.sized("ring", 2)
