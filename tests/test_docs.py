"""The docs a newcomer reads: the README stays short and its first commands work on a stock system, no link leaves
the repository or points at nothing (files and the headings they name), every option the docs name is one the suite
has (so --help and the docs agree), and the settings the docs and tox.ini give a run are the ones it needs."""

import argparse
import configparser
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Optional

import pytest

from fixtures.config import option_families

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BENCHMARK_PAGES = [p for p in sorted((ROOT / "docs" / "benchmarks").glob("*.md")) if p.name != "common.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Options of other tools the docs may name: pytest's, git's, Ryu's, the selfbench's, the emulator's, cbench's.
OTHERS = {"--collect-only", "--overwrite", "--out", "--help", "--sessions", "--shards", "--lldp-period", "--duration",
          "--hops", "--entries", "--frames", "--flows", "--decode-count", "--null-processes", "--delay-ms",
          "--rate-cap", "--rate-caps", "--session-caps", "--session-limit", "--limit-mode", "--answer",
          "--reuse-port", "--max-files", "--queue-limit", "--backlog", "--malformed", "--no-build-isolation",
          "--version", "--resolution", "--learn-dst-macs", "--deadline", "--durations", "--noconftest",
          "--datapath-id-base", "--source-base", "--sessions-per-source", "--progress-interval", "--openflow",
          "--controller", "--repetitions", "--switches", "--macs", "--topology", "--cpu-affinity", "--no-cache-dir",
          "--observe-links", "--ofp-listen-host", "--ofp-tcp-listen-port",  # Ryu's
          "--date", "--format", "--json", "--plots",   # reports compare
          "--no-deps", "--wait",   # pip; ovn-nbctl --wait=sb
          "--parts",   # selfbench known
          "--host", "--port", "--police-rate", "--police-burst", "--responder"}   # python -m emulator.nullctl


def attack_options() -> set:
    """The options of ``python -m emulator.attack`` (the docs show one attack run by hand)."""
    from emulator.attack import build_parser
    return {o for action in build_parser()._actions for o in action.option_strings if o.startswith("--")}


def our_options() -> set:
    flags = set()
    for family in option_families().values():
        for _f, spec in family.option_fields():
            flags.add(spec.flag)
            flags.update(spec.aliases)
    return flags


def selfbench_options() -> set:
    """The options of ``python -m fixtures.selfbench``'s subcommands, from its parser."""
    from fixtures.selfbench import make_parser
    (sub,) = [a for a in make_parser()._actions if a.dest == "command"]
    return {flag for p in sub.choices.values() for a in p._actions for flag in a.option_strings}


def reports_options() -> set:
    """The options of ``python -m reports`` and its subcommands."""
    from reports.__main__ import build_parser, subcommand_options
    return {flag for flags in subcommand_options(build_parser()).values() for flag in flags}


def test_the_history_page_documents_every_option_of_history_check():
    from reports.__main__ import build_parser, subcommand_options
    check = set(subcommand_options(build_parser())[("history", "check")]) - {"--help", "--history"}
    page = (ROOT / "docs" / "history.md").read_text()
    table = set(re.findall(r"^\| `(--[a-z-]+)`", page, re.M))
    assert check and table == check


# --------------------------------------------------------------------------- a benchmark page and its options

def page_benchmark(page: Path) -> Optional[str]:
    """The benchmark a page under docs/benchmarks/ documents: the one test of suites/ its opening line
    (`` `pytest suites -k NAME` ``) selects; None for a page that selects none or several (common.md)."""
    found = re.search(r"^`pytest suites -k (\w+)`", page.read_text(), re.M)
    selected = [name for name in suite_benchmarks() if found and k_selects(["-k", found.group(1)], name)]
    return selected[0] if len(selected) == 1 else None


def suite_benchmarks() -> set:
    """The benchmarks of the suite: the test functions of suites/, by their ``rfc8456`` markers."""
    from fixtures.benchmark import suite_benchmarks as declared
    return {b.name for b in declared()}


def k_selects(args: list, name: str) -> bool:
    """Whether the command's -k expression (and, or, not, parentheses, substrings) selects the test ``name``."""
    expr = next((args[i + 1] for i in range(len(args) - 1) if args[i] == "-k"), None)
    if expr is None:
        return True
    tokens = re.findall(r"\(|\)|[^\s()]+", expr)
    pos = 0

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def either() -> bool:
        value = both()
        while pos < len(tokens) and tokens[pos] == "or":
            take()
            value = both() or value
        return value

    def both() -> bool:
        value = single()
        while pos < len(tokens) and tokens[pos] == "and":
            take()
            value = single() and value
        return value

    def single() -> bool:
        token = take()
        if token == "not":
            return not single()
        if token == "(":
            value = either()
            take()
            return value
        return token.lower() in name.lower()

    return either()


def own_options(page: Path) -> list:
    """The options a page's own "Options" table documents (its first column), in order."""
    section = re.search(r"^## Options\n(.*?)(?=^## |\Z)", page.read_text(), re.M | re.S)
    if section is None:
        return []
    rows = [line.split("|")[1] for line in section.group(1).splitlines() if line.startswith("| `--")]
    return [flag for row in rows for flag in re.findall(r"`(--[a-z0-9-]+)", row)]


def declaring_family(flag: str) -> Optional[type]:
    """The option family that declares ``flag`` (or has it as an older name)."""
    return next((family for family in option_families().values() for _f, spec in family.option_fields()
                 if flag == spec.flag or flag in spec.aliases), None)


def test_the_readme_is_a_newcomers_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) < 12_000
    assert "control_session_capacity" in text and "tox -e bench" in text and "&& tox\n" in text


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository_and_resolve(doc):
    for target in LINK.findall(doc.read_text()):
        assert not re.match(r"^[a-z]+:", target), f"{doc.name}: {target} points outside the repository"
        path = target.split("#", 1)[0]
        if path:
            assert (doc.parent / path).resolve().exists(), f"{doc.name}: {target} points at nothing"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_of_the_project_a_doc_names_exists(doc):
    """A module, profile or page named in backticks (`fixtures/devices/northbound.py`) is where the doc says."""
    named = re.findall(r"`((?:fixtures|emulator|reports|suites|tests|docs|\.ci)/[\w/.-]*)`", doc.read_text())
    missing = sorted({path for path in named if not (ROOT / path).exists()})
    assert not missing, f"{doc.relative_to(ROOT)} names files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_class_or_function_a_doc_names_by_its_dotted_path_exists(doc):
    """`emulator.protocol.SessionRules` in a doc is a name the code has (a module, then attributes); two-part names
    such as `emulator.version` are results.json's keys (docs/results-schema.md), not code."""
    import importlib
    missing = []
    for dotted in sorted(set(re.findall(r"`((?:fixtures|emulator|reports)(?:\.[A-Za-z_]\w*){2,})`", doc.read_text()))):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(dotted)
            break
        else:
            missing.append(dotted)
    assert not missing, f"{doc.relative_to(ROOT)} names what the code does not have: {missing}"


