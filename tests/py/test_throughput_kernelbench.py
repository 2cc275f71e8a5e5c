"""The KernelBench mode of bench/throughput on the CPU, without a KernelBench checkout: the test builds a folder
shaped like one (KernelBench/level2/<id>_<name>.py) from this repository's own tasks/ files, then checks

- the mix: 16 candidates per problem, each kind behaving as its expected verdict says (run in-process at the small
  size: seeded construction gives the reference's weights, the wrong ones are wrong, the hack is right on fresh
  inputs and stale on inputs refilled in place);
- the verdict mapping of KernelBench's and KernelGYM's result dicts, and the agreement table;
- the dry run end to end: kgym serve on the CPU judges all 16 candidates of a problem as expected, and the JSON
  carries records, summaries and the agreement table.
KernelBench's harness needs CUDA and KernelGYM's server needs packages CI lacks: both run on the GPU only
(bench/throughput/run_kernelbench_h200.sh)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench", "throughput")
sys.path.insert(0, BENCH)
import kb_mix  # noqa: E402
import kb_report  # noqa: E402
import kb_runners  # noqa: E402
import kernelbench_mode  # noqa: E402

PY = os.environ.get("KGYM_PYTHON", "/usr/bin/python3")
TASKS = {1: "linear_bias_gelu", 2: "add_layernorm"}


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    level = root / "KernelBench" / "level2"
    level.mkdir(parents=True)
    for pid, name in TASKS.items():
        shutil.copy(os.path.join(ROOT, "tasks", "level2", name + ".py"), level / ("%d_%s.py" % (pid, name)))
    (level / "notes.txt").write_text("not a problem")
    return str(root)


def test_mix_has_16_candidates_per_problem_with_expected_verdicts(kb_dir):
    mix = kb_mix.build_mix(kb_dir, 2, epilogue="torch")
    assert [c["problem"] for c in mix[::16]] == ["1_linear_bias_gelu", "2_add_layernorm"]
    assert len(mix) == 32 and len({c["id"] for c in mix}) == 32
    first = mix[:16]
    kinds = [c["kind"] for c in first]
    assert kinds.count("correct") == 10 and set(kinds) == set(kb_mix.KINDS)
    assert sum(c["expected"] != "correct" for c in first) == 6
    assert {c["kind"]: c["expected"] for c in first}["hack"] == "hacked"
    assert all(c["timeout_s"] == 15 for c in first if c["kind"] == "timeout")
    for c in mix:
        if c["kind"] == "compile_error":
            with pytest.raises(SyntaxError):
                compile(c["kernel"], c["id"], "exec")
        else:
            compile(c["kernel"], c["id"], "exec")
    # Every correct candidate has its own Triton kernel name (no compile cache shared between candidates).
    triton = kb_mix.build_mix(kb_dir, 2, ids=[1], epilogue="triton")
    names = [c["kernel"].split("def _epilogue_copy_")[1].split("(")[0] for c in triton]
    assert len(set(names)) == 16
    with pytest.raises(ValueError):
        kb_mix.build_mix(kb_dir, 2, ids=[7])


def _behaviour_script(kernels):
    """A script that builds Model and each ModelNew from one seed at the small size and reports what each does."""
    return r'''
import json, os, sys, torch
os.environ["KGYM_TASK_SIZE"] = "small"
kernels = json.loads(sys.stdin.read())
ref = {}
exec(kernels.pop("__ref__"), ref)
out = {}
for kind, code in kernels.items():
    ns = {}
    exec(code, ns)
    torch.manual_seed(0); model = ref["Model"](*ref["get_init_inputs"]())
    torch.manual_seed(0); cand = ns["ModelNew"](*ref["get_init_inputs"]())
    xs = ref["get_inputs"]()
    try:
        with torch.no_grad():
            want, got = model(*xs), cand(*xs)
            if got.shape != want.shape:
                out[kind] = {"shape_ok": False}
                continue
            same = torch.allclose(got, want, atol=1e-5, rtol=1e-5)
            for x in xs:                       # refilled in place: same addresses, new values
                x.copy_(torch.randn_like(x))
            fresh = torch.allclose(cand(*xs), model(*xs), atol=1e-5, rtol=1e-5)
        out[kind] = {"same": bool(same), "refilled_same": bool(fresh), "shape_ok": True}
    except Exception as e:
        out[kind] = {"error": type(e).__name__}
print(json.dumps(out))
'''


def _triton_env():
    """Environment running Triton kernels in Triton's CPU interpreter (Triton from $KGYM_TRITON_PATH), or None."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=os.environ.get("KGYM_TRITON_PATH", ""))
    ok = subprocess.run([PY, "-c", "import triton.language"], env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode == 0
    return env if ok else None


@pytest.mark.parametrize("epilogue", ["torch", "triton"])
def test_candidates_behave_as_their_kind_says(kb_dir, epilogue):
    env = dict(os.environ) if epilogue == "torch" else _triton_env()
    if env is None:
        pytest.skip("no Triton for the interpreter (KGYM_TRITON_PATH)")
    mix = kb_mix.build_mix(kb_dir, 2, ids=[1], epilogue=epilogue)
    kernels = {c["kind"]: c["kernel"] for c in mix if c["kind"] not in ("compile_error", "timeout")}
    kernels["__ref__"] = mix[0]["ref"]
    p = subprocess.run([PY, "-c", _behaviour_script(kernels)], input=json.dumps(kernels), capture_output=True,
                       text=True, timeout=300, env=dict(env, KGYM_TASK_SIZE="small"))
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)
    assert got["correct"] == {"same": True, "refilled_same": True, "shape_ok": True}
    assert got["wrong_values"]["same"] is False and got["wrong_values"]["shape_ok"] is True
    assert got["wrong_shape"] == {"shape_ok": False}
    # torch: an index past the end; Triton: the launch misses an argument.
    assert got["runtime_error"] == {"error": "IndexError" if epilogue == "torch" else "TypeError"}
    # The hack is right on a fresh input and stale when the same tensors are refilled in place.
    assert got["hack"] == {"same": True, "refilled_same": False, "shape_ok": True}


