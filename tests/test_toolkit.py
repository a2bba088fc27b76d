"""One toolkit (issue 43): each mechanism the product code needs is written once.  Read from the source of
``emulator/``, ``fixtures/``, ``reports/`` and ``suites/`` (parsed once for the module), so a second copy fails here
whichever module it appears in."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("emulator", "fixtures", "reports", "suites")
TREES = {str(path.relative_to(ROOT)): ast.parse(path.read_text()) for folder in PRODUCT
         for path in sorted((ROOT / folder).rglob("*.py"))}


def nodes(kind):
    return [(name, node) for name, tree in TREES.items() for node in ast.walk(tree) if isinstance(node, kind)]


def test_the_product_code_is_read():
    assert "emulator/percentile.py" in TREES and "reports/stats.py" in TREES and len(TREES) > 50


def test_one_percentile_is_defined():
    defined = sorted(f"{name}:{node.name}" for name, node in nodes(ast.FunctionDef)
                     if any(word in node.name.lower() for word in ("percentile", "quantile", "p99", "p95")))
    assert defined == ["emulator/percentile.py:percentile", "emulator/percentile.py:percentiles",
                       "reports/stats.py:quantiles"], defined


def test_one_module_parses_yaml():
    parsers = sorted({name for name, node in nodes(ast.Attribute)
                      if isinstance(node.value, ast.Name) and node.value.id == "yaml" and "load" in node.attr})
    assert parsers == ["emulator/documents.py"], parsers


def test_every_child_process_starts_in_the_process_module():
    """Children start through emulator/process.py's ChildProcess (group, death with the run, end_all at exit); the
    lifeline's shell, which must stay in the lifeline's group, is the one Popen beside it, in the same module."""
    spawns = sorted(f"{name}:{node.func.attr}" for name, node in nodes(ast.Call)
                    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                    and (node.func.value.id, node.func.attr) in {("subprocess", "Popen"), ("os", "fork"),
                                                                 ("os", "system"), ("os", "posix_spawn")})
    assert spawns == ["emulator/process.py:Popen", "emulator/process.py:Popen"], spawns


def test_the_conclusions_read_trial_details_through_typed_records():
    """A family's conclusions read its trials' details as a dataclass of the fields they use (fixtures.harness.
    details_of), not by string key; the few generic readers left are named here."""
    reads = sorted(name for name, node in nodes(ast.Subscript)
                   if isinstance(node.slice, ast.Constant) and node.slice.value == "details")
    assert reads == ["fixtures/dataplane.py", "fixtures/dataplane.py", "reports/rfc_report.py"], reads


def test_long_argument_lists_do_not_come_back():
    """A trial takes its context (fixtures.dataplane.TrialContext) and its own options, not a dozen arguments.  The
    functions left with more than 8 are the per-message encoders and the fabric's per-hop output (at most 4)."""
    def count(f) -> int:
        a = f.args
        names = [x.arg for x in a.posonlyargs + a.args]
        return len(names) + len(a.kwonlyargs) - (1 if names[:1] in (["self"], ["cls"]) else 0)
    long = sorted(f"{name}:{node.name}" for name, node in nodes((ast.FunctionDef, ast.AsyncFunctionDef))
                  if count(node) > 8 and not name.startswith("suites/"))
    assert len(long) <= 4 and not any("families/paths.py" in x or "trial" in x for x in long), long


DEVICE_NAMES = ("controller", "cluster", "device", "member", "deployment")


def test_no_getattr_or_hasattr_probe_on_a_device_or_a_cluster():
    """What a device or cluster has is declared on its class (fixtures/devices/base.py, clusters.py), not probed:
    a probe hides a misspelt attribute as a missing one."""
    probes = []
    for name, node in nodes(ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and node.args):
            continue
        target = ast.unparse(node.args[0])
        on_device = target.split(".")[-1].startswith(DEVICE_NAMES)
        on_self_in_devices = (name.startswith("fixtures/devices/") and target == "self"
                              and (node.func.id == "hasattr" or len(node.args) == 3))
        if on_device or on_self_in_devices:
            probes.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert probes == [], probes


def test_the_selfbench_declares_the_families_options_and_names_the_defaults_it_changes():
    """selfbench's --ramp-group, --ramp-delay, --hold-time, --echo-timeout, --macs and --frame-size are the
    families' own (their parsing, their help); a default of its own is shown beside the suites'."""
    from emulator.params import AsyncParams, CapacityParams, RampParams
    from fixtures.selfbench import make_parser
    parser = make_parser()
    sessions = parser.parse_args(["sessions"])
    assert (sessions.ramp_group, sessions.ramp_delay, sessions.echo_timeout) == (200, 0.0, 10.0)
    assert sessions.hold_time == CapacityParams().hold_time
    assert RampParams.from_options(sessions).ramp_group == 200 and RampParams().ramp_group == 25
    assert CapacityParams.from_options(sessions, max_sessions=7).echo_timeout == 10.0
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    shown = {a.dest: a.help for a in sub.choices["sessions"]._actions}
    assert "(default: 200; the suites': 25)" in shown["ramp_group"]
    assert shown["hold_time"].endswith("(default: 3.0)")
    async_ = parser.parse_args(["async"])
    assert (async_.macs, async_.frame_size) == (AsyncParams().macs, AsyncParams().frame_size)
    for bad in (["sessions", "--ramp-group", "0"], ["async", "--frame-size", "-1"]):
        try:
            parser.parse_args(bad)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{bad} was accepted")