def test_the_index_maps_every_page_and_the_readme_leads_there():
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / target.split("#", 1)[0]).resolve() for target in LINK.findall(index.read_text())}
    missing = [str(p.relative_to(ROOT)) for p in DOCS if p not in linked and p != index]
    assert not missing, f"docs/index.md does not say what these pages are for: {missing}"
    assert "(docs/index.md)" in (ROOT / "README.md").read_text().split("## More", 1)[1]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_option_the_docs_name_exists(doc):
    import tiers
    mine = our_options()
    known = mine | OTHERS | attack_options() | reports_options() | selfbench_options() | set(tiers.OPTIONS)
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


def options_section(page: Path) -> str:
    section = re.search(r"^## Options\n(.*?)(?=^## |\Z)", page.read_text(), re.M | re.S)
    return section.group(1) if section else ""


@pytest.mark.parametrize("page", BENCHMARK_PAGES, ids=lambda p: p.name)
def test_a_benchmark_page_opens_with_its_benchmark_and_documents_the_suites_options(page):
    """Every option a benchmark page's Options section names (its generated table and the prose around it) belongs
    to a family the page's benchmark uses, or to the run's, the emulator's and the ramp's every benchmark shares:
    a user's value for an option of another family would be accepted and applied to something else."""
    from fixtures.config import CORE_OPTIONS
    from fixtures.docs import flags_of, page_options
    assert page_benchmark(page), f"{page.name} does not open with the one benchmark of suites/ it documents"
    foreign = [flag for flag in own_options(page) if declaring_family(flag) is None]
    assert not foreign, f"{page.name}'s Options table lists options no family declares: {foreign}"
    uses = flags_of(page_options()[page]) | flags_of({family: None for family in CORE_OPTIONS.values()})
    named = re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", options_section(page))
    elsewhere = sorted({flag for flag in named if declaring_family(flag) is not None and flag not in uses})
    assert not elsewhere, (f"{page.name}'s Options section names options of families its benchmark does not use: "
                           f"{elsewhere}")


