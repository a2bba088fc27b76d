"""The run history store (reports/history.py): what it keys runs and readings by, one transaction per run, no
duplicates, schema versions, concurrent writers, and the ``history`` commands and ``--history`` option."""

import argparse
import copy
import json
import sqlite3
import threading

import pytest
from test_reports import sample_results

from reports.__main__ import main as reports_main
from reports.history import SCHEMA_VERSION, HistoryError, cell_key, fingerprint_id, open_store
from reports.stores import connect


def run_data(tmp_path, started="2026-11-22T00:00:00+00:00", pid=4242, **run):
    data = copy.deepcopy(sample_results(tmp_path).data)
    data["run"].update(started=started, pid=pid, command="pytest suites -k control_session_capacity", **run)
    data["run"]["finished"] = started
    return data


def midway(data: dict) -> dict:
    """The same run as its results.json read while it was going: not finished, 3 trials so far."""
    partial = copy.deepcopy(data)
    del partial["run"]["finished"]
    partial["benchmarks"][0]["trials"] = partial["benchmarks"][0]["trials"][:3]
    return partial


def test_a_run_is_added_once_with_every_entry_and_trial(tmp_path, history_spec):
    data = run_data(tmp_path)
    with open_store(history_spec()) as store:
        first = store.add(data, source="a/results.json")
        again = store.add(copy.deepcopy(data), source="b/results.json")
        assert (first.state, first.entries, again.state, again.run_id) == ("added", 1, "present", first.run_id)
        assert store.counts() == {"runs": 1, "entries": 1, "trials": 11, "testbeds": 1}
        (row,) = store.runs()
        assert row[2:5] == ("failed", "ryu", "4.34") and row[7] == 1
        values = [v for (v,) in store.all("SELECT value FROM trials ORDER BY idx")]
        assert values[:4] == [100.0, 102.0, None, 98.0]
        mean, n, status = store.one("SELECT mean, n, status FROM entries")
        assert (n, status) == (10, "failed") and mean == pytest.approx(100.0)


def test_a_later_copy_of_a_run_replaces_it_and_another_run_is_added(tmp_path, history_spec):
    data = run_data(tmp_path)
    partial = midway(data)
    with open_store(history_spec()) as store:
        first = store.add(partial)
        later = store.add(data)
        other = store.add(run_data(tmp_path, started="2026-11-23T00:00:00+00:00"))
        assert (later.state, later.run_id) == ("replaced", first.run_id)
        assert other.state == "added" and other.run_id != first.run_id
        assert store.counts() == {"runs": 2, "entries": 2, "trials": 22, "testbeds": 1}


def test_cells_line_up_across_repetition_counts_and_loopback_ports_but_not_across_parameters():
    entry = {"benchmark": "test_controller_failover_time", "variant": "2nodes",
             "parameters": {"repetitions": 30, "warmup": 1, "members": ["ryu-ha-1 at 127.0.0.1:30387"], "td": 5}}
    other_run = copy.deepcopy(entry)
    other_run["parameters"].update(repetitions=10, warmup=0, members=["ryu-ha-1 at 127.0.0.1:41000"])
    other_td = copy.deepcopy(entry)
    other_td["parameters"]["td"] = 10
    assert cell_key(entry) == cell_key(other_run)
    assert cell_key(entry) != cell_key(other_td)
    assert cell_key(entry) != cell_key({**entry, "variant": "3nodes"})


def test_the_testbed_is_what_makes_readings_noisy_not_what_a_run_reads_at_run_time():
    run = {"host": {"cpus": 2, "cpu_model": "AMD EPYC", "memory_gib": 23.5, "os": "Linux 6.1", "python": "3.11.7",
                    "load_average": [0.1, 0.2, 0.3]},
           "emulator": {"shards": ["popen × 1"], "busy_poll": False},
           "cpu_affinity": {"controller": [1], "emulator": [0]}, "started": "2026-11-22T00:00:00+00:00"}
    loaded = copy.deepcopy(run)
    loaded["host"].update(load_average=[3.0, 2.0, 1.0], memory_gib=23.6)
    loaded["started"] = "2026-11-23T00:00:00+00:00"
    assert fingerprint_id(run) == fingerprint_id(loaded)
    for change in ({"host": {**run["host"], "cpus": 4}}, {"emulator": {"shards": ["popen × 2"]}},
                   {"cpu_affinity": "not pinned"}, {"host": {**run["host"], "os": "Linux 6.18"}}):
        assert fingerprint_id({**run, **change}) != fingerprint_id(run)