def test_kernelbench_and_kernelgym_results_map_to_verdicts():
    kb = kb_runners.kernelbench_verdict
    assert kb(None, timed_out=True)[0] == "timeout"
    assert kb(None)[0] == "error"
    assert kb({"compiled": False, "correctness": False, "metadata": {"compilation_error": "SyntaxError"}})[0] == \
        "compile_error"
    assert kb({"compiled": True, "correctness": False, "metadata": {"runtime_error": "TypeError"}})[0] == \
        "runtime_error"
    assert kb({"compiled": True, "correctness": False, "metadata": {"correctness_issue": "Output shape mismatch"}})[0] \
        == "incorrect"
    v, f = kb({"compiled": True, "correctness": True, "runtime": 0.5, "ref_runtime": 10.0,
               "metadata": {"excessive_speedup": True}})
    assert v == "correct" and f["speedup"] == 20.0 and f["flags"] == ["excessive_speedup"]
    assert kb({"compiled": False, "correctness": False, "metadata": {"other_error": "boom"}})[0] == "error"
    kg = kb_runners.kernelgym_verdict
    assert kg({"status": "completed", "compiled": True, "correctness": True, "speedup": 1.0})[0] == "correct"
    assert kg({"status": "failed", "compiled": False, "error_code": "COMPILATION_ERROR"})[0] == "compile_error"
    assert kg({"status": "failed", "compiled": False, "error_code": "TIMEOUT_ERROR"})[0] == "timeout"
    assert kg({"status": "completed", "compiled": True, "correctness": False, "error_code": "RUNTIME_ERROR"})[0] == \
        "runtime_error"
    assert kg({"status": "completed", "compiled": True, "correctness": False})[0] == "incorrect"
    assert kg({"status": "completed", "compiled": True, "correctness": False, "decoy_kernel": True})[0] == "hacked"


def _run(runner, mix, verdicts):
    recs = []
    for c in mix:
        v = verdicts.get(c["kind"], c["expected"])
        recs.append(kb_runners.record(runner, {}, c, completed=True, verdict=v, passed=v == "correct",
                                      kernel_gpu_ms=1.0, reference_gpu_ms=2.0, wall_s=1.0))
    return {"runner": runner, "setting": {}, "wall_s": 10.0, "records": recs}


def test_a_capped_runner_takes_candidates_across_the_problems_in_turn(kb_dir):
    mix = kb_mix.build_mix(kb_dir, 2, epilogue="torch")
    four = kernelbench_mode.capped(mix, 4)
    assert [c["id"] for c in four] == [mix[0]["id"], mix[16]["id"], mix[1]["id"], mix[17]["id"]]
    assert kernelbench_mode.capped(mix, None) is mix and kernelbench_mode.capped(mix, 99) is mix
    assert len(kernelbench_mode.capped(mix, 31)) == 31