def test_the_option_tables_are_generated_from_the_families_and_current():
    from fixtures.docs import stale
    assert not stale(), f"out of date (run python -m fixtures.docs): {[p.name for p in stale()]}"


def test_the_change_detection_page_documents_its_own_pause():
    """§5.1.8's pause before the change is --change-settle; --settle is the PACKET_IN family's and would be accepted
    and applied to the wrong thing."""
    page = ROOT / "docs" / "benchmarks" / "network_topology_change_detection_time.md"
    assert "--change-settle" in own_options(page)
    assert "`--settle`" not in page.read_text()


def test_measurements_is_a_dated_notebook_that_opens_with_every_benchmarks_current_figure():
    """Every section of docs/measurements.md opens with its date and commit, in the order recorded; the table of
    current figures above them has a row for every benchmark page."""
    text = (ROOT / "docs" / "measurements.md").read_text()
    sections = re.split(r"(?m)^## ", text)[1:]
    assert sections[0].startswith("Current figures\n")
    dates = []
    for section in sections[1:]:
        opening = re.search(r"^Date (\d{4}-\d{2}-\d{2}) · (.*?)\n\n", section, re.M | re.S)
        assert opening and re.search(r"\b[0-9a-f]{7}\b", opening.group(2)), \
            f"measurements.md: '{section.splitlines()[0]}' does not open with its date and commit"
        dates.append(opening.group(1))
    assert dates == sorted(dates), "measurements.md's sections are not in the order they were recorded"
    rows = [line.split("|")[1] for line in sections[0].splitlines() if line.startswith("| ")]
    for page in BENCHMARK_PAGES:
        title = re.sub(r"\s*\(.*\)$", "", page.read_text().splitlines()[0].lstrip("# "))
        assert any(title in row for row in rows), f"measurements.md has no current figure for {title}"


# --------------------------------------------------------------------------- headings as link targets

def heading_slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text without markup, lowercased, every character other than a letter,
    a digit, '_', '-' or a space dropped, spaces made '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set:
    """The anchors of a page's headings (outside fenced code), a repeated one numbered -1, -2, ... as GitHub does."""
    seen: dict = {}
    out = set()
    fenced = False
    for line in page.read_text().splitlines():
        if re.match(r"^(```|~~~)", line):
            fenced = not fenced
            continue
        heading = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = heading_slug(heading.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_heading_slugs_follow_githubs_rules(tmp_path):
    assert heading_slug("Controller Failover Time (RFC 8456 §5.4.1), ryu-ha") == \
        "controller-failover-time-rfc-8456-541-ryu-ha"
    assert heading_slug("Cluster Leader Re-election (★ extra, not RFC 8456)") == \
        "cluster-leader-re-election--extra-not-rfc-8456"
    assert heading_slug("`screen` and [the table](x.md)") == "screen-and-the-table"
    assert heading_slug("A correction: Nagle on the fabric's sessions") == "a-correction-nagle-on-the-fabrics-sessions"
    page = tmp_path / "p.md"
    page.write_text("# Title\n## Figures\n```sh\n# not a heading\n```\n## Figures\n### Figures\n")
    assert anchors(page) == {"title", "figures", "figures-1", "figures-2"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_heading_finds_it(doc):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if "#" not in target or re.match(r"^[a-z]+:", target):
            continue
        path, fragment = target.split("#", 1)
        page = (doc.parent / path).resolve() if path else doc
        if page.suffix == ".md" and page.exists() and fragment not in anchors(page):
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)} links to headings that do not exist: {broken}"


