"""Adaptive trial counts end to end on the CPU (src/eval/adaptive_trials.h): `kgym eval` stops a candidate's timed
calls once their median's 95 % interval is within the target, after the floor, and keeps every check of the timed
phase within that floor; --min-perf-trials 0 times every call. (The CPU's brackets are too noisy for 0.5 %: a loose
target makes the stop deterministic.)"""
import json
import os
import subprocess

from conftest import ROOT

REF = os.path.join(ROOT, "tests", "redteam", "refs", "linear_relu.py")
HONEST = os.path.join(ROOT, "tests", "redteam", "candidates", "honest_linear_relu.py")
CACHE = os.path.join(ROOT, "tests", "redteam", "candidates", "F_cache_data_ptr.py")


def run_eval(kgym, ref, kernel, *extra):
    p = subprocess.run([kgym, "eval", "--ref", ref, "--kernel", kernel, "--device", "cpu", "--warmup", "1", *extra],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout), p.stderr, None


def test_a_steady_candidate_stops_at_the_floor_with_every_check_run(kgym):
    r, _, _ = run_eval(kgym, REF, HONEST, "--perf-trials", "60", "--min-perf-trials", "8", "--perf-ci", "0.5")
    md = r["metadata"]
    assert r["outcome"] == "correct", r["outcome_detail"]
    # At 8 calls the interval is [min, max]: one slow call of a busy host keeps it going a little longer.
    n = md["timing_calls"]
    assert 8 <= n < 60 and md["timing_stopped"] == "interval", md
    lo, hi = md["timing_median_ci_ms"]
    assert lo <= r["kernel_runtime"] <= hi and md["timing_median_ci_rel"] <= 0.5
    assert r["timing"]["kernel"]["n"] == n
    # The checks of the timed phase all ran within those 8 calls: the three fresh sets and fetched outputs.
    assert len(md["timing_fresh_set_ms"]) == 3
    # (fetched outputs are kept by the worker and compared after the lock: timing_kept_calls)
    assert md.get("timing_kept_calls", 0) + md["timing_lock"]["hold"]["verified"] >= 2, md


def test_min_perf_trials_zero_times_every_call(kgym):
    r, _, _ = run_eval(kgym, REF, HONEST, "--perf-trials", "30", "--min-perf-trials", "0", "--perf-ci", "0.5")
    assert r["outcome"] == "correct"
    assert r["metadata"]["timing_calls"] == 30 and "timing_stopped" not in r["metadata"]


def test_a_cache_on_pointers_is_caught_when_timing_stops_early(kgym):
    # Its timed calls return stale outputs; the fetched ones within the floor see it.
    r, _, _ = run_eval(kgym, REF, CACHE, "--perf-trials", "60", "--min-perf-trials", "8", "--perf-ci", "0.5")
    assert r["outcome"] == "hacked" and "caching" in r["outcome_detail"], r["outcome_detail"]
