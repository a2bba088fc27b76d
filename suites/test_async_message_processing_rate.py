"""RFC 8456 §5.1.3 Asynchronous Message Processing Rate, maximum and loss-free (A.4.3; RFC 8455 2.3.1.3)."""

import pytest

from fixtures.async_ceiling import generator_bound
from fixtures.async_msgs import LOSS_FREE_RULE, SEARCH_METHOD, rate_search, trial_figures
from fixtures.async_suite import connected, parameters, preflight_or_skip
from fixtures.harness import TrialFailed, TrialOutcome

DEFINITION = (
    "APRn = Nrxn / Td, the PACKET_INs answered (first PACKET_OUT or FLOW_MOD matched to each) and received within "
    "Td, per second; Lrn = 1 − Nrxn'/Ntxn with Nrxn' the requests answered within the response timeout. One "
    "repetition is the RFC's search: " + SEARCH_METHOD + " " + LOSS_FREE_RULE)
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: PACKET_INs counted at the socket write, responses at the socket "
    "read (monotonic ns); offered rate = Ntx/Td as achieved, not as targeted")
LOSS_FREE_DEFINITION = (
    "Loss-Free Asynchronous Message Processing Rate: MAX(APRn) over the trials of the highest offered rate at which "
    "every trial was loss-free (" + LOSS_FREE_RULE + "), from the same searches as the maximum rate.")


@pytest.mark.rfc8456(section="5.1.3", category="performance", title="Maximum Asynchronous Message Processing Rate",
                     symbol="Maximum APR", unit="responses/s", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, derived=("test_async_message_processing_rate_loss_free",))
def test_async_message_processing_rate(benchmark_run, async_emulator, emulator_ceiling, controller, async_switches):
    em = async_emulator(async_switches)
    p = em.p
    run = benchmark_run.parameters(
        **parameters(em, controller), Td_s=p.duration, STEP=f"{p.rate_step:g} × APR at max offered",
        resolution=f"{p.rate_resolution:g} × rate", P_percent=p.tolerance * 100, max_trials_per_level=p.max_confirm,
        between_trials=f"until the controller has been silent for {p.rest:g} s (at most 120 s)")
    run.series("number of switches", async_switches)
    run.columns([("max_offered_rate", "Max offered rate (Ntx1/Td)"), ("loss_free_apr", "Loss-Free APR"),
                 ("resolution_rate", "Loss-free resolution (/s)"), ("maximum_confirmed", "Confirmed ±P")])
    run.context("preflight", preflight_or_skip(run, em, controller))
    try:
        ceiling = emulator_ceiling(async_switches, "rate")
    except Exception as exc:  # context, not the benchmark: say so and go on
        ceiling = None
        run.note(f"emulator ceiling not measured: {exc}")
    if ceiling:
        run.context("emulator_ceiling", ceiling)

    def trial(index):
        waits = []

        def rest():
            q = em.quiesce(p.rest)
            waits.append(q.waited_s)
            if not q.quiet:
                raise TrialFailed(f"the controller was still sending {q.waited_s:.0f} s after a trial: "
                                  "it did not return to normal operation (RFC 8456 §5.1.3 step 3)")

        with connected(em, controller):
            s = rate_search(lambda rate: trial_figures(em.run("max" if rate is None else "paced", p.duration, rate)),
                            p.rate_step, p.tolerance, p.max_confirm, p.rate_resolution, rest=rest)
        rows = [{"trial": r.trial, "mode": r.mode, "target_rate": r.target_rate, "offered_rate": r.offered_rate,
                 "apr": r.apr, "loss_ratio": r.loss_ratio, "loss_free": r.loss_free, "benchmark": r.benchmark,
                 "ntx": r.figures["ntx"], "nrx_in_td": r.figures["nrx_in_td"], "late": r.figures["late"],
                 "latency_median_ms": r.figures.get("latency_median_ms"),
                 "not_loss_free": r.figures.get("loss_free_reason")} for r in s["rows"]]
        if s["maximum"] is None:
            raise TrialFailed(s["reason"])
        details = {"search": rows, "maximum_apr": s["maximum"].apr, "maximum_confirmed": s["maximum_confirmed"],
                   "loss_free_apr": s["loss_free"].apr if s["loss_free"] else None,
                   "loss_free_confirmed": s["loss_free_confirmed"], "loss_free_reason": s["reason"],
                   "resolution_rate": s["resolution_rate"], "lossy_above": s["lossy_above"],
                   "max_offered_rate": s["max_offered_rate"], "step_rate": s["step_rate"],
                   "generator_bound": generator_bound(s["maximum"].apr, ceiling), "quiesce_waits_s": waits}
        notes = []
        if not s["maximum_confirmed"]:
            notes.append(f"maximum level not confirmed within ±{p.tolerance:.0%} in {p.max_confirm} trials")
        if details["generator_bound"]:
            notes.append("generator-bound: within 80% of the emulator's response ceiling")
        return TrialOutcome(value=s["maximum"].apr, details=details, note="; ".join(notes))

    entry = run.trials(trial)
    bound = [t["index"] for t in entry["trials"] if t.get("ok") and t["details"]["generator_bound"]]
    if bound:
        run.note(f"GENERATOR-BOUND in repetition(s) {bound}: the maximum rate is within 80% of the emulator's own "
                 f"response-processing ceiling ({ceiling['response_rate']:.0f}/s); add --emulator-shards or "
                 "hosts before reading it as the controller's")
    loss_free = run.derived(
        benchmark="test_async_message_processing_rate_loss_free", title="Loss-Free Asynchronous Message Processing "
        "Rate", symbol="Loss-Free APR", definition=LOSS_FREE_DEFINITION,
        pick=lambda t: (t["details"]["loss_free_apr"], t["details"]["loss_free_reason"]))

    def plausible(e):
        for t in e["trials"]:
            if t.get("ok") and t["details"]["loss_free_apr"] is not None:
                assert t["details"]["loss_free_apr"] <= t["value"], "the loss-free rate exceeds the maximum"

    run.finish(plausible)
    loss_free.finish()