# --------------------------------------------------------------------------- the runs tox.ini sets up

def tox_commands(env: str) -> list:
    """The commands of tox.ini's ``testenv:env``, each split into its arguments as tox runs it without posargs
    (``{posargs:DEFAULT}`` is DEFAULT; a leading '- ' only lets the next command run after a failure)."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini")
    lines = ini[f"testenv:{env}"]["commands"].replace("\\\n", " ").splitlines()
    out = []
    for line in (raw.strip() for raw in lines):
        if not line:
            continue
        line = re.sub(r"\{posargs:([^}]*)\}", r"\1", line.removeprefix("- ")).replace("{posargs}", "")
        out.append(shlex.split(line.replace("{toxworkdir}", "/toxworkdir").replace("{toxinidir}", str(ROOT))))
    return out


def run_options(args: list) -> argparse.Namespace:
    """The suite's options as a pytest command line sets them: @FILE read one option a line, a later one winning."""
    parser = argparse.ArgumentParser(fromfile_prefix_chars="@", add_help=False)
    for family in option_families().values():
        family.add_options(parser)
    return parser.parse_known_args(["@" + str(ROOT / a[1:]) if a.startswith("@") else a for a in args])[0]


def faucet_reroute_s() -> float:
    """How long after a failure Faucet re-routes at most, as the §5.4.2 page documents it."""
    page = (ROOT / "docs" / "benchmarks" / "network_reprovisioning_time.md").read_text()
    found = re.search(r"re-route\s+comes\s+up\s+to\s+([\d.]+)\s+s\s+after\s+the\s+failure", page)
    assert found, "network_reprovisioning_time.md no longer says how long Faucet's re-route takes at most"
    return float(found.group(1))


def test_the_helpers_read_tox_commands_as_tox_and_pytest_do():
    assert k_selects(["-k", "not cluster_leader_reelection and not ovn_northbound"], "test_network_reprovisioning_time")
    assert not k_selects(["-k", "control_session_capacity"], "test_network_reprovisioning_time")
    assert k_selects(["-k", "(async or reprov) and not x"], "test_network_reprovisioning_time")
    assert k_selects(["suites"], "test_anything")
    assert run_options(["--reprov-td", "7", "@fixtures/profiles/short-run.args"]).reprov_td == 3.0
    assert run_options(["@fixtures/profiles/short-run.args", "--reprov-td=7"]).reprov_td == 7.0
    assert faucet_reroute_s() > 10


@pytest.mark.parametrize("env", ["bench-faucet", "matrix"])
def test_faucets_reprovisioning_runs_wait_longer_than_its_reroute(env):
    """Faucet re-routes when its stack's LLDP beacons time out, seconds after the failure: a Td shorter than that
    fails every §5.4.2 trial, and the matrix would say Faucet did not re-provision."""
    runs = [run_options(args) for args in tox_commands(env)
            if args[:1] == ["pytest"] and k_selects(args, "test_network_reprovisioning_time")]
    faucet = [ns for ns in runs if ns.controller.kind == "faucet"]
    assert faucet, f"tox -e {env} runs no network re-provisioning against Faucet"
    bound = faucet_reroute_s()
    for ns in faucet:
        assert ns.reprov_td > bound, f"tox -e {env}: Faucet's Td is {ns.reprov_td:g} s, its re-route up to {bound:g} s"


def test_the_certification_run_lists_known_findings_only_when_told_and_the_docs_agree():
    """tox -e certify passes no --known-findings; the certification page, the screen's page and the file say so."""
    (certify,) = [args for args in tox_commands("certify") if args[:1] == ["pytest"]]
    assert run_options(certify).known_findings is None
    assert "`tox -e certify` lists no known findings" in (ROOT / "docs" / "certification.md").read_text()
    assert "`tox -e certify` does not" in (ROOT / "docs" / "benchmarks" / "malformed_message_handling.md").read_text()
    assert "tox -e certify does not" in (ROOT / "fixtures" / "profiles" / "known-findings-ryu-4.34.yaml").read_text()


