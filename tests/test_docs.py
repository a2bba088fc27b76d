"""The docs a newcomer reads: the README stays short, no link leaves the repository or points at nothing, and
every option the docs name is one the suite has (so --help and the docs agree)."""

import re
from pathlib import Path

import pytest

from fixtures.config import FAMILIES

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Options of other tools the docs may name: pytest's, git's, Ryu's, the selfbench's, the emulator's, cbench's.
OTHERS = {"--collect-only", "--overwrite", "--out", "--help", "--sessions", "--shards", "--lldp-period", "--duration",
          "--hops", "--entries", "--frames", "--flows", "--decode-count", "--null-processes", "--delay-ms",
          "--rate-cap", "--rate-caps", "--session-caps", "--session-limit", "--limit-mode", "--answer",
          "--reuse-port", "--max-files", "--queue-limit", "--backlog", "--malformed", "--no-build-isolation",
          "--version", "--resolution", "--learn-dst-macs", "--deadline", "--durations", "--noconftest",
          "--datapath-id-base", "--source-base", "--sessions-per-source", "--progress-interval", "--openflow",
          "--controller", "--repetitions", "--switches", "--macs", "--topology", "--cpu-affinity", "--no-cache-dir",
          "--observe-links", "--date", "--format", "--ofp-tcp-listen-port", "--json", "--plots",   # reports compare
          "--no-deps", "--wait"}   # pip; ovn-nbctl --wait=sb


def attack_options() -> set:
    """The options of ``python -m emulator.attack`` (the docs show one attack run by hand)."""
    from emulator.attack import build_parser
    return {o for action in build_parser()._actions for o in action.option_strings if o.startswith("--")}


def our_options() -> set:
    flags = set()
    for family in FAMILIES:
        for _f, spec in family.option_fields():
            flags.add(spec.flag)
            flags.update(spec.aliases)
    return flags


def test_the_readme_is_a_newcomers_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) < 10_500
    assert "control_session_capacity" in text and "tox -e bench" in text and "&& tox\n" in text


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository_and_resolve(doc):
    for target in LINK.findall(doc.read_text()):
        assert not re.match(r"^[a-z]+:", target), f"{doc.name}: {target} points outside the repository"
        path = target.split("#", 1)[0]
        if path:
            assert (doc.parent / path).resolve().exists(), f"{doc.name}: {target} points at nothing"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_option_the_docs_name_exists(doc):
    mine, known = our_options(), our_options() | OTHERS | attack_options()
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", doc.read_text()))
    unknown = sorted(n for n in named if n not in known)
    assert not unknown, f"{doc.name} names options the suite does not have: {unknown}"
    assert mine  # the families declare options at all


def test_every_controller_choice_is_in_help_and_docs():
    from fixtures.config import RunParams
    from fixtures.devices.registry import EMBEDDED_KINDS
    help_text = dict((f.name, spec) for f, spec in RunParams.option_fields())["controller"].help
    readme = (ROOT / "README.md").read_text()
    for kind in EMBEDDED_KINDS:
        assert kind in help_text and f"`{kind}`" in readme
