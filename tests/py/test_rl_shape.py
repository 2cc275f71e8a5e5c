"""bench/train/rl_shape.py's CPU rehearsal, as CI can run it: the RL shape's JSON carries every figure issue 41 names,
each prompt was prefilled once for its whole group, and the bound's counts are the engine's own."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = os.environ.get("KGYM_PYTHON", sys.executable)


def test_rl_shape_rehearsal_writes_its_figures(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    probe = subprocess.run([PY, "-c", "import torch"], env=env, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no torch for " + PY)
    p = subprocess.run([PY, os.path.join(ROOT, "bench", "train", "rl_shape.py"), "--out", str(tmp_path), "--rehearse"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads((tmp_path / "rl_shape.json").read_text())
    for key in ("requests", "n", "prompt_tokens", "kv_gb", "slots", "tokens_per_s", "fraction_of_bound",
                "prefill_tokens", "distinct_prompt_tokens", "commit", "date", "machine", "gpu", "command"):
        assert key in d, key
    assert d["requests"] == d["prompts"] * d["n"] and d["n"] > 1
    assert d["prefill_tokens"] == d["distinct_prompt_tokens"] == d["prompts"] * d["prompt_tokens"]
    assert d["response_tokens"] == d["engine_stats"]["tokens"]
    assert 0 < d["fraction_of_bound_shared_once"] < d["fraction_of_bound"]  # shared pages counted once read less
    assert d["live_peak"] > d["slots"] // 2