def test_agreement_lists_who_was_fooled(kb_dir):
    mix = kb_mix.build_mix(kb_dir, 2, ids=[1], epilogue="torch")
    runs = [_run("kgym", mix, {}), _run("kernelbench", mix, {"hack": "correct"}),
            _run("kernelgym", mix, {"hack": "correct", "wrong_shape": "correct"})]
    ag = kb_report.agreement(runs, mix)
    assert ag["compared"] == 16 and ag["agree_on_correctness"] == 14
    why = {(d["runner"], d["kind"]): d["why"] for d in ag["disagreements"]}
    assert why == {("kernelbench", "hack"): "fooled (expected)", ("kernelgym", "hack"): "fooled (expected)",
                   ("kernelgym", "wrong_shape"): "fooled"}
    assert ag["matches_expected_verdict"] == {"kgym": 16, "kernelbench": 15, "kernelgym": 14}
    # Required work: the reference once per problem plus every passed candidate, (C + P) calls each.
    s = kb_report.summarise(runs[0], 105, kb_report.problem_times(runs[0]["records"]))
    assert s["required_gpu_s_own"] == pytest.approx(105 * (2.0 + 10 * 1.0) / 1000)
    assert s["evals_per_gpu_hour"] == pytest.approx(16 / 10.0 * 3600)


def test_lock_use_counts_each_reference_once(kb_dir):
    mix = kb_mix.build_mix(kb_dir, 2, ids=[1], epilogue="torch")[:3]
    run = _run("kgym", mix, {})
    for i, r in enumerate(run["records"]):
        r["timing_lock"] = {"acquisitions": 1, "wait_s": 0.5, "hold_s": 1.0, "hold": {"calls_s": 0.75, "fetch_s": 0.25}}
        # Every evaluation repeats its reference's notes; the first two share one reference.
        r["reference_cache_key"] = "k1" if i < 2 else "k2"
        r["reference_timing_lock"] = {"acquisitions": 1, "wait_s": 0.0, "hold_s": 2.0 if i < 2 else 3.0, "hold": {}}
    lk = kb_report.lock_use(run["records"], 10.0)
    assert lk["candidate"]["acquisitions"] == 3 and lk["candidate"]["hold_s"] == pytest.approx(3.0)
    assert lk["candidate"]["hold_parts_s"] == {"calls_s": pytest.approx(2.25), "fetch_s": pytest.approx(0.75)}
    assert lk["reference"]["runs"] == 2 and lk["reference"]["hold_s"] == pytest.approx(5.0)
    assert lk["hold_s"] == pytest.approx(8.0) and lk["wait_s"] == pytest.approx(1.5)
    assert lk["occupancy"] == pytest.approx(0.8)
    assert "occupancy_in_span" not in lk  # no wall-clock times recorded
    for i, r in enumerate(run["records"]):  # with them: the span from the first acquisition to the last release
        r["timing_lock"].update(first_at=100.0 + 2 * i, last_at=101.0 + 2 * i)
        r["reference_timing_lock"].update(first_at=90.0, last_at=92.0)
    lk = kb_report.lock_use(run["records"], 10.0)
    assert lk["held_span_s"] == pytest.approx(15.0) and lk["occupancy_in_span"] == pytest.approx(8.0 / 15.0)
    assert lk["reference"]["made_again"] == []
    run["records"][2]["reference_cache_key"] = "k1"
    run["records"][2]["reference_timing_lock"]["first_at"] = 95.0  # k1 computed again (other times): both runs count
    lk = kb_report.lock_use(run["records"], 10.0)
    assert lk["reference"]["runs"] == 2 and lk["reference"]["made_again"] == ["k1"]
    assert "computed more than once in the kgym run: 1 (k1)" in kb_report.table([kb_report.summarise(run, 105, None)])
    run["records"][2]["reference_timing_lock"]["first_at"] = 90.0  # the same run's notes repeated: once
    assert kb_report.lock_use(run["records"], 10.0)["reference"]["runs"] == 1
    assert kb_report.lock_use(_run("kernelbench", mix, {})["records"], 10.0) is None
    assert "timing lock hold of kgym" in kb_report.table([kb_report.summarise(run, 105, None)])


