"""The emulator's modules import downward only: no import circle, the pure modules (both sides import them) reach no
Twisted, the harness's pool reaches no reactor-side module, and nothing imports the command line.  Read from the
source (every import statement, those inside functions too), so a lazy import cannot hide a circle."""

import ast
from pathlib import Path

import emulator

ROOT = Path(emulator.__file__).parent

# Imported by the harness as well as by the shards: the standard library, NumPy (percentile) and other pure modules
# only.
PURE = {"codec", "commands", "params", "stopping", "host", "limits", "marked", "fuzz", "malformed", "flowcodec",
        "flowtable", "roles", "testports", "percentile"}
# The reactor side: what runs inside a shard (or an attack process) on Twisted's reactor.
REACTOR_SIDE = {"protocol", "ramp", "capacity", "traffic", "fabric", "fabric_net", "screen", "shard", "nullctl",
                "attack"}


def imports(path: Path) -> tuple:
    """(emulator modules, other top-level packages) that ``path`` imports anywhere in it."""
    ours, theirs = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level == 1 or (node.module or "").startswith("emulator")):
            module = (node.module or "").split(".")
            module = module[1:] if module[0] == "emulator" else module
            if module and module[0]:
                ours.add(module[0])
            else:
                ours.update(a.name for a in node.names if (ROOT / f"{a.name}.py").exists())
        elif isinstance(node, ast.ImportFrom) and node.module:
            theirs.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "emulator" and len(parts) > 1:
                    ours.add(parts[1])
                else:
                    theirs.add(parts[0])
    return ours, theirs


GRAPH = {p.stem: imports(p) for p in ROOT.glob("*.py")}


def reach(module: str) -> set:
    seen, todo = set(), [module]
    while todo:
        for dep in GRAPH[todo.pop()][0]:
            if dep in GRAPH and dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_the_graph_is_read():
    assert GRAPH["shard"][0] >= {"commands", "capacity", "traffic"} and "twisted" in GRAPH["protocol"][1]


def test_no_module_of_the_emulator_is_in_an_import_circle():
    assert [m for m in GRAPH if m in reach(m)] == []


def test_the_pure_modules_reach_no_twisted_and_no_reactor_side_module():
    for module in sorted(PURE):
        below = reach(module) | {module}
        assert not below & REACTOR_SIDE, (module, below & REACTOR_SIDE)
        assert not any("twisted" in GRAPH[m][1] for m in below), module


def test_the_harness_pool_reaches_only_pure_modules():
    assert reach("pool") <= PURE, reach("pool") - PURE


def test_nothing_imports_the_command_line():
    assert [m for m, (ours, _) in GRAPH.items() if "__main__" in ours] == []
