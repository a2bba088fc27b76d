"""Integration: emulator shards on another host, reached over ssh (``--emulator-hosts ssh=...``), here through
a throw-away sshd the test starts on 127.0.0.1 (tests/sshd.py).  Skipped with the reason where sshd is missing
or will not start; ``BMWG_REQUIRE_SSHD=1`` (set by .ci/run) makes that a failure."""

import sys

import pytest
from helpers import pytest_run
from results_check import check_results_files
from sshd import local_sshd

from emulator import codec
from emulator.nullctl import Behaviour
from emulator.params import AsyncParams, CapacityParams, RampParams
from emulator.pool import ShardPool
from fixtures.devices.null import NullController
from fixtures.families.async_msgs import AsyncEmulator, trial_figures
from fixtures.families.capacity import CapacityEmulator
from reports.results import load_results

pytestmark = pytest.mark.external


@pytest.fixture
def sshd_server(tmp_path):
    with local_sshd(tmp_path) as srv:
        yield srv


def test_shards_over_ssh_run_capacity_and_traffic(sshd_server, started, tmp_path):
    spec = sshd_server.gateway_spec(python=sys.executable)
    pool = ShardPool([("popen", 1), (spec, 1)], grow=False)
    try:
        remote = pool.shards[1]
        assert remote.info.pid != pool.shards[0].info.pid and remote.local   # same boot: same clock
        assert "ssh" in remote.describe()
        ctl = started(NullController(tmp_path / "ctl", ready_timeout=15, behaviour=Behaviour(session_limit=70)))
        cap = CapacityEmulator(lambda: pool, codec.OFP13, RampParams(ramp_group=10, ramp_delay=0),
                               CapacityParams(max_sessions=100, hold_time=0.3), 60)
        cap.plan = lambda address, want: [(h, 50) for h in pool.shards]     # half the sessions on each side
        r = cap.trial(ctl.address)
        assert r["kept"] == 70 and r["shards"] == 2
        null = started(NullController(tmp_path / "null", ready_timeout=15))
        em = AsyncEmulator(lambda: pool, AsyncParams(macs=20, duration=0.5, settle=0.1).at(4), RampParams(),
                           codec.OFP13, shards=2)
        em.connect(null.address)
        f = trial_figures(em.run("serial", 0.5))
        em.disconnect()
        assert f["shards"] == 2 and f["nrx"] == f["ntx"] > 0
    finally:
        pool.close()


def test_the_capacity_suite_with_an_ssh_shard(sshd_server, tmp_path):
    spec = sshd_server.gateway_spec(python=sys.executable)
    out = tmp_path / "r"
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", "null", "--max-sessions", "40",
                     "--hold-time", "0.3", "--repetitions", "2", "--emulator-hosts", f"popen*1,{spec}*1",
                     "--report-dir", out)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    data = load_results(out / "results.json")
    assert [t["value"] for t in data["benchmarks"][0]["trials"]] == [40, 40]
    assert any("ssh" in s for s in data["run"]["emulator"]["shards"])
    check_results_files(out)