def test_a_run_that_cannot_be_written_whole_leaves_nothing(tmp_path, history_spec):
    data = run_data(tmp_path)
    trials = data["benchmarks"][0]["trials"]
    trials[1]["index"] = trials[0]["index"]             # two trials with one index: the second insert fails
    with open_store(history_spec()) as store:
        with pytest.raises(HistoryError, match="the run was not written"):
            store.add(data)
        assert store.counts() == {"runs": 0, "entries": 0, "trials": 0, "testbeds": 0}


def test_the_schema_is_versioned_and_a_foreign_or_newer_store_is_refused(history_spec):
    path = history_spec()
    with open_store(path) as store:
        assert store.version() == SCHEMA_VERSION
    with open_store(path) as store:                      # opening again migrates nothing
        assert store.version() == SCHEMA_VERSION
        store.db.query("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(HistoryError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        open_store(path)
    foreign = history_spec("other")
    db = connect(foreign, True, 1000)
    db.query("CREATE TABLE runs (x INTEGER)")            # somebody else's table, named as one of the history's
    db.close()
    with pytest.raises(HistoryError, match="database that is not a bmwg-sdn history store"):
        open_store(foreign)


def test_a_foreign_sqlite_file_or_folder_is_refused(tmp_path):
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(HistoryError, match="not a bmwg-sdn history store"):
        open_store(foreign)
    (tmp_path / "text.db").write_text("not sqlite at all, " * 100)
    with pytest.raises(HistoryError, match="file is not a database"):
        open_store(tmp_path / "text.db")
    with pytest.raises(HistoryError, match="a mysql:// store is not supported"):
        open_store("mysql://bmwg@127.0.0.1/history")
    with pytest.raises(HistoryError, match="does not exist"):
        open_store(tmp_path / "no" / "h.db")


def test_two_writers_at_once_both_land(tmp_path, history_spec):
    path = history_spec()
    open_store(path).close()
    runs = [run_data(tmp_path / str(i), started=f"2026-11-2{i}T00:00:00+00:00") for i in range(2)
            if (tmp_path / str(i)).mkdir() is None]
    gate, errors = threading.Barrier(2), []

    def write(data):
        try:
            with open_store(path) as store:
                gate.wait()
                store.add(data)
        except Exception as exc:          # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(d,)) for d in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_store(path) as store:
        assert store.counts()["runs"] == 2


def test_the_history_commands(tmp_path, capsys, history_spec):
    results = sample_results(tmp_path).path
    store = history_spec()
    assert reports_main(["history", "list", "--history", str(store)]) == 2
    assert "no such store" in capsys.readouterr().err
    assert reports_main(["history", "add", "--history", str(store), str(results), str(results)]) == 0
    out = capsys.readouterr().out
    assert "run 1 added (1 entries)" in out and "run 1 present (1 entries)" in out
    assert reports_main(["history", "list", "--history", str(store)]) == 0
    assert "1 run(s)" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{")
    assert reports_main(["history", "add", "--history", str(store), str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err
    assert reports_main(["history", "add", "--history", "mysql://h/db", str(results)]) == 2
    assert "not supported" in capsys.readouterr().err


def test_the_history_option_is_checked_before_the_run_and_its_append_says_what_happened(tmp_path):
    from fixtures.config import BmwgConfig, option_families
    from fixtures.session import append_history
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)
    with pytest.raises(pytest.UsageError, match="--history: history .* does not exist"):
        BmwgConfig.from_options(parser.parse_args(["--history", str(tmp_path / "no" / "h.db")]))
    ok = BmwgConfig.from_options(parser.parse_args(["--history", str(tmp_path / "h.db")]))
    assert ok.run.history == str(tmp_path / "h.db") and (tmp_path / "h.db").is_file()
    data = run_data(tmp_path)
    assert append_history(str(tmp_path / "h.db"), data, tmp_path / "results.json") == \
        f"run 1 added in {tmp_path / 'h.db'} (1 entries)"
    (tmp_path / "dir.db").mkdir()
    said = append_history(str(tmp_path / "dir.db"), data, tmp_path / "results.json")
    assert said.startswith("error: the run was not added to history") and "is a folder" in said


def test_against_finds_the_latest_run_a_tag_or_a_controller_version_never_a_stopped_one(tmp_path, history_spec):
    from fixtures.harness import baseline_values
    first = run_data(tmp_path, started="2026-11-20T00:00:00+00:00")
    second = run_data(tmp_path, started="2026-11-21T00:00:00+00:00")
    second["run"]["controller"]["version"] = "4.35"
    stopped = run_data(tmp_path, started="2026-11-22T00:00:00+00:00")
    stopped["run"]["interrupted"] = "stopped by SIGTERM"
    unstarted = run_data(tmp_path, started=None, pid=1)             # a run without a start is never the latest
    with open_store(history_spec()) as store:
        store.add(unstarted)
        a = store.add(first, tag="release-1").run_id
        b = store.add(second).run_id
        store.add(stopped)
        assert store.find("latest") == b
        other = run_data(tmp_path, started="2026-11-23T00:00:00+00:00")
        other["run"]["controller"] = {"name": "osken", "version": "3.1"}
        c = store.add(other).run_id
        assert store.find("latest") == c and store.find("latest", controller="ryu") == b
        assert store.find("controller-version:4.34", controller="ryu") == a
        assert store.find("tag:release-1", controller="osken") == a         # a tag names its run, whoever ran it
        with pytest.raises(HistoryError, match="no run of controller faucet matches --against latest"):
            store.find("latest", controller="faucet")
        assert store.find("tag:release-1") == a
        assert store.find("controller-version:4.34") == a
        assert store.find("controller-version:4.35") == b
        with pytest.raises(HistoryError, match="no run matches --against tag:release-2"):
            store.find("tag:release-2")
        for bad in ("newest", "tag:", "controller-version:"):
            with pytest.raises(HistoryError, match="is not one of latest, tag:NAME or controller-version:X"):
                store.find(bad)
        again = store.results(a)
    assert again["run"]["started"] == "2026-11-20T00:00:00+00:00"
    assert baseline_values(again, "test_control_session_capacity") == [100, 102, 98, 101, 99, 100, 103, 97, 100, 100]


def test_a_version_1_store_is_migrated_with_its_runs_kept(tmp_path, history_spec):
    from reports.history import MIGRATIONS
    path = history_spec("old")
    db = connect(path, True, 1000)
    for statement in MIGRATIONS[1]:
        db.query(statement.format(**db.types))
    db.query("INSERT INTO meta VALUES ('schema_version', '1')")
    db.query("INSERT INTO testbeds VALUES ('t', '{}')")
    db.query("INSERT INTO runs (run_key, content_hash, status, testbed, added, run_json) "
             "VALUES ('k', 'c', 'passed', 't', 'now', '{}')")
    db.close()
    with open_store(path) as store:
        assert store.version() == SCHEMA_VERSION == 2
        assert store.runs()[0][0] == 1 and store.runs()[0][8] is None     # the old run, without a tag
        assert store.add(run_data(tmp_path), tag="r2").run_id == 2            # and the store takes new ones


def test_against_is_checked_with_the_options(tmp_path, history_spec):
    from fixtures.config import BmwgConfig, option_families
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)
    store = history_spec()
    with pytest.raises(pytest.UsageError, match="--against needs --history"):
        BmwgConfig.from_options(parser.parse_args(["--against", "latest"]))
    with pytest.raises(pytest.UsageError, match="--history-tag needs --history"):
        BmwgConfig.from_options(parser.parse_args(["--history-tag", "r1"]))
    with pytest.raises(pytest.UsageError, match="--against: history .* no run of controller ryu matches"):
        BmwgConfig.from_options(parser.parse_args(["--history", str(store), "--against", "latest"]))
    with open_store(store) as history:
        history.add(run_data(tmp_path), tag="r1")
    with pytest.raises(pytest.UsageError, match="--against and --baseline both"):
        BmwgConfig.from_options(parser.parse_args(["--history", str(store), "--against", "tag:r1", "--baseline",
                                                   str(tmp_path / "results.json")]))
    with pytest.raises(pytest.UsageError, match="no run of controller nullctl matches --against latest"):
        BmwgConfig.from_options(parser.parse_args(["--history", str(store), "--against", "latest", "--controller",
                                                   "external:127.0.0.1:6653", "--controller-name", "nullctl"]))
    cfg = BmwgConfig.from_options(parser.parse_args(["--history", str(store), "--against", "latest"]))
    assert cfg.baseline_source.startswith("latest: run 1 (ryu 4.34")
    cfg = BmwgConfig.from_options(parser.parse_args(["--history", str(store), "--against", "tag:r1"]))
    assert cfg.baseline_source == (f"tag:r1: run 1 (ryu 4.34, started 2026-11-22T00:00:00+00:00, testbed "
                                   f"{fingerprint_id(run_data(tmp_path)['run'])}) of history {store}")
    assert cfg.baseline["benchmarks"][0]["benchmark"] == "test_control_session_capacity"


def test_history_add_tags_runs_and_list_shows_it(tmp_path, capsys, history_spec):
    results = sample_results(tmp_path).path
    store = history_spec()
    assert reports_main(["history", "add", "--history", store, "--tag", "v1.0", str(results)]) == 0
    assert reports_main(["history", "list", "--history", store]) == 0
    assert "tag v1.0" in capsys.readouterr().out


def test_an_earlier_copy_changes_nothing_and_a_later_one_keeps_the_tag(tmp_path, history_spec):
    data = run_data(tmp_path)
    partial = midway(data)
    with open_store(history_spec()) as store:
        first = store.add(data, tag="r1")
        assert store.add(partial).state == "present"                    # the run as it was mid-way: kept out
        assert store.counts()["trials"] == 11
    with open_store(history_spec("h2")) as store:
        store.add(partial, tag="r1")
        later = store.add(data)
        assert (later.state, store.runs()[0][8]) == ("replaced", "r1")
        assert first.state == "added"


def test_a_store_at_the_current_schema_is_opened_without_the_write_lock(tmp_path, monkeypatch, history_spec):
    import reports.history as history
    path = history_spec()
    with open_store(path) as store:
        store.add(run_data(tmp_path))
    monkeypatch.setattr(history, "BUSY_TIMEOUT_MS", 200)
    writer = connect(path, True, 200)
    writer.begin(200)                                   # another process in the middle of writing a run
    try:
        with open_store(path) as store:
            assert len(store.runs()) == 1 and store.find("latest") == 1
        with pytest.raises(HistoryError, match="the run was not written .*(locked|lock timeout)"):
            with open_store(path) as store:
                store.add(run_data(tmp_path, started="2026-11-23T00:00:00+00:00"))
    finally:
        writer.rollback()
        writer.close()


def test_what_cannot_be_written_is_said_and_never_raised_at_the_sessions_end(tmp_path, capsys, history_spec):
    from fixtures.session import append_history
    store = history_spec()
    bad = run_data(tmp_path)
    bad["benchmarks"] = [None]                          # not an entry at all
    said = append_history(store, bad, tmp_path / "results.json")
    assert said.startswith("error: the run was not added to history") and "AttributeError" in said
    dup = run_data(tmp_path)
    dup["benchmarks"][0]["trials"][1]["index"] = 1
    results = tmp_path / "dup.json"
    results.write_text(json.dumps(dup))
    assert reports_main(["history", "add", "--history", store, str(results)]) == 2
    assert "the run was not written" in capsys.readouterr().err


def test_a_url_password_is_masked_wherever_it_would_be_shown():
    from reports.stores import masked
    command = "pytest suites --history postgresql://ci:s3cr%40t@db.lab:5433/bench --history-tag=r1 -x"
    assert masked(command) == "pytest suites --history postgresql://ci:***@db.lab:5433/bench --history-tag=r1 -x"
    assert masked("--history=postgres://u:p@h/db") == "--history=postgres://u:***@h/db"
    assert masked("postgresql://ci@db.lab/bench") == "postgresql://ci@db.lab/bench"      # no password in it
    assert masked("/var/lib/bmwg/runs.db") == "/var/lib/bmwg/runs.db"
    for url in ("POSTGRESQL://u:secret@h/db", "postgresql://u:p@ss@h/db", "postgresql://u:ab/cd@h/db",
                "mysql://u:secret@h/db", "postgresql+pg8000://u:secret@h/db"):
        assert masked(f"history {url}: no").startswith("history ") and "***@h/db: no" in masked(f"history {url}: no")
    from reports.stores import masked_arg
    assert masked_arg("--history=postgresql://u:p q@r@h/db") == "--history=postgresql://u:***@h/db"


@pytest.mark.component
@pytest.mark.parametrize("secret", ["p@ss", "ab/cd", "p q", "a:b", "x%40y"])
def test_a_run_keeps_its_command_without_the_password_whatever_it_holds(monkeypatch, secret):
    import sys

    from fixtures.session import run_info
    monkeypatch.setattr(sys, "argv", ["pytest", "suites", "--history", f"postgresql://ci:{secret}@db.lab/bench"])
    cfg = __import__("fixtures.config", fromlist=["BmwgConfig"])
    parser = argparse.ArgumentParser()
    for family in cfg.option_families().values():
        family.add_options(parser)
    command = run_info(cfg.BmwgConfig.from_options(parser.parse_args([])))["command"]
    assert command.endswith("--history 'postgresql://ci:***@db.lab/bench'") and secret not in command


@pytest.mark.parametrize("url,says", [
    ("postgresql:///bench", "names no host"),
    ("postgresql://ci@db.lab/bench?application_name=x", r"takes only \?sslmode=.*; not application_name"),
    ("postgresql://ci@db.lab:99999/bench", "a bad port"),
    ("postgresql://ci:ab/cd@db.lab/bench", "a bad port"),
    ("postgresql://ci@[::1/bench", "unreadable"),
    ("postgresql://ci@db.lab/bench?sslmode=allow", "sslmode=allow is not one of disable, prefer, require"),
    ("postgresql://ci@db.lab/bench?sslrootcert=/etc/ca.pem", "sslrootcert needs sslmode=verify-ca or verify-full"),
    ("postgresql://ci@db.lab/bench?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem", "cannot be read"),
    ("postgresql://ci@db.lab/bench?sslmode=require&sslmode=disable", "each once"),
])
def test_a_postgresql_url_that_cannot_be_one_is_named_before_any_connection(url, says):
    with pytest.raises(HistoryError, match=says) as failed:
        open_store(url)
    assert "ab/cd" not in str(failed.value)


def test_a_run_its_store_did_not_take_is_kept_as_the_run_it_was_when_added_later(tmp_path, history_spec):
    data = run_data(tmp_path)
    data["run"]["history_error"] = "runs.db: is a folder"
    data["benchmarks"][0]["summary"]["stdev"] = float("nan")
    with open_store(history_spec()) as store:
        store.add(data)
        assert store.runs()[0][2] == "failed"                 # the benchmark's own outcome, not "error"
        assert "history_error" not in json.dumps(store.results(1)["run"])
        assert store.one("SELECT stdev FROM entries") == (None,)     # NaN is kept as nothing, in both databases


@pytest.mark.external
def test_a_postgresql_store_that_cannot_be_reached_or_entered_is_named(postgresql_server, postgresql_database,
                                                                       capsys):
    from urllib.parse import urlsplit

    from fixtures.ports import free_port
    parts = urlsplit(postgresql_server)
    wrong = parts._replace(netloc=f"{parts.username}:not-the-password@{parts.hostname}:{parts.port}").geturl()
    with pytest.raises(HistoryError, match="password authentication failed") as failed:
        open_store(wrong)
    assert "not-the-password" not in str(failed.value) and ":***@" in str(failed.value)
    with pytest.raises(HistoryError, match="cannot connect"):
        open_store(f"postgresql://bmwg@127.0.0.1:{free_port()}/postgres")
    with pytest.raises(HistoryError, match='database "bmwg_no_such_database" does not exist'):
        open_store(parts._replace(path="/bmwg_no_such_database").geturl())
    empty = postgresql_database("empty")                # a database with no history in it: not created by list
    assert reports_main(["history", "list", "--history", empty]) == 2
    assert "no such store (no history tables in that database)" in capsys.readouterr().err
    shared = connect(empty, True, 1000)
    shared.query("CREATE TABLE other_app (x INTEGER)")  # a database other tools use too
    shared.close()
    with open_store(empty) as store:
        assert store.version() == SCHEMA_VERSION
        assert "other_app" in store.db.tables()


@pytest.mark.external
def test_the_history_option_names_a_postgresql_store_it_cannot_use_without_its_password(postgresql_server):
    from urllib.parse import urlsplit

    from fixtures.config import BmwgConfig, option_families
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)
    parts = urlsplit(postgresql_server)
    wrong = parts._replace(netloc=f"{parts.username}:hunter2@{parts.hostname}:{parts.port}").geturl()
    with pytest.raises(pytest.UsageError, match="--history: history postgresql://.*:\\*\\*\\*@.*password") as failed:
        BmwgConfig.from_options(parser.parse_args(["--history", wrong]))
    assert "hunter2" not in str(failed.value)


def test_two_first_openers_at_once_make_the_schema_once(history_spec):
    path = history_spec()
    gate, errors, versions = threading.Barrier(3), [], []

    def first_open():
        try:
            gate.wait()
            with open_store(path) as store:
                versions.append(store.version())
        except Exception as exc:          # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=first_open) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and versions == [SCHEMA_VERSION] * 3


@pytest.mark.external
def test_a_postgresql_store_over_tls_as_sslmode_asks(postgresql_server, postgresql_database):
    import os
    ca = os.environ.get("BMWG_POSTGRESQL_CA")
    if not ca:
        pytest.skip("BMWG_POSTGRESQL_CA (the server's certificate, as .ci/postgresql start prints it) is not set")
    url = postgresql_database("tls")
    for query in ("?sslmode=require", f"?sslmode=verify-full&sslrootcert={ca}", f"?sslmode=verify-ca&sslrootcert={ca}"):
        with open_store(url + query) as store:
            assert store.one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == (True,)
    with open_store(url) as store:                         # sslmode=prefer, the default: the server offers it
        assert store.one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == (True,)
    with open_store(url + "?sslmode=disable") as store:
        assert store.one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == (False,)
    with pytest.raises(HistoryError, match="cannot connect .*(certificate|CERTIFICATE)"):
        open_store(url + "?sslmode=verify-full")            # its own certificate is no system CA's


@pytest.mark.external
def test_a_postgresql_writer_waits_out_a_long_lock_not_the_connect_timeout(tmp_path, postgresql_database,
                                                                          monkeypatch):
    import time

    import reports.history as history
    import reports.stores as stores
    monkeypatch.setattr(stores, "CONNECT_TIMEOUT_S", 1)
    monkeypatch.setattr(stores, "READ_SLACK_S", 1)
    monkeypatch.setattr(history, "BUSY_TIMEOUT_MS", 5000)
    url = postgresql_database()
    open_store(url).close()
    holder = connect(url, True, 5000)
    holder.begin(5000)                                  # another writer, 2.5 s on its run (> the connect timeout)
    releaser = threading.Timer(2.5, holder.commit)
    releaser.start()
    try:
        began = time.monotonic()
        with open_store(url) as store:
            store.add(run_data(tmp_path))
        assert time.monotonic() - began >= 2.0 and store is not None
    finally:
        releaser.join()
        holder.close()
    with open_store(url) as store:
        assert store.counts()["runs"] == 1


# --------------------------------------------------------------------------- judged against the store, not added to it

def test_a_read_only_store_is_read_and_never_written(tmp_path, history_spec):
    """``open_store(..., readonly=True)``: the store must exist at this suite's schema version; it answers what
    --against asks, refuses to add a run, and its connection itself cannot write (SQLite's mode=ro, PostgreSQL's
    read-only session)."""
    from reports.stores import StoreError
    spec = history_spec()
    with pytest.raises(HistoryError, match="no such store"):
        open_store(spec, readonly=True)
    with open_store(spec) as store:
        first = store.add(run_data(tmp_path), tag="4.34").run_id
    with open_store(spec, readonly=True) as store:
        assert store.find("tag:4.34") == first and store.results(first)["benchmarks"]
        with pytest.raises(HistoryError, match="opened read-only, the run was not written"):
            store.add(run_data(tmp_path, started="2026-11-23T00:00:00+00:00"))
        with pytest.raises(StoreError):
            store.db.query("CREATE TABLE scratch (x INTEGER)")
    with open_store(spec) as store:
        assert store.counts()["runs"] == 1 and "scratch" not in store.db.tables()


def test_a_read_only_store_of_an_older_schema_is_refused_not_migrated(history_spec):
    from reports.history import MIGRATIONS
    path = history_spec("old")
    db = connect(path, True, 1000)
    for statement in MIGRATIONS[1]:
        db.query(statement.format(**db.types))
    db.query("INSERT INTO meta VALUES ('schema_version', '1')")
    db.close()
    with pytest.raises(HistoryError, match="schema version 1 is older .* a read-only store is not migrated"):
        open_store(path, readonly=True)
    with open_store(path, create=False) as store:           # still version 1: a writable open migrates it now
        assert store.version() == SCHEMA_VERSION


def test_history_readonly_judges_a_run_against_the_store_without_adding_it(tmp_path, history_spec):
    """--history STORE --against latest --history-readonly: the baseline is chosen from the store as with --against
    alone, the store is not created or changed, and the run's end says it was not added."""
    from fixtures.config import BmwgConfig, option_families
    from fixtures.session import history_outcome
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)

    def options(*argv):
        return BmwgConfig.from_options(parser.parse_args(list(argv)))
    store = history_spec()
    with pytest.raises(pytest.UsageError, match="--history: history .* no such store"):
        options("--history", store, "--against", "latest", "--history-readonly")
    if "://" not in store:
        assert not (tmp_path / "h.db").exists()             # a read-only check creates nothing
    with open_store(store) as history:
        history.add(run_data(tmp_path), tag="r1")
        before = history.counts()
    with pytest.raises(pytest.UsageError, match="--history-readonly needs --history"):
        options("--history-readonly")
    with pytest.raises(pytest.UsageError, match="--history-readonly reads --history's store only to choose"):
        options("--history", store, "--history-readonly")
    with pytest.raises(pytest.UsageError, match="--history-tag names the run as it is added"):
        options("--history", store, "--against", "latest", "--history-readonly", "--history-tag", "r2")
    cfg = options("--history", store, "--against", "latest", "--history-readonly")
    assert cfg.baseline_source.startswith("latest: run 1 (ryu 4.34")
    assert cfg.baseline["benchmarks"][0]["benchmark"] == "test_control_session_capacity"
    said = history_outcome(cfg.run, run_data(tmp_path, started="2026-11-24T00:00:00+00:00"), tmp_path / "r.json")
    assert said.startswith("run not added to ") and "--history-readonly" in said
    with open_store(store) as history:
        assert history.counts() == before
    plain = options("--history", store)
    assert history_outcome(plain.run, run_data(tmp_path, started="2026-11-24T00:00:00+00:00"),
                           tmp_path / "r.json").startswith("run 2 added")
