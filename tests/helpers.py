"""Helpers the integration tests share: a pytest run in a child process, and finding processes a run left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
OUR_COMMANDS = ("emulator.shard", "execnet", "emulator.nullctl", "ryu_launcher", "ryu-manager", "ovs-testcontroller",
                "-m pytest -p no:cacheprovider suites")


def pytest_run(*args, timeout=240, cwd=PROJECT_ROOT, preexec_fn=None, env=None):
    """``pytest ARGS`` in a child process, as a user would type it."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn, env=env)


def said(run, report_dir=None, limit=2400) -> str:
    """Why a ``pytest_run`` failed, the telling part first (a CI log keeps a long message's two ends only): its
    exit status, each benchmark's outcome and reason from ``report_dir``'s results.json, the lines of its output
    naming an error or a failure, then the end of its output."""
    import json
    parts = [f"exit status {run.returncode}"]
    results = Path(report_dir) / "results.json" if report_dir is not None else None
    if results is not None and results.exists():
        try:
            for b in json.loads(results.read_text()).get("benchmarks", []):
                o = b.get("outcome") or {}
                parts.append(f"{b.get('benchmark')}[{b.get('variant')}]: {o.get('status')}"
                             + (f" ({o['reason']})" if o.get("reason") else ""))
        except (OSError, ValueError) as exc:
            parts.append(f"results.json unreadable: {exc}")
    telling = [line for line in (run.stdout + "\n" + run.stderr).splitlines()
               if any(w in line for w in ("rror", "FAIL", "failed", "reason", "Traceback", "no offered rate"))]
    parts += telling[-15:]
    head = "\n".join(parts)[:limit // 2]
    rest = limit - len(head)
    return head + "\n--- the end of its output:\n" + run.stdout[-rest * 2 // 3:] + run.stderr[-rest // 3:]


class GarbledController:
    """The null controller sending garbage (``python -m emulator.nullctl --malformed WHEN:WHAT``), started and
    ended around a ``with`` block; ``.port`` is where it listens."""

    def __init__(self, tmp_path, malformed: str):
        self.log = tmp_path / "garbled.log"
        self.malformed = malformed

    def __enter__(self):
        from emulator.process import ChildProcess
        from fixtures.ports import free_port
        self.port = free_port()
        self.proc = ChildProcess([sys.executable, "-m", "emulator.nullctl", "--port", str(self.port), "--malformed",
                                  self.malformed], name="garbled", log=self.log).start()
        self.proc.wait_ready(lambda: b"listening" in self.log.read_bytes(), 15, what="the garbled controller",
                             interval=0.05, retry_on=(OSError,))
        return self

    def __exit__(self, *exc):
        self.proc.end()


SESSION_STARTED = time.time()      # this module is imported while pytest collects, before any test runs


def orphans(markers=OUR_COMMANDS, since: float | None = None) -> list:
    """Processes whose parent is PID 1 and whose command line is one of ours: what a run left behind.  Only those
    started since ``since`` (this test session's start by default; a second of slack for the clock's resolution) and
    none of this process's ancestors: what ran the tests (a CI job's shell reparented to PID 1, say, with this
    checkout in its command line), or a controller a user runs beside it, was not left by a test."""
    import psutil
    since = (SESSION_STARTED if since is None else since) - 1.0
    ours = {p.pid for p in psutil.Process().parents()}
    out = []
    for p in psutil.process_iter(["pid", "ppid", "cmdline", "create_time"]):
        try:
            cmd = " ".join(p.info["cmdline"] or ())
        except psutil.Error:
            continue
        if p.info["ppid"] != 1 or p.info["pid"] in ours or (p.info["create_time"] or 0) < since:
            continue
        if str(PROJECT_ROOT) in cmd or any(m in cmd for m in markers):
            out.append((p.info["pid"], cmd[:200]))
    return out


def wait_gone(pids, timeout=10.0) -> list:
    """The processes of ``pids`` still alive after ``timeout`` s (waiting for another process; not a measurement)."""
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        if alive:
            time.sleep(0.1)
    return alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def default_sigint():
    # A shell without job control starts background jobs with SIGINT ignored, and Python keeps an inherited
    # SIG_IGN: give the run the default disposition.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
