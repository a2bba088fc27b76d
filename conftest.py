"""pytest glue for bmwg-sdn: command-line options, markers, fixture registration.

Everything that does work lives in ``fixtures/`` (controllers, emulator runs, the trial loop),
``emulator/`` and ``reports/``.  Each option family declares its own options
(:mod:`emulator.params`, :mod:`fixtures.config`); this file only registers them.
"""

pytest_plugins = ["fixtures.plugin"]

MARKERS = (
    "rfc8456(section, category, title, symbol, unit, higher_is_better, definition, measurement_point, derived={}, "
    "device='controller'): an RFC 8456 benchmark, its identity stated once (derived: the benchmarks computed from "
    "the same trials, name → title, symbol, definition; section '★' with category 'extra': a seed extra that is "
    "not one of the RFC's benchmarks)",
    "performance: RFC 8456 §5.1 performance benchmark",
    "scalability: RFC 8456 §5.2 scalability benchmark",
    "security: RFC 8456 §5.3 security benchmark",
    "reliability: RFC 8456 §5.4 reliability benchmark",
    "extra: ★ extra, not an RFC 8456 benchmark (the OVN RAFT leader re-election)",
    "integration: self-test that starts real processes (controllers, emulator) on loopback",
)


def _taken(parser):
    """Whether an option name is already another plugin's (pytest-profiling's --profile, say)."""
    names = set()
    for group in [parser._anonymous, *parser._groups]:   # pytest has no public view of registered options
        for opt in group.options:
            names.update(opt.names())
    return names.__contains__


def pytest_addoption(parser):
    from fixtures.config import FAMILIES

    taken = _taken(parser)
    for family in FAMILIES:
        family.add_options(parser.getgroup(family.TITLE), taken)


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
