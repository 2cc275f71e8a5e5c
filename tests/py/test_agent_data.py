"""`kgym data convert` and the first-turn prompt as the CLI renders it."""
import json
import os
import subprocess

import pytest

KGYM = os.environ.get("KGYM_BIN", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not (KGYM and os.path.exists(KGYM)), reason="KGYM_BIN not built")

try:
    import pyarrow  # noqa: F401
    HAVE_PYARROW = True
except ImportError:
    HAVE_PYARROW = False


def test_print_prompt_matches_model_card_byte_for_byte():
    testdata = os.path.join(ROOT, "src/agent/testdata")
    out = subprocess.run([KGYM, "agent", "--tasks", os.path.join(testdata, "model_card_ref_code.py"),
                          "--print-prompt"], capture_output=True, check=True).stdout
    with open(os.path.join(testdata, "model_card_prompt.txt"), "rb") as f:
        assert out == f.read()


def test_convert_tasks_folder(tmp_path):
    out = tmp_path / "tasks.jsonl"
    subprocess.run([KGYM, "data", "convert", os.path.join(ROOT, "tasks"), "--out", str(out)], check=True,
                   capture_output=True)
    rows = [json.loads(l) for l in open(out)]
    refs = sorted(f"level{l[-1]}/{n[:-3]}" for l in ("level1", "level2", "level3")
                  for n in os.listdir(os.path.join(ROOT, "tasks", l)) if n.endswith(".py") and not n.startswith("_"))
    assert sorted(r["task_id"] for r in rows) == refs  # solutions/ and helper scripts are not tasks
    relu = next(r for r in rows if r["task_id"] == "level1/relu")
    assert relu["level"] == "1" and "class Model" in relu["reference_code"] and relu["entry_point"] == "Model"


def drkernel_rows():
    return [{"data_source": "kernelbench_level2_validation", "ability": "kernel_optimization",
             "prompt": [{"role": "user", "content": f"stored prompt {i}"}],
             "reward_model": {"ground_truth": f"class Model:\n    pass  # {i}\n", "style": "rule"},
             "extra_info": {"difficulty": None, "name": f"{i}_Task", "problem_id": i}} for i in (1, 2)]


def test_convert_drkernel_jsonl_rows(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in drkernel_rows()))
    out = tmp_path / "tasks.jsonl"
    subprocess.run([KGYM, "data", "convert", str(src), "--out", str(out), "--task-level", "2"], check=True,
                   capture_output=True)
    rows = [json.loads(l) for l in open(out)]
    assert [r["problem_id"] for r in rows] == [1, 2]
    assert rows[0]["prompt"] == [{"role": "user", "content": "stored prompt 1"}]
    assert rows[1]["reference_code"].endswith("# 2\n") and rows[1]["level"] == "2"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "x"}\n')
    res = subprocess.run([KGYM, "data", "convert", str(bad), "--out", str(out)], capture_output=True, text=True)
    assert res.returncode != 0 and "bad.jsonl:1" in res.stderr and "reference_code" in res.stderr


def _no_pythonpath():
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _system_python_has_pyarrow():
    return subprocess.run(["/usr/bin/python3", "-c", "import pyarrow"], capture_output=True,
                          env=_no_pythonpath()).returncode == 0


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3") or _system_python_has_pyarrow(),
                    reason="Debian's python3 has pyarrow of its own")
def test_parquet_without_pyarrow_is_a_clear_error(tmp_path):
    src = tmp_path / "data.parquet"
    src.write_bytes(b"PAR1 not really")
    env = dict(_no_pythonpath(), KGYM_TRAIN_PKGS=str(tmp_path / "no-packages-here"))  # hide setup.sh's pyarrow
    res = subprocess.run([KGYM, "data", "convert", str(src), "--out", str(tmp_path / "o.jsonl"),
                          "--python", "/usr/bin/python3"], capture_output=True, text=True, env=env)
    assert res.returncode == 2
    assert "pyarrow" in res.stderr and "setup.sh" in res.stderr and "--python" in res.stderr


@pytest.mark.skipif(not HAVE_PYARROW, reason="pyarrow is not importable")
def test_parquet_drkernel_schema(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    src = tmp_path / "validation.parquet"
    pq.write_table(pa.Table.from_pylist(drkernel_rows()), src)
    out = tmp_path / "tasks.jsonl"
    import sys
    subprocess.run([KGYM, "data", "convert", str(src), "--out", str(out), "--python", sys.executable],
                   check=True, capture_output=True)
    rows = [json.loads(l) for l in open(out)]
    assert [r["name"] for r in rows] == ["1_Task", "2_Task"]
    assert rows[0]["prompt"][0]["content"] == "stored prompt 1"
