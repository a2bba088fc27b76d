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
