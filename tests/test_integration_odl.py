"""Integration: the embedded OpenDaylight (``--controller odl``, openflowplugin 0.10.0 on Java 11) through the suite,
as a user runs it: built with Maven on first use (cached in ~/.cache/bmwg-sdn/odl-0.10.0/), booted, §5.1.1's
discovery and §5.1.5's proactive path provisioning measured through its RESTCONF northbound, and every listener of
its process on 127.0.0.1 while it runs.

Without Maven or a Java 11 runtime (the ``odl`` extra) the tests skip, saying which; with ``BMWG_REQUIRE_ODL`` set
(``.ci/run`` sets it once it has installed Maven) they fail instead."""

import os
import subprocess
import sys
import time

import psutil
import pytest
from helpers import PROJECT_ROOT
from results_check import check_results_files

from fixtures.devices.odl import missing
from reports.results import load_results

WHY = missing()
pytestmark = [pytest.mark.external,
              pytest.mark.skipif(WHY is not None and not os.environ.get("BMWG_REQUIRE_ODL"), reason=str(WHY))]

BUILD_AND_RUN_S = 2400      # a first run builds the distribution (about 5 minutes from an empty Maven cache)


def listening(root: psutil.Process) -> dict:
    """pid -> the (address, port) pairs each Java process under ``root`` listens on (TCP)."""
    out = {}
    try:
        procs = root.children(recursive=True)
    except psutil.NoSuchProcess:
        return out
    for proc in procs:
        try:
            if proc.name() != "java":
                continue
            out[proc.pid] = {(c.laddr.ip, c.laddr.port) for c in proc.net_connections(kind="inet")
                             if c.status == psutil.CONN_LISTEN}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def ss_listeners(pid: int) -> set:
    """What ``ss -ltnp`` says process ``pid`` listens on (empty when ss is not installed)."""
    try:
        text = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    found = set()
    for line in text.splitlines():
        if f"pid={pid}," in line:
            local = line.split()[3]
            host, _, port = local.rpartition(":")
            found.add((host.strip("[]"), int(port)))
    return found


def test_discovery_and_proactive_provisioning_on_odl_with_every_listener_on_loopback(tmp_path):
    if WHY is not None:
        pytest.fail(f"BMWG_REQUIRE_ODL is set and {WHY}")
    out = tmp_path / "r"
    log = tmp_path / "suite.log"
    with open(log, "w") as sink:
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "--controller", "odl", "-k",
             "network_topology_discovery_time or proactive_path_provisioning_time", "--repetitions", "2",
             "--poll-interval", "1", "--topology", "leaf-spine:2x2", "--report-dir", str(out), "-rs"],
            cwd=PROJECT_ROOT, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        root = psutil.Process(run.pid)
        seen, by_ss = {}, {}
        deadline = time.monotonic() + BUILD_AND_RUN_S
        try:
            while run.poll() is None and time.monotonic() < deadline:
                for pid, socks in listening(root).items():
                    seen.setdefault(pid, set()).update(socks)
                    if socks:
                        by_ss.setdefault(pid, set()).update(ss_listeners(pid))
                time.sleep(2)   # sampling another process's sockets while it runs; not a measurement
        finally:
            if run.poll() is None:
                os.killpg(run.pid, 15)
                run.wait(60)
    text = log.read_text()
    assert run.returncode == 0, text[-5000:]
    # OpenDaylight listened (OpenFlow, the legacy OpenFlow port, RESTCONF, its websocket, ssh, RMI, Akka), on
    # 127.0.0.1 only, by psutil and by ss
    socks = set().union(*seen.values()) if seen else set()
    assert len(socks) >= 6, f"the OpenDaylight process was not seen listening: {seen}"
    assert {ip for ip, _ in socks} == {"127.0.0.1"}, socks
    assert all(ip == "127.0.0.1" for found in by_ss.values() for ip, _ in found), by_ss
    data = load_results(out / "results.json")
    got = {b["benchmark"]: b for b in data["benchmarks"]}
    dt, ppt = got["test_network_topology_discovery_time"], got["test_proactive_path_provisioning_time"]
    for bench in (dt, ppt):
        assert bench["outcome"]["status"] == "passed" and bench["summary"]["n"] == 2, bench["outcome"]
    # hosts are not compared on OpenDaylight (no host tracker), and the report says so
    assert dt["parameters"]["compared"] == ["switches", "links"]
    assert any("hosts not compared" in n for n in dt["notes"]), dt["notes"]
    assert "OpenDaylight RESTCONF" in dt["parameters"]["northbound"]
    # the trials sample the JVM, not the bin/karaf script that started it (2 MiB)
    assert all(t["controller_resources"]["rss_bytes_max"] > 256 * 2**20 for t in dt["trials"]), dt["trials"][0]
    check_results_files(out)


def test_a_run_sigkilled_while_opendaylight_boots_leaves_no_jvm_behind(tmp_path):
    """The JVM is the process the run started (bin/karaf execs it), so it dies with a run killed by SIGKILL, which
    has no chance to stop it: the kernel ends it (PR_SET_PDEATHSIG).  Killed mid-boot, as soon as the JVM runs."""
    if WHY is not None:
        pytest.fail(f"BMWG_REQUIRE_ODL is set and {WHY}")
    code = ("import sys; from pathlib import Path; from fixtures.devices.odl import OdlController; "
            "OdlController(Path(sys.argv[1])).start()")
    run = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=PROJECT_ROOT, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root, jvms = psutil.Process(run.pid), []
    deadline = time.monotonic() + BUILD_AND_RUN_S
    try:
        while not jvms and run.poll() is None and time.monotonic() < deadline:
            try:
                jvms = [p for p in root.children(recursive=True)       # Karaf's JVM (not bin/karaf's java -version)
                        if p.name() == "java" and "-Dkaraf.base=" in " ".join(p.cmdline())]
            except psutil.NoSuchProcess:
                break
            time.sleep(0.2)     # waiting for another process to start one; not a measurement
        assert jvms, f"no JVM was started (the run exited with {run.poll()})"
        run.kill()
        run.wait(10)
        gone, alive = psutil.wait_procs(jvms, timeout=15)
        assert not alive, f"JVM(s) {[p.pid for p in alive]} outlived the SIGKILLed run"
    finally:
        for p in jvms:      # whatever outlived it, with its group (the group bin/karaf led)
            try:
                os.killpg(os.getpgid(p.pid), 9)
            except (ProcessLookupError, PermissionError):
                pass
        if run.poll() is None:
            run.kill()
