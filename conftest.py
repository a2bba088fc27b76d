"""pytest glue for bmwg-sdn: command-line options, markers, fixture registration.

Everything that does work lives in ``fixtures/`` (controllers, emulator runs,
the trial loop), ``emulator/`` and ``reports/``.
"""

pytest_plugins = ["fixtures.plugin"]

MARKERS = (
    "rfc(section): the RFC 8456 section a benchmark implements",
    "performance: RFC 8456 §5.1 performance benchmark",
    "scalability: RFC 8456 §5.2 scalability benchmark",
    "security: RFC 8456 §5.3 security benchmark",
    "reliability: RFC 8456 §5.4 reliability benchmark",
    "integration: self-test that starts real processes (controllers, emulator) on loopback",
)


def pytest_addoption(parser):
    g = parser.getgroup("bmwg-sdn", "RFC 8456 SDN controller benchmarks")
    g.addoption("--controller", default="ryu",
                help="device under test: ryu (embedded, default), null (embedded null controller) "
                     "or external:HOST:PORT")
    g.addoption("--controller-port", type=int, default=None,
                help="port for an embedded controller (default: a free loopback port)")
    g.addoption("--openflow", default="1.3", help="OpenFlow version the switches speak: 1.3 (default) or 1.0")
    g.addoption("--repetitions", type=int, default=30, help="measured trials per benchmark (RFC minimum 10)")
    g.addoption("--warmup", type=int, default=0, help="trials run first and left out of the statistics")
    g.addoption("--report-dir", default=None,
                help="where results.json, junit.xml and report.md go (default reports/out/<time>)")
    g.addoption("--profile", default=None, help="certification profile YAML with thresholds")
    g.addoption("--baseline", default=None, help="results.json of an earlier run to compare against")
    g.addoption("--alpha", type=float, default=None, help="significance level (default 0.05, or the profile's)")
    g.addoption("--no-restart", action="store_true",
                help="keep an embedded controller running across trials (default: restart it fresh)")
    g.addoption("--ready-timeout", type=float, default=30.0, help="seconds for a controller to become ready")
    g.addoption("--trial-timeout", type=float, default=600.0, help="seconds before a trial is abandoned")
    c = parser.getgroup("bmwg-sdn control session capacity (RFC 8456 §5.2.1)")
    c.addoption("--max-sessions", type=int, default=100000,
                help="cap on sessions opened in one trial (a trial that reaches it reports a lower bound)")
    c.addoption("--ramp-group", type=int, default=25, help="sessions opened together in one ramp step")
    c.addoption("--ramp-delay", type=float, default=0.05, help="seconds between ramp steps")
    c.addoption("--hold-time", type=float, default=3.0,
                help="seconds sessions must stay up after the ramp before they are counted")
    c.addoption("--echo-interval", type=float, default=1.0, help="seconds between ECHO probes while holding")
    c.addoption("--echo-timeout", type=float, default=3.0, help="seconds an ECHO_REQUEST may go unanswered")
    a = parser.getgroup("bmwg-sdn asynchronous messages (RFC 8456 §5.1.2, §5.1.3)")
    a.addoption("--switches", default="16",
                help="emulated switches sending PACKET_INs; a comma list (1,16,64) runs the series X = N")
    a.addoption("--macs", type=int, default=1000, help="distinct source MACs per switch (cbench's default 1000)")
    a.addoption("--frame-type", default="ipv4", help="frame in each PACKET_IN: ipv4 (UDP) or arp")
    a.addoption("--frame-size", type=int, default=128, help="frame size in bytes (RFC: 128, 512, 1508)")
    a.addoption("--no-buffer", action="store_true",
                help="send whole frames with no buffer_id (answers are matched by the frame or the flow match)")
    a.addoption("--no-learn", action="store_true",
                help="do not announce each switch's destination host first (the controller then floods)")
    a.addoption("--async-mode", default="serial",
                help="processing-time trials: serial (one request outstanding in the emulator, default) or "
                     "per-switch (one per switch, cbench's latency mode)")
    a.addoption("--trial-duration", type=float, default=10.0, help="Td, seconds of traffic per trial")
    a.addoption("--response-timeout", type=float, default=1.0,
                help="seconds after which an unanswered PACKET_IN counts as lost")
    a.addoption("--response-type", default="either",
                help="which answer counts: either (default), packet_out or flow_mod")
    a.addoption("--emulator-shards", type=int, default=1,
                help="emulator processes (execnet popen gateways) the switches are spread over")
    a.addoption("--rate-step", type=float, default=0.1,
                help="STEP of the rate search, as a fraction of the rate answered at the maximum offered rate")
    a.addoption("--rate-tolerance", type=float, default=0.05,
                help="P: trials at a benchmark level repeat until two agree within this fraction")
    a.addoption("--max-confirm", type=int, default=5, help="most trials at one benchmark level")
    a.addoption("--settle", type=float, default=1.0, help="seconds after connecting before traffic starts")
    a.addoption("--rest", type=float, default=1.0, help="seconds of silence from the controller required between the trials of a rate search")
    a.addoption("--no-ceiling", action="store_true",
                help="skip measuring the emulator's own ceiling against the null controller")
    t = parser.getgroup("bmwg-sdn topology discovery (RFC 8456 §5.1.1, §5.1.8, §5.2.2)")
    t.addoption("--topology", action="append", default=None,
                help="deployed topology: linear:N, ring:N, mesh:N, tree:DEPTH,FANOUT, leaf-spine:SxL or a "
                     ".yaml/.graphml file; repeat the option for the series X = number of nodes "
                     "(default leaf-spine:2x2)")
    t.addoption("--northbound", default=None,
                help="KIND=URL of an external controller's topology API: ryu=, onos=, odl= "
                     "(a bare URL means Ryu's REST topology); the embedded Ryu needs none")
    t.addoption("--northbound-auth", default=None,
                help="USER:PASSWORD for the northbound (default onos:rocks for ONOS, admin:admin for OpenDaylight)")
    t.addoption("--poll-interval", type=float, default=3.0, help="t: seconds between topology queries (RFC: 3)")
    t.addoption("--discovery-mode", default="poll",
                help="poll: query every t until the view matches (the RFC body); wait: wait Td, query once (Appendix A)")
    t.addoption("--discovery-wait", type=float, default=10.0, help="Td of the wait mode, seconds")
    t.addoption("--discovery-timeout", type=float, default=300.0,
                help="seconds after which a discovery trial that has not matched is unsuccessful")
    t.addoption("--identical-answers", type=int, default=3,
                help="identical non-matching answers that end a trial as unsuccessful (RFC: 3)")
    t.addoption("--discovery-match", default="switches,links,hosts",
                help="what the reported topology must match: a comma list of switches, links, hosts")
    t.addoption("--change-event", default="link",
                help="topology change of §5.1.8: link (A.4.8, a link goes down), switch (a switch fails), or link,switch")
    t.addoption("--change-td", type=float, default=10.0,
                help="Td of §5.1.8: seconds to wait for the controller's rediscovery message after the change")
    t.addoption("--change-poll", type=float, default=0.1,
                help="seconds between northbound queries after a change (when the view reflects it)")
    t.addoption("--size-family", default="leaf-spine",
                help="topology grown one node at a time by §5.2.2: linear, ring, mesh or leaf-spine")
    t.addoption("--size-start", type=int, default=4, help="§5.2.2: first number of nodes tried")
    t.addoption("--size-max", type=int, default=256,
                help="§5.2.2: the largest topology tried (a controller that discovers it reports a lower bound)")
    t.addoption("--size-poll", type=float, default=30.0,
                help="§5.2.2: t, seconds between topology queries (the RFC recommends 30; shorter is quicker but "
                     "gives a slow controller less time before three identical answers end a trial)")
    t.addoption("--host-refresh", type=float, default=5.0,
                help="seconds between the emulated hosts' gratuitous ARPs (0: announce once)")
    t.addoption("--ryu-lldp-period", type=float, default=None,
                help="embedded Ryu: its LLDP period per port in seconds (Ryu's own: 0.9)")
    d = parser.getgroup("bmwg-sdn path provisioning (RFC 8456 §5.1.4-§5.1.7, §5.2.3)")
    d.addoption("--path-length", type=int, default=None,
                help="switches on the TP1 -> TP2 path (default: the longest shortest path between two host ports "
                     "of --topology; leaf-spine: 3)")
    d.addoption("--path-rate", type=float, default=100.0,
                help="§5.1.4/§5.1.5: frames/s of the single test stream")
    d.addoption("--path-td", type=float, default=5.0,
                help="§5.1.4/§5.1.5: Td, seconds to wait for the first frame at TP2")
    d.addoption("--offered-rate", type=float, default=1000.0,
                help="§5.1.6: new address pairs per second TP1 offers (one frame each)")
    d.addoption("--rate-td", type=float, default=10.0, help="§5.1.6/§5.1.7: Td, seconds")
    d.addoption("--path-flows", type=int, default=4000,
                help="§5.1.7: paths requested through the northbound in one trial")
    d.addoption("--probe-rate", type=float, default=8000.0,
                help="§5.1.7: frames/s TP1 cycles through the requested pairs at (a path's activation is seen "
                     "within path-flows / probe-rate s)")
    d.addoption("--nb-workers", type=int, default=4, help="concurrent northbound requests when installing flows")
    d.addoption("--path-frame-size", type=int, default=128, help="test frame size in bytes")
    d.addoption("--learn-timeout", type=float, default=30.0,
                help="seconds for the controller to learn the announced hosts (their G-ARPs reach it)")
    d.addoption("--ftc-mode", default="reactive,proactive",
                help="§5.2.3 provisioning type: reactive, proactive or reactive,proactive")
    d.addoption("--ftc-rate", type=float, default=None,
                help="§5.2.3 reactive: frames/s of the bidirectional traffic (default: this run's §5.1.3 "
                     "maximum rate, else 1000)")
    d.addoption("--ftc-poll", type=float, default=5.0, help="§5.2.3 reactive: seconds between flow counts (RFC: 5)")
    d.addoption("--ftc-flows", type=int, default=2000,
                help="§5.2.3 reactive: unique address pairs offered in each direction")
    d.addoption("--ftc-max", type=int, default=10000,
                help="§5.2.3 proactive: the most flows installed (a controller that accepts them all reports a "
                     "lower bound)")
    d.addoption("--ftc-timeout", type=float, default=300.0, help="§5.2.3: seconds before a trial is abandoned")
    c.addoption("--handshake-timeout", type=float, default=10.0,
                help="seconds from TCP connect to FEATURES_REQUEST answered")


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
