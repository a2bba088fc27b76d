"""Every bad option, value and file a user can give is named in one line before anything starts: checked here on the
suite's own parser and configuration object (``BmwgConfig.from_options``), as the pytest plugin calls them.  That the
plugin turns each into one short message and exit status 4, with no traceback, is checked once per kind of problem
by tests/test_integration.py (component tier), through a real ``pytest suites`` command.  The report folder's checks
(one holding a run, one that cannot be made) are tests/test_harness.py's."""

import argparse

import pytest

from fixtures.config import BmwgConfig, option_families


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytest", exit_on_error=False)
    for family in option_families().values():
        family.add_options(p)
    return p


def problem(tmp_path, *argv) -> str:
    """What the suite says of ``argv``: the parser's refusal of a value, else the configuration's problems."""
    try:
        opt = parser().parse_args([*map(str, argv), "--report-dir", str(tmp_path / "r")])
    except argparse.ArgumentError as exc:
        return str(exc)
    with pytest.raises(pytest.UsageError) as info:
        BmwgConfig.from_options(opt)
    return str(info.value)


@pytest.mark.parametrize("argv,says", [
    (("--repetitions", "0"), "--repetitions: must be a positive integer (got '0')"),
    (("--repetitions-for", "exception_handling"), "--repetitions-for: must be NAME=N pairs"),
    (("--repetitions-for", "exception_handling=0"), "N a positive whole number"),
    (("--repetitions-for", "exceptions=10"), "'exceptions' is no benchmark of the suite (one of "),
    (("--repetitions-for", "malformed_message_handling=3"), "'malformed_message_handling' counts its trials by"),
    (("--repetitions-for", "exception_handling=10,exception_handling=12"), "names 'exception_handling' twice"),
    (("--openflow", "2.0"), "--openflow: must be one of 1.0, 1.3 (got '2.0')"),
    (("--controller", "floodlight"), "expected one of ryu, null, ovs, faucet, osken, odl or external:HOST:PORT"),
    (("--size-start", "9", "--size-max", "4"), "--size-max (4) must not be below --size-start (9)"),
    # the asynchronous-message benchmarks'
    (("--switches", "4,x"), "--switches: must be a positive number or a comma list of them (got '4,x')"),
    (("--frame-size", "20"), "--frame-size must be 64..9000 bytes (got 20)"),
    (("--async-mode", "max"), "--async-mode: must be one of serial, per-switch"),
    (("--rate-step", "2"), "--rate-step: must be a fraction between 0 and 1 (got '2')"),
    # the topology benchmarks'
    (("--topology", "ring:2"), "ring: n must be a whole number ≥ 3"),
    (("--topology", "star:5"), "unknown kind 'star'"),
    (("--northbound", "floodlight=http://x"), "kind must be one of ryu, onos, odl"),
    (("--discovery-mode", "sometimes"), "--discovery-mode: must be one of poll, wait"),
    (("--size-family", "tree"), "--size-family: must be one of"),
    # the robustness screen's and the denial-of-service benchmark's
    (("--malformed-kinds", "B03,Q9"), "'Q9'"),
    (("--dos-attacks", "syn", "--dos-rate", "packet-in=5"), "--dos-rate names packet-in"),
    (("--dos-attacks", "smurf"), "smurf"),
])
def test_a_bad_option_is_named_with_what_was_wrong(tmp_path, argv, says):
    text = problem(tmp_path, *argv)
    assert says in text, text
    assert argv[0] in text or "ring:" in says or "'star'" in says or "floodlight=" in argv[1] or "Q9" in says


def test_a_known_findings_file_naming_no_kind_is_refused(tmp_path):
    bad = tmp_path / "known.yaml"
    bad.write_text("Z99: nothing\n")
    assert "Z99" in problem(tmp_path, "--known-findings", bad)


def test_a_profile_that_is_not_yaml_or_names_no_benchmark_is_refused(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("control_session_capacity: {min: [\n")
    assert f"profile {bad}: not valid YAML at line" in problem(tmp_path, "--bmwg-profile", bad)
    typo = tmp_path / "t.yaml"
    typo.write_text("control_session_capasity: {min: 1}\n")
    assert "key 'control_session_capasity' is not a benchmark" in problem(tmp_path, "--bmwg-profile", typo)