def test_level1_figure_is_wall_over_pure_gpu_work(kb_dir):
    mix = kb_mix.correct_only(kb_mix.build_mix(kb_dir, 2, ids=[1], epilogue="torch"))
    run = _run("kgym", mix, {})
    for r in run["records"]:
        r["phase_s"] = {"evaluation": 0.6}
    fig = kb_report.level1_figure(run, 5, 100)
    # Per evaluation: (5 + 100) x 1 ms of candidate + 5 x 2 ms of reference = 0.115 s of GPU work in 0.6 s.
    assert len(fig["evaluations"]) == 10 and fig["ratio_median"] == pytest.approx(0.6 / 0.115)
    # The whole run: 10 s of wall over the reference once (105 x 2 ms) and 10 candidates (105 x 1 ms each).
    assert fig["aggregate_ratio"] == pytest.approx(10.0 / (105 * 0.002 + 10 * 105 * 0.001))


def test_kgym_runner_names_give_slots_and_serve_options():
    assert kb_runners.kgym_setting("kgym:16", 4) == {"slots": 16}
    assert kb_runners.kgym_setting("kgym", 4) == {"slots": 4}
    assert kb_runners.kgym_setting("kgym:8:spares0", 4) == {"slots": 8, "spare_workers": 0}
    assert kb_runners.kgym_setting("kgym:8:lookahead0:spares1", 4) == {
        "slots": 8, "reference_lookahead": 0, "spare_workers": 1}
    assert kb_runners.kgym_tag({"slots": 8, "reference_lookahead": 0, "spare_workers": 1}) == "8-spares1-lookahead0"
    assert kb_runners.kgym_setting("kgym:16:quiet1", 4) == {"slots": 16, "quiet_timing": 1}
    # Adaptive trials off (every perf trial runs) and the neighbours left running during holds: the A/B of issue 32.
    assert kb_runners.kgym_setting("kgym:16:minperf0:nofreeze1", 4) == {"slots": 16, "min_perf_trials": 0,
                                                                        "no_freeze": 1}
    for bad in ("kgym:8:fast", "kgym:8:spares", "kgym:8:lookaheadx"):
        with pytest.raises(ValueError):
            kb_runners.kgym_setting(bad, 4)
    assert kb_runners.failed_run("kgym:8:spares2", [], "x")["setting"] == {"slots": 8, "spare_workers": 2}


def test_cpu_dry_run_judges_every_kind_as_expected(kgym, kb_dir, tmp_path):
    out = tmp_path / "kb.json"
    cmd = [sys.executable, os.path.join(BENCH, "run_throughput.py"), "--bin", kgym, "--kernelbench", kb_dir,
           "--level", "2", "--problems", "1", "--device", "cpu", "--size", "small", "--runners", "kgym:2,kgym:4:spares2:lookahead0",
           "--perf-trials", "5", "--timeout-candidate-s", "10", "--clients", "16", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    d = json.loads(out.read_text())
    assert d["candidates"] == 16 and d["problems"] == ["1_linear_bias_gelu"]
    assert [s["setting"] for s in d["summaries"]] == [
        {"slots": 2}, {"slots": 4, "spare_workers": 2, "reference_lookahead": 0}]
    assert "--spare-workers 2 --reference-lookahead 0" in d["runs"][1]["command"]
    assert "--spare-workers" not in d["runs"][0]["command"]
    for run in d["runs"]:
        wrong = [(r["id"], r["verdict"], r["detail"]) for r in run["records"] if r["verdict"] != r["expected"]]
        assert not wrong, wrong
        assert all(r["completed"] for r in run["records"])
    s = d["summaries"][0]
    assert s["completed"] == 16 and s["evals_per_gpu_hour"] > 0
    assert {"reference", "load", "correctness", "timing"} <= set(s["phase_s_sum"])
    # The timing lock: every candidate timed took it once (the hack, stopped by its wrong result, too).
    lk = s["timing_lock"]
    assert lk["candidate"]["acquisitions"] == 11 and lk["reference"]["runs"] == 1  # 10 correct + 1 hack per 16
    assert {"calls_s", "arm_s", "bracket_s", "watch_s", "fetch_s", "verify_s", "null_s", "bursts_s"} <= set(
        lk["candidate"]["hold_parts_s"])
    parts = lk["candidate"]["hold_parts_s"]  # the calls' parts add up to no more than the calls
    assert 0 < parts["bracket_s"] and parts["arm_s"] + parts["bracket_s"] + parts["watch_s"] <= parts["calls_s"] * 1.001
    assert 0 < lk["occupancy"] <= 1
    # Holds never overlap (one lock), so over the span they lie in they cover more of it, never more than all of it.
    assert lk["occupancy"] <= lk["occupancy_in_span"] <= 1 + 1e-6
    assert d["agreement"]["matches_expected_verdict"] == {"kgym": 16}
    assert "correctness verdicts agree" in p.stdout