def test_the_benchmarks_without_a_bound_in_the_default_profile_are_the_ones_common_md_names():
    import yaml
    profile = yaml.safe_load((ROOT / "fixtures" / "profiles" / "default.yaml").read_text())
    unbounded = {name for name in suite_benchmarks() if name[5:] not in profile}
    section = (ROOT / "docs" / "benchmarks" / "common.md").read_text().split("## Verdicts and profiles", 1)[1]
    named = {page_benchmark(ROOT / "docs" / "benchmarks" / target.split("#", 1)[0])
             for target in LINK.findall(section.split("have no bound", 1)[1])}
    assert named == unbounded, "common.md's list of the benchmarks default.yaml does not bound is not the file's"


# --------------------------------------------------------------------------- the README's first commands

def readme_commands() -> list:
    """The command lines of the README's first shell block."""
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip() and not line.startswith("#")]


def externally_managed_python(root: Path) -> Path:
    """A directory holding a ``python3`` that is this Python's interpreter with a prefix of its own under ``root``,
    marked EXTERNALLY-MANAGED in its stdlib directory (PEP 668) as Debian 12's and Ubuntu's are; not a venv (pip
    does not look for the mark inside one).  Its stdlib is this one's; its site-packages holds only pip."""
    prefix = root / "system"
    stdlib = Path(sysconfig.get_path("stdlib"))
    base_purelib = Path(sysconfig.get_path("purelib", vars={"base": sys.base_prefix, "platbase": sys.base_prefix}))
    lib = prefix / stdlib.relative_to(sys.base_prefix)
    (lib / "site-packages").mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages"):
            (lib / entry.name).symlink_to(entry)
    for entry in list(base_purelib.glob("pip")) + list(base_purelib.glob("pip-*.dist-info")):
        (lib / "site-packages" / entry.name).symlink_to(entry)
    (lib / "EXTERNALLY-MANAGED").write_text("[externally-managed]\nError=this Python is the system's (PEP 668)\n")
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    (prefix / "bin").mkdir()
    shutil.copy2(binary, prefix / "bin" / binary.name)
    shims = root / "bin"
    shims.mkdir()
    (shims / "python3").symlink_to(prefix / "bin" / binary.name)
    return shims


@pytest.mark.external
def test_the_readmes_commands_install_tox_where_pip_is_externally_managed(tmp_path):
    """The README's first two commands, up to the tox they install, on a Python that refuses ``pip install`` outside
    a venv (PEP 668), as a fresh Debian 12 or Ubuntu has; then the tox they give answers, with tox-uv.  The two
    install the same way, so that is installed once (from the package index)."""
    installs = [line for line in readme_commands() if "pip install" in line]
    assert len(installs) >= 2, "the README's first block no longer installs tox in its first two commands"
    steps = [[part.strip() for part in line.split("&&")] for line in installs[:2]]
    assert steps[0][:-1] == steps[1][:-1], f"the README's two commands install differently: {installs[:2]}"
    *install, run_tox = steps[0]
    assert all(s[-1].split()[0].endswith("tox") for s in steps), f"a command does not end by running tox: {installs}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV")}
    env["PATH"] = f"{externally_managed_python(tmp_path)}{os.pathsep}/usr/bin{os.pathsep}/bin"
    clone = tmp_path / "clone"
    clone.mkdir()

    def sh(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=900, stdin=subprocess.DEVNULL)

    system = sh('python3 -c "import sys; print(sys.prefix == sys.base_prefix)" && '
                'python3 -m pip install --dry-run "tox>=4,<5"')
    assert system.stdout.startswith("True") and system.returncode != 0, system.stdout + system.stderr
    assert "externally-managed-environment" in system.stderr or "No module named pip" in system.stderr, system.stderr
    done = sh(" && ".join([*install, f"{run_tox.split()[0]} --version"]))
    assert done.returncode == 0, f"{' && '.join(install)}\n{done.stdout}{done.stderr}"
    assert re.search(r"^4\.", done.stdout, re.M) and "tox-uv" in done.stdout, done.stdout