def test_a_family_refuses_to_declare_an_option_it_does_not_have():
    import argparse

    import pytest

    from emulator.params import RampParams
    with pytest.raises(ValueError, match="RampParams has no option --ramp-size, ramp_size"):
        RampParams.add_options(argparse.ArgumentParser(), only=("--ramp-size",), defaults={"ramp_size": 1})


def test_one_reader_of_ovsdbs_json_stream():
    """OVSDB's JSON-RPC has no framing: emulator.nbload.JsonStream is the one class that cuts it (the load
    generator, the OVN devices, the southbound monitor)."""
    readers = sorted({name for name, node in nodes(ast.Attribute) if node.attr == "raw_decode"})
    classes = sorted(f"{name}:{node.name}" for name, node in nodes(ast.ClassDef) if "json" in node.name.lower()
                     and "stream" in node.name.lower())
    assert readers == ["emulator/nbload.py"] and classes == ["emulator/nbload.py:JsonStream"], (readers, classes)
    # and one connection that speaks it (fixtures.devices.ovsdb.JsonRpcConnection), besides the load generator's
    # non-blocking reader of its workers' many sockets
    users = sorted({name for name, node in nodes(ast.Call) if ast.unparse(node.func).endswith("JsonStream")})
    assert users == ["emulator/nbload.py", "fixtures/devices/ovsdb.py"], users


def code_lines(name: str) -> int:
    """A module's lines of code: not blank, not a comment, not in a docstring."""
    tree, text = TREES[name], (ROOT / name).read_text().splitlines()
    docs = {n for node in ast.walk(tree) if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
            for n in range(node.body[0].lineno, node.body[0].end_lineno + 1)}
    return sum(1 for i, line in enumerate(text, 1) if line.strip() and not line.strip().startswith("#")
               and i not in docs)


def test_every_suite_has_one_shape_and_states_only_its_own():
    # Issue 43: every suite is its identity (the rfc8456 marker, its definition) and one statement, its family's
    # Procedure driven by the run's one trial loop: benchmark_run.measure(family.Procedure(fixtures...)).
    suites = sorted(name for name in TREES if name.startswith("suites/test_"))
    assert len(suites) >= 23, suites
    for name in suites:
        (test,) = [n for n in TREES[name].body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
        (statement,) = test.body
        call = statement.value
        assert (isinstance(statement, ast.Expr) and isinstance(call, ast.Call)
                and ast.unparse(call.func) == "benchmark_run.measure" and len(call.args) == 1
                and isinstance(call.args[0], ast.Call) and isinstance(call.args[0].func, ast.Attribute)), name
        assert code_lines(name) <= 30, (name, code_lines(name))
    for name, node in nodes(ast.Attribute):
        assert not (name.startswith("suites/") and node.attr in ("trials", "finish", "derived")), name


def test_every_procedure_names_the_rule_its_check_guards():
    # A check that answers False fails the benchmark as "implausible result: <the check's docstring>": a procedure
    # that overrides plausible() says in its docstring what a failing entry broke.
    import importlib

    from fixtures.harness import Procedure
    from fixtures.plugin import FAMILIES
    procedures = {cls for name in FAMILIES for cls in vars(importlib.import_module(name)).values()
                  if isinstance(cls, type) and issubclass(cls, Procedure) and cls is not Procedure}
    assert len(procedures) >= 20, procedures
    for cls in procedures:
        check = cls.plausible
        if check is not Procedure.plausible:
            assert (check.__doc__ or "").strip(), f"{cls.__qualname__}.plausible has no docstring to fail with"


def test_every_search_moves_through_the_one_search_engine():
    """Issue 44: bracketing and bisection are written once (fixtures/search.py).  A module that defines a search (a
    ``*_search`` function or a ``*Search`` class) imports it, and no benchmark computes a midpoint of its own: no
    ``(a + b) / 2``, ``(a + b) // 2`` nor ``math.sqrt(a * b)`` of two names in ``fixtures/`` outside the engine
    (the emulator's clock offset, ``(t0 + t1) // 2``, is not a search)."""
    searching = {name for name, node in nodes((ast.FunctionDef, ast.ClassDef))
                 if node.name.endswith("_search") or node.name.endswith("Search")} - {"fixtures/search.py"}
    importing = {name for name, node in nodes(ast.ImportFrom) if node.module == "fixtures.search"}
    assert searching and searching <= importing, sorted(searching - importing)

    def midpoint(node) -> bool:
        halved = (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv))
                  and isinstance(node.right, ast.Constant) and node.right.value == 2
                  and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Add)
                  and all(isinstance(x, (ast.Name, ast.Attribute)) for x in (node.left.left, node.left.right)))
        root = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sqrt"
                and len(node.args) == 1 and isinstance(node.args[0], ast.BinOp)
                and isinstance(node.args[0].op, ast.Mult))
        return halved or root
    found = sorted({name for name, node in nodes((ast.BinOp, ast.Call))
                    if name.startswith("fixtures/") and midpoint(node)})
    assert found == ["fixtures/search.py"], found
