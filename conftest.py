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
    c.addoption("--handshake-timeout", type=float, default=10.0,
                help="seconds from TCP connect to FEATURES_REQUEST answered")


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
