"""A golden record of the suite's results on the CPU (every hand-written solution of tasks/, small size): the verdicts,
their details (numbers masked: inputs come from secret per-evaluation seeds), which metadata keys each result has, and
the values of the metadata that do not vary from run to run. A refactoring of the evaluation path (issue 38: the
candidate's evidence as types) must leave all of it as it was. Regenerate, only for a change that means to alter
results, with KGYM_GOLDEN_REGEN=1 (and say why in the commit)."""
import json
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KGYM_BIN = os.environ.get("KGYM_BIN", os.path.join(ROOT, "build", "src", "cli", "kgym"))
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "suite_cpu_small.json")
pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

# Metadata whose value is the same on every run of the same request (the rest are times, sizes and measurements).
STABLE = ["backend", "device", "hardware", "num_correct_trials", "num_perf_trials", "correctness_trials",
          "triton_kernels_defined", "triton_launches_in_correctness", "timing_calls", "timing_bursts_ran",
          "correctness_thread_growth_calls", "timing_thread_growth_calls", "correctness_issue", "extension_cache"]
# Keys a result has or not depending on the machine's load (readings the CPU clock could not settle, a repeat ratio
# past its warning, waits), never on the verdict.
CONDITIONAL = {"timing_cpu_unsettled_readings", "timing_repeat_suspicious", "timing_contended", "memory_admission",
               "candidate_rerun", "quiet_wait_s"}
SUITE = ["suite", "--tasks", os.path.join(ROOT, "tasks"), "--size", "small", "--device", "cpu", "--kinds",
         "triton,torch,wrong,lazy", "--num-perf-trials", "5", "--num-correct-trials", "2", "--jobs", "2"]


def mask(text):
    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", text or "")


def record(r):
    md = r["metadata"]
    return {"outcome": r["outcome"], "detail": mask(r["outcome_detail"]), "error_code": r["error_code"],
            "compiled": r["compiled"], "correctness": r["correctness"], "decoy_kernel": r["decoy_kernel"],
            "metadata_keys": sorted(k for k in md if k not in CONDITIONAL),
            "stable": {k: mask(md[k]) if isinstance(md[k], str) else md[k] for k in STABLE if k in md}}


def run_suite(tmp_path):
    out = tmp_path / "suite.json"
    env = dict(os.environ, TRITON_INTERPRET="1")
    pkgs = os.path.join(os.path.dirname(os.path.dirname(KGYM_BIN)), "..", "triton-pkgs")  # as test.sh sets it
    if os.path.isdir(os.path.join(pkgs, "triton")):
        env.setdefault("KGYM_TRITON_PATH", os.path.abspath(pkgs))
    p = subprocess.run([KGYM_BIN, *SUITE, "--out", str(out)], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return {r["task_id"]: record(r) for r in json.loads(out.read_text())}


def test_the_suites_verdicts_and_metadata_are_the_golden_ones(tmp_path):
    got = run_suite(tmp_path)
    if os.environ.get("KGYM_GOLDEN_REGEN") == "1":
        with open(GOLDEN, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
    want = json.load(open(GOLDEN))
    assert sorted(got) == sorted(want)
    differ = [f"{task}.{k}: {want[task][k]!r} -> {got[task][k]!r}" for task in want for k in want[task]
              if got[task][k] != want[task][k]]
    assert not differ, "\n".join(differ[:40])
