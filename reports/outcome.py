"""The one outcome rule: passed, failed, error or skipped, for a benchmark entry and for a whole run.

Every renderer (JUnit, the terminal headline, report.md) and the exit status
of ``python -m reports summary`` call ``judge``, so they cannot disagree.  The
rule reads only the entry's recorded data; it never looks at the clock or
the controller.
"""

from __future__ import annotations

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
STATUSES = (PASSED, FAILED, ERROR, SKIPPED)

DID_NOT_FINISH = "did not finish: the run stopped before this benchmark concluded (killed, or still running)"
REASONS_SHOWN = 3  # distinct trial reasons quoted in a failure reason

RULE = ("Each benchmark's outcome follows one rule, applied in this order: a benchmark recorded as skipped is "
        "SKIPPED with its reason; one still recorded as running did not finish (the run was killed, or is still "
        "going) and is an ERROR; one interrupted (Ctrl-C) or recorded as an error is an ERROR with its reason; "
        "one without a successful measured trial FAILED; one whose verdict is FAIL FAILED; one with more failed "
        "measured trials than it allows (max_failed_trials, 0 unless stated) FAILED; one recorded as failed "
        "for any other reason FAILED with that reason; every other benchmark PASSED.  Warm-up trials never "
        "count.  The run passes only when every benchmark passed or was skipped, it was not stopped (Ctrl-C, "
        "SIGTERM, SIGHUP) and, with --history, it was added to its history store; any ERROR, a stop or a run "
        "the store did not take makes it an error, otherwise any FAILED makes it failed.")


def _reasons(trials: list) -> str:
    """The distinct reasons of ``trials``, first ones first, at most REASONS_SHOWN of them."""
    seen = list(dict.fromkeys(t.get("reason") or "no reason recorded" for t in trials))
    text = "; ".join(seen[:REASONS_SHOWN])
    if len(seen) > REASONS_SHOWN:
        text += f"; and {len(seen) - REASONS_SHOWN} other reason(s)"
    return text


def is_success(trial: dict) -> bool:
    """A measured trial that counts: ok, with a value."""
    return bool(trial.get("ok")) and trial.get("value") is not None


def judge(entry: dict) -> tuple[str, str]:
    """``(status, reason)`` of one benchmark entry; status is one of STATUSES."""
    recorded = entry.get("outcome") or {}
    status, reason = recorded.get("status"), recorded.get("reason") or ""
    if status == SKIPPED:
        return SKIPPED, reason or "skipped (no reason recorded)"
    if status == "running":
        return ERROR, DID_NOT_FINISH
    if status == "interrupted":
        return ERROR, f"interrupted: {reason or 'no reason recorded'}"
    if status == ERROR:
        return ERROR, reason or "error (no reason recorded)"
    trials = entry.get("trials") or []
    ok = [t for t in trials if is_success(t)]
    failed = [t for t in trials if not is_success(t)]
    if not ok:
        return FAILED, "no successful trial: " + (_reasons(failed) if failed else "no trial was run")
    verdict = entry.get("verdict") or {}
    if verdict.get("result") == "FAIL":
        text = f"verdict FAIL ({verdict.get('test', 'test not recorded')})"
        return FAILED, text + (f": {verdict['note']}" if verdict.get("note") else "")
    allowed = entry.get("max_failed_trials", 0)
    if len(failed) > allowed:
        return FAILED, f"{len(failed)} of {len(trials)} trials failed: {_reasons(failed)}"
    if status == FAILED:
        return FAILED, reason or "failed (no reason recorded)"
    text = f"{len(ok)} of {len(trials)} trials succeeded"
    if failed:
        text += f" ({allowed} failure(s) allowed)"
    return PASSED, text + (f"; verdict {verdict['result']}" if verdict.get("result") else "; no verdict")


def concluded(entry: dict) -> dict:
    """The ``outcome`` for the harness to record once a benchmark's trials are done: a recorded skipped,
    interrupted or error outcome stands; otherwise the rule's status and reason, so that pytest's
    assertion on the recorded status and the reports agree."""
    recorded = entry.get("outcome") or {}
    if recorded.get("status") in (SKIPPED, "interrupted", ERROR):
        return dict(recorded)
    if recorded.get("status") in (None, "running"):
        entry = {**entry, "outcome": {"status": PASSED}}
    status, reason = judge(entry)
    return {"status": status, "reason": reason}


def counts(data: dict) -> dict:
    """How many benchmarks of ``data`` have each status."""
    out = dict.fromkeys(STATUSES, 0)
    for entry in data.get("benchmarks", []):
        out[judge(entry)[0]] += 1
    return out


def stopped(data: dict) -> str:
    """Why the run was stopped (``run.interrupted``: Ctrl-C, SIGTERM, SIGHUP), or ""."""
    return (data.get("run") or {}).get("interrupted") or ""


def history_failure(data: dict) -> str:
    """Why the run could not be added to its ``--history`` store (``run.history_error``), or ""."""
    return (data.get("run") or {}).get("history_error") or ""


def run_status(data: dict) -> str:
    """The whole run: ``error`` if it was stopped or any benchmark is an error, else ``failed`` if any failed, else
    ``passed`` (every benchmark passed or was skipped; also for a run without benchmarks).  A run stopped before
    its first benchmark began (while a controller boots, say) has no benchmark to say so: it is an error all the
    same.  So is a run that could not be added to its history store: what it measured is in its files, not in the
    history the user asked for."""
    n = counts(data)
    return ERROR if n[ERROR] or stopped(data) or history_failure(data) else FAILED if n[FAILED] else PASSED


def run_line(data: dict) -> str:
    """One line for the whole run, counting benchmarks (the rate test reports two), e.g.
    ``run FAILED, 5 benchmarks: 3 passed, 1 failed, 0 error, 1 skipped``, and why it was stopped if it was."""
    n = counts(data)
    total = sum(n[s] for s in STATUSES)
    why, lost = stopped(data), history_failure(data)
    return (f"run {run_status(data).upper()}, {total} benchmark{'' if total == 1 else 's'}: "
            + ", ".join(f"{n[s]} {s}" for s in STATUSES) + (f"; interrupted: {why}" if why else "")
            + (f"; not added to history {lost}" if lost else ""))
