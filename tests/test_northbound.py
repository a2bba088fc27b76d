"""Northbound adapters against recorded response shapes, and over HTTP on loopback."""

import base64
import http.server
import json
import threading
from pathlib import Path

import pytest

from emulator import topology as tp
from fixtures.devices import northbound as nb

DATA = Path(__file__).parent / "data" / "northbound"
LINEAR3 = nb.deployed_view(tp.linear(3))


def load(name):
    return json.loads((DATA / name).read_text())


def test_ryu_recorded_responses_match_the_deployed_topology():
    # Recorded from Ryu 4.34 (--observe-links ryu.app.rest_topology) discovering the emulator's linear:3.
    view = nb.RyuNorthbound("http://x").parse(*(load(f"ryu-linear3-{n}.json") for n in ("switches", "links", "hosts")))
    assert view == LINEAR3
    assert view.counts() == {"nodes": 3, "links": 2, "directed_links": 4, "hosts": 3}


def test_onos_shapes_parse_and_ignore_inactive_and_non_openflow_parts():
    doc = load("onos-linear3.json")
    view = nb.OnosNorthbound("http://x").parse(doc["devices"], doc["links"], doc["hosts"])
    assert view == LINEAR3


@pytest.mark.parametrize("name", ["odl-linear3-rfc8040.json", "odl-linear3-draft.json"])
def test_opendaylight_shapes_parse_without_host_links(name):
    assert nb.OdlNorthbound("http://x").parse(load(name)) == LINEAR3


def test_comparison_names_what_is_missing_and_extra():
    partial = nb.View(LINEAR3.switches, frozenset(list(LINEAR3.links)[:3]),
                      LINEAR3.hosts | {("0e:00:00:09:00:01", 3, 9)})
    c = nb.compare(LINEAR3, partial)
    assert not c.matches
    assert c.summary() == "links: 1 missing, 0 extra; hosts: 0 missing, 1 extra"
    assert nb.compare(LINEAR3, partial, parts=("switches",)).matches


def test_one_direction_of_every_link_is_half_way_not_a_match():
    # CI caught Ryu's view with the spine-to-leaf direction of all six links and no reverse one;
    # guessing "this controller reports links once" from such a view ended discovery early.
    once = nb.View(LINEAR3.switches, frozenset({((1, 1), (2, 1)), ((3, 1), (2, 2))}), LINEAR3.hosts)
    c = nb.compare(LINEAR3, once)
    assert not c.matches and c.link_counting == "directed" and len(c.missing["links"]) == 2


def test_a_northbound_declared_to_report_each_link_once_is_compared_undirected():
    once = nb.View(LINEAR3.switches, frozenset({((1, 1), (2, 1)), ((3, 1), (2, 2))}), LINEAR3.hosts)
    c = nb.compare(LINEAR3, once, link_counting="undirected")
    assert c.matches and c.link_counting == "undirected"
    half = nb.View(LINEAR3.switches, frozenset({((1, 1), (2, 1))}), LINEAR3.hosts)
    assert nb.compare(LINEAR3, half, link_counting="undirected").missing["links"] == [((2, 2), (3, 1))]
    with pytest.raises(ValueError, match="link_counting"):
        nb.compare(LINEAR3, once, link_counting="sideways")


@pytest.mark.parametrize("text, expected", [
    ("http://127.0.0.1:8080", ("ryu", "http://127.0.0.1:8080")),
    ("onos=http://lab:8181", ("onos", "http://lab:8181")),
    ("ODL=https://lab:8443/", ("odl", "https://lab:8443/")),
])
def test_northbound_option(text, expected):
    assert nb.parse_northbound_option(text) == expected


@pytest.mark.parametrize("text, message", [
    ("floodlight=http://x", "kind must be one of ryu, onos, odl"),
    ("onos=lab:8181", "is not an http:// or https:// URL"),
])
def test_bad_northbound_option_names_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        nb.parse_northbound_option(text)


class Recorded(http.server.BaseHTTPRequestHandler):
    routes: dict = {}
    seen_auth: list = []

    def do_GET(self):
        self.seen_auth.append(self.headers.get("Authorization"))
        body = self.routes.get(self.path)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body if isinstance(body, bytes) else json.dumps(body).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorded)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    Recorded.routes, Recorded.seen_auth = {}, []
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.component
def test_onos_over_http_sends_basic_auth(server):
    doc = load("onos-linear3.json")
    Recorded.routes = {"/onos/v1/devices": doc["devices"], "/onos/v1/links": doc["links"],
                       "/onos/v1/hosts": doc["hosts"]}
    adapter = nb.make("onos", server)
    assert adapter.topology() == LINEAR3 and adapter.last_query_s is not None
    assert Recorded.seen_auth[0] == "Basic " + base64.b64encode(b"onos:rocks").decode()


@pytest.mark.component
def test_opendaylight_falls_back_to_the_draft_restconf_path(server):
    Recorded.routes = {"/restconf/operational/network-topology:network-topology/topology/flow:1":
                       load("odl-linear3-draft.json")}
    assert nb.make("odl", server).topology() == LINEAR3


@pytest.mark.component
def test_http_errors_and_non_json_are_named(server):
    adapter = nb.make("ryu", server)
    with pytest.raises(nb.NorthboundError, match=r"GET /v1.0/topology/switches answered HTTP 404"):
        adapter.topology()
    Recorded.routes = {"/v1.0/topology/switches": b"<html>oops</html>"}
    with pytest.raises(nb.NorthboundError, match="did not return JSON"):
        adapter.topology()
    Recorded.routes = {"/v1.0/topology/switches": [{"nodpid": 1}], "/v1.0/topology/links": [],
                       "/v1.0/topology/hosts": []}
    with pytest.raises(nb.NorthboundError, match="unexpected response shape"):
        adapter.topology()


@pytest.mark.component
def test_a_northbound_that_is_not_listening_is_named():
    with pytest.raises(nb.NorthboundError, match="ryu northbound at http://127.0.0.1:9.*failed"):
        nb.make("ryu", "http://127.0.0.1:9", timeout=2).topology()


@pytest.mark.component
def test_a_failed_connection_is_forgotten_not_kept_for_close():
    from fixtures.http import HttpClient, Unreachable
    client = HttpClient("http://127.0.0.1:9", timeout=2)
    for _ in range(3):
        with pytest.raises(Unreachable, match="refused"):
            client.get("/")
    assert client._connections == []
