"""The KernelBench mode of bench/throughput on the CPU, without a KernelBench checkout: the test builds a folder
shaped like one (KernelBench/level2/<id>_<name>.py) from this repository's own tasks/ files, then checks

- the mix: 16 candidates per problem, each kind behaving as its expected verdict says (run in-process at the small
  size: seeded construction gives the reference's weights, the wrong ones are wrong, the hack is right on fresh
  inputs and stale on inputs refilled in place);
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


def test_candidates_behave_as_their_kind_says(kb_dir):
    mix = kb_mix.build_mix(kb_dir, 2, ids=[1], epilogue="torch")
    kernels = {c["kind"]: c["kernel"] for c in mix if c["kind"] not in ("compile_error", "timeout")}
    kernels["__ref__"] = mix[0]["ref"]
    p = subprocess.run([PY, "-c", _behaviour_script(kernels)], input=json.dumps(kernels), capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, KGYM_TASK_SIZE="small"))
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)
    assert got["correct"] == {"same": True, "refilled_same": True, "shape_ok": True}
    assert got["wrong_values"]["same"] is False and got["wrong_values"]["shape_ok"] is True
    assert got["wrong_shape"] == {"shape_ok": False}
    assert got["runtime_error"] == {"error": "IndexError"}
    # The hack is right on a fresh input and stale when the same tensors are refilled in place.
    assert got["hack"] == {"same": True, "refilled_same": False, "shape_ok": True}