def test_the_current_figures_page_is_generated_from_the_kept_runs():
    """docs/current.md is `python -m reports current docs/runs/*.json --out docs/current.md`, and up to date."""
    from reports.__main__ import load_all
    from reports.current import render
    runs = sorted((ROOT / "docs" / "runs").glob("*.json"))
    assert runs, "docs/runs/ keeps no run: the current figures have no source"
    loaded = load_all(runs)
    assert loaded is not None
    page = ROOT / "docs" / "current.md"
    assert page.read_text() == render(loaded, root=page.parent) + "\n", \
        "docs/current.md is out of date: python -m reports current docs/runs/*.json --out docs/current.md"


# --------------------------------------------------------------------------- the -k the docs offer

# A word the docs offer after -k for a group of benchmarks, and the group it is meant to select.
K_GROUPS = {"datastore": {"test_datastore_leader_reelection", "test_datastore_crud_latency",
                          "test_datastore_routed_rpc_latency"}}
# Pages that record past runs as they were run: their commands are history, not instructions.
RECORDS = {"measurements.md"}


def offered_commands(text: str) -> list:
    """The commands a doc offers: every line of its fenced code blocks (a trailing backslash joins the next) and
    every inline code span that starts with ``pytest`` or ``tox``."""
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        out += [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    prose = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.M | re.S)
    out += re.findall(r"`((?:pytest|tox) [^`]*)`", prose.replace("\n", " "))
    return out


def k_expressions(command: str) -> list:
    """The -k expressions of one command line (its # comment left out; one that shlex cannot split gives none)."""
    try:
        args = shlex.split(command, comments=True)
    except ValueError:
        return []
    return [args[i + 1] for i in range(len(args) - 1) if args[i] == "-k"]


def selected(expression: str) -> set:
    """The benchmarks of suites/ a -k expression selects."""
    from fixtures.benchmark import suite_benchmarks as declared
    return {b.name for b in declared() if k_selects(["-k", expression], b.name)}


def named_in(text: str, name: str) -> bool:
    """Whether ``text`` names the benchmark: its short name (with '_' or spaces), its title, its page, or its RFC
    section (§5.1.7)."""
    from fixtures.benchmark import suite_benchmarks as declared
    bench = next(b for b in declared() if b.name == name)
    low = text.lower()
    return any(form in low for form in (bench.short, bench.short.replace("_", " "), bench.title.lower(),
                                        f"{bench.short}.md")) or (bench.section != "★" and
                                                                 re.search(rf"§{re.escape(bench.section)}(?![\d.])",
                                                                           text) is not None)


def unmeant(expression: str, context: str, own: Optional[str] = None) -> set:
    """What a -k the docs offer selects beyond what they mean: for a group word (:data:`K_GROUPS`), any difference
    from its group; for an expression that only selects (no ``not``), each benchmark it does not name whole and
    ``context`` does not name either, other than the page's ``own``; nothing for an exclusion (``not x``), which
    means "everything else"."""
    chosen = selected(expression)
    if expression in K_GROUPS:
        return chosen ^ K_GROUPS[expression]
    words = re.findall(r"\w+", expression)
    if "not" in words:
        return set()
    return {name for name in chosen if name != own and name[5:] not in words and not named_in(context, name)}


def tox_comment_blocks() -> list:
    """(section, its comment lines joined) of tox.ini."""
    out, section, lines = [], None, []
    for line in (ROOT / "tox.ini").read_text().splitlines() + ["[end]"]:
        if line.startswith("["):
            if section:
                out.append((section, " ".join(lines)))
            section, lines = line, []
        elif line.lstrip().startswith("#"):
            lines.append(line.lstrip("# "))
    return out


@pytest.mark.parametrize("page", BENCHMARK_PAGES, ids=lambda p: p.name)
def test_every_k_a_benchmark_page_offers_selects_its_benchmark_and_nothing_it_does_not_mean(page):
    """``-k scaling`` on the northbound scaling point's page also selected the OVN scaling point, which boots OVN
    centrals: a command a page gives selects its own benchmark, and any other only when the page names it."""
    text, own = page.read_text(), page_benchmark(page)
    for command in offered_commands(text):
        for expression in k_expressions(command):
            assert own in selected(expression), f"{page.name}: `{command}` does not select {own}"
            extra = unmeant(expression, text, own)
            assert not extra, f"{page.name}: -k {expression} also selects {sorted(extra)}, which the page does not name"


@pytest.mark.parametrize("doc", [d for d in DOCS if d not in BENCHMARK_PAGES and d.name not in RECORDS],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_k_the_docs_offer_selects_what_they_mean(doc):
    text = doc.read_text()
    for command in offered_commands(text):
        for expression in k_expressions(command):
            if expression == "NAME" or "{" in expression:      # a placeholder
                continue
            assert selected(expression), f"{doc.name}: -k {expression} selects no benchmark"
            extra = unmeant(expression, text)
            assert not extra, f"{doc.name}: -k {expression} also selects {sorted(extra)}, which it does not name"


def test_every_k_tox_ini_offers_in_its_comments_selects_what_they_mean():
    for section, comments in tox_comment_blocks():
        for expression in re.findall(r"(?:pytest|tox)\b[^()]*?-k\s+(\"[^\"]*\"|'[^']*'|[\w]+)", comments):
            expression = expression.strip("\"'")
            extra = unmeant(expression, comments)
            assert selected(expression) and not extra, \
                f"tox.ini {section}: -k {expression} selects {sorted(selected(expression))}, not what it names"


def test_the_k_helpers_find_what_a_doc_offers():
    text = "Run `pytest suites -k scaling --x 1` or:\n```sh\npytest suites -k \"a or b\" \\\n  --y  # -k c\n```\n"
    assert [e for c in offered_commands(text) for e in k_expressions(c)] == ["a or b", "scaling"]
    assert selected("scaling") >= {"test_northbound_scaling_point", "test_ovn_northbound_scaling"}
    assert unmeant("scaling", "the northbound scaling point") == {"test_ovn_northbound_scaling"}
    assert not unmeant("northbound_scaling_point", "")
    assert unmeant("northbound_scaling", "", own="test_northbound_scaling_point") == {"test_ovn_northbound_scaling"}
    assert not unmeant("datastore", "") and not unmeant("not datastore", "")
    assert named_in("§5.1.7 proactive", "test_proactive_path_provisioning_rate")
    assert not named_in("§5.1.70", "test_proactive_path_provisioning_rate")


# --------------------------------------------------------------------------- the README's benchmarks and its result

def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    return re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S).group(1)


def test_the_readmes_table_names_every_benchmark_the_suites_define():
    rows = [line for line in readme_section("Benchmarks").splitlines() if line.startswith("| ")]
    named = {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    missing = sorted(b[5:] for b in suite_benchmarks() if b[5:] not in named)
    assert not missing, f"the README's benchmark table leaves out {missing}"
    assert not named - {b[5:] for b in suite_benchmarks()}, "the README's table names benchmarks suites/ lacks"


def readme_example() -> dict:
    """The run the README's "Reading a result" shows: `tox -e bench`'s §5.2.1 against the embedded Ryu (30 trials,
    each ending as Ryu exits at its open-file limit, so the sustained capacity is searched), judged against
    default.yaml; its findings and note made by the capacity family's own code."""
    from fixtures.families import capacity as cap
    from reports.outcome import concluded
    from reports.stats import summarize
    from reports.verdict import against_threshold
    values = [19992 - (i * 7) % 5 for i in range(30)]
    trials = [{"index": i + 1, "value": v, "ok": True, "details": {"ccn": v, "attempted": v + 1,
                                                                     "failure_mode": cap.EXITED, "capped": False}}
              for i, v in enumerate(values)]
    ccn = sorted(values)[(len(values) - 1) // 2]         # the search starts at the median, as the family's does
    found = {"status": "searched", "from_ccn": ccn,
             **cap.sustained_search(ccn, lambda m: {"held": m <= 12183}, 0.02, 8)}
    entry = {"benchmark": "test_control_session_capacity", "rfc_section": "5.2.1", "unit": "sessions",
             "trials": trials, "summary": summarize(values),
             "verdict": against_threshold(values, 1000, "min").to_dict(),
             "findings": {**cap.findings({"trials": trials}), "sustained_capacity": found["sessions"]},
             "notes": [cap.sustained_note(found, 3.0)], "outcome": {"status": "running"}}
    entry["outcome"] = concluded(entry)
    return {"schema_version": 2, "run": {"started": "2026-11-28T09:00:00+00:00"}, "benchmarks": [entry]}


def terminal_lines(data: dict) -> list:
    """What the run prints at its end for ``data`` (fixtures/session.py's terminal summary), its report folder
    shown as the README names it."""
    from types import SimpleNamespace as NS

    from fixtures.outcomes import STORE
    from fixtures.session import pytest_terminal_summary
    from reports.results import ResultStore
    store = ResultStore(Path("reports/out/<time>-<pid>/results.json"), data["run"])
    store.data = data
    lines = []
    reporter = NS(section=lambda title, **kw: lines.append(f"{'=' * 20} {title} {'=' * 20}"),
                  write_line=lambda line, **kw: lines.extend(line.splitlines()))
    pytest_terminal_summary(reporter, 0, NS(stash={STORE: store}))
    return lines


def test_the_readmes_result_is_what_a_run_prints():
    """The README's example end of a run is the terminal summary's own output for a run like the README's main job,
    line for line: the headline with its extras, the verdict, the findings and the sustained-capacity note."""
    block = re.search(r"```\n(.*?)```", readme_section("Reading a result"), re.S).group(1)
    assert block.splitlines() == terminal_lines(readme_example())


# --------------------------------------------------------------------------- the history page

def test_the_history_page_names_every_colour_of_the_site():
    """The site's change-point colours (reports/site.py) are the ones docs/history.md lists, orange included."""
    from reports.site import COLOURS
    page = (ROOT / "docs" / "history.md").read_text().split("## The history site", 1)[1]
    listed = re.search(r"dashed lines: (.*?)\. ", page.replace("\n", " ")).group(1)
    for direction, colour in COLOURS.items():
        name = colour.removeprefix("tab:")
        assert re.search(rf"\b{name} for an? {direction if direction != 'change' else 'change of unknown'}",
                         listed), f"history.md does not say {name} is a {direction}: {listed}"
    assert "grey once acknowledged" in listed


def test_every_run_the_history_page_gives_selects_benchmarks():
    """A run without -k measures every benchmark of the suite (about 15 hours): each the history page gives names
    what it runs."""
    commands = offered_commands((ROOT / "docs" / "history.md").read_text())
    runs = [c for c in commands if c.lstrip().startswith("pytest suites")]
    assert runs and all(k_expressions(c) for c in runs), [c for c in runs if not k_expressions(c)]


def test_the_vendor_loop_gives_the_options_a_release_series_needs_and_says_what_each_gives():
    """A certification run for the history: the controller's name and version, a tag, its northbound and its
    start command, each with a line saying what a run without it loses; the CI check passes while the store
    fills."""
    section = (ROOT / "docs" / "certification.md").read_text().split("## A vendor's release loop", 1)[1]
    commands = offered_commands(section)
    (certify,) = [c for c in commands if "tox -e certify" in c]
    bullets = re.findall(r"^- (.*?)(?=^- |^\S|\Z)", section, re.M | re.S)
    for flag in ("--controller-name", "--controller-version", "--history-tag", "--northbound", "--start-command"):
        assert flag in certify, f"the vendor loop's run does not give {flag}"
        assert any(flag in b.split(":", 1)[0] and "Without" in b for b in bullets), \
            f"certification.md does not say what a run without {flag} loses"
    (check,) = [c for c in commands if "history check" in c]
    assert "--allow-not-enough-data" in check
