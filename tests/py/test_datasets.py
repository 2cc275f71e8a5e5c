"""The seeds' three dataset schemas, read as a new user would: parquet files built here in the documented layouts of
hkust-nlp/drkernel-validation-data, drkernel-rl-data and drkernel-coldstart-8k (shared/research/drkernel.md §5.2),
converted or trained on by the kgym binary with no KGYM_* variable set and a torch-less python3 first on PATH
(pyarrow comes from setup.sh's build/train-pkgs). Every bad input is named by its own file, row and field, as the
user's error: never "internal error", never a traceback."""
import json
import os
import subprocess

import pytest

from train_util import ROOT, TINY, need_learner_packages
from user_env import user_env

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
KGYM = os.environ.get("KGYM_BIN") or os.path.join(ROOT, "build", "src", "cli", "kgym")
pytestmark = pytest.mark.skipif(not os.path.exists(KGYM), reason="kgym not built")

REF = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n" \
      "        return torch.relu(x)  # {}\n"


def validation_rows():
    return [{"data_source": "kernelbench_level2_validation", "ability": "kernel_optimization",
             "prompt": [{"role": "user", "content": f"optimise task {i}"}],
             "reward_model": {"ground_truth": REF.format(i), "style": "rule"},
             "extra_info": {"difficulty": None, "name": f"{i}_Conv2d_ReLU", "problem_id": i}} for i in (1, 2, 3)]


def rl_rows():
    return [{"data_source": "cuda_llm", "ability": "kernel_optimization",
             "prompt": [{"role": "user", "content": f"make module {i} fast"}],
             "reward_model": {"ground_truth": REF.format(i), "style": "rule"},
             "extra_info": {"entry_point": "Model", "level": "1", "module_name": f"Mod{i}", "ops": "['relu']",
                            "original_prompt": "...", "repo_name": "some/repo", "type": "module", "uuid": f"u-{i}"}}
            for i in (1, 2, 3)]


def coldstart_rows(n=4):
    rows = []
    for i in range(n):
        msgs = []
        for turn in range(5):
            msgs.append({"role": "user", "content": f"task {i} turn {turn}: make it faster"})
            msgs.append({"role": "assistant", "content": f"class ModelNew:  # answer {i}.{turn}"})
        rows.append({"messages": msgs, "uuid": f"c-{i}", "entry_point": "Model", "repo_name": "r", "module_name": "m",
                     "final_speedup": 1.5, "num_rounds": 5, "original_python_code": REF.format(i), "best_round": 3,
                     "timestamp": "2025-10-01", "conversion_mode": "x", "enable_thinking": False})
    return rows


def write(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def convert(tmp_path, src, *extra):
    env, log = user_env(tmp_path)
    out = tmp_path / "tasks.jsonl"
    p = subprocess.run([KGYM, "data", "convert", src, "--out", str(out)] + list(extra), capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=120)
    assert not log.exists(), "kgym ran the python3 from PATH: " + log.read_text()
    rows = [json.loads(line) for line in open(out)] if p.returncode == 0 else None
    return p, rows


def assert_user_error(p, *needles):
    assert p.returncode != 0
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr.lower(), p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


def test_validation_schema_converts_without_any_setting(tmp_path):
    p, rows = convert(tmp_path, write(tmp_path / "validation_data_thinking.parquet", validation_rows()))
    assert p.returncode == 0, p.stderr
    assert [r["problem_id"] for r in rows] == [1, 2, 3]
    assert rows[0]["prompt"] == [{"role": "user", "content": "optimise task 1"}]
    assert rows[2]["reference_code"] == REF.format(3) and rows[2]["name"] == "3_Conv2d_ReLU"
    assert rows[0]["data_source"] == "kernelbench_level2_validation"


def test_rl_schema_converts_with_uuids_levels_and_entry_points(tmp_path):
    p, rows = convert(tmp_path, write(tmp_path / "cuda_llm_rl_thinking_1025.parquet", rl_rows()))
    assert p.returncode == 0, p.stderr
    assert [r["task_id"] for r in rows] == ["u-1", "u-2", "u-3"]
    assert all(r["level"] == "1" and r["entry_point"] == "Model" for r in rows)
    assert rows[1]["name"] == "Mod2" and rows[1]["data_source"] == "cuda_llm"


def test_a_row_without_reward_model_is_named_by_the_parquet_and_its_row(tmp_path):
    rows = rl_rows()
    del rows[1]["reward_model"]
    for r in rows:  # a column missing in one row is null there; drop it everywhere so the column is absent
        r.pop("reward_model", None)
    src = write(tmp_path / "no_reward_model.parquet", rows)
    p, _ = convert(tmp_path, src)
    assert_user_error(p, f"{src} row 1:", "reward_model.ground_truth")
    assert ".tmp" not in p.stderr
    assert not (tmp_path / "tasks.jsonl").exists()


def test_a_null_ground_truth_in_one_row_names_that_row(tmp_path):
    rows = rl_rows()
    rows[2]["reward_model"]["ground_truth"] = None
    src = write(tmp_path / "rl.parquet", rows)
    p, _ = convert(tmp_path, src)
    assert_user_error(p, f"{src} row 3:", "reward_model.ground_truth")


def test_repeated_uuids_do_not_fail_the_file(tmp_path):
    rows = rl_rows()
    copy = json.loads(json.dumps(rows[0]))  # row 4: the same task again
    other = json.loads(json.dumps(rows[1]))  # row 5: another task under row 2's uuid
    other["reward_model"]["ground_truth"] = REF.format("other")
    src = write(tmp_path / "rl.parquet", rows + [copy, other])
    p, out = convert(tmp_path, src)
    assert p.returncode == 0, p.stderr
    assert [r["task_id"] for r in out] == ["u-1", "u-2", "u-3", "u-2#row5"]
    assert f"{src} row 4: a copy of task u-1 ({src} row 1): dropped" in p.stderr
    assert f"{src} row 5: task id u-2 is already {src} row 2's, for a different task: kept as u-2#row5" in p.stderr


def test_a_file_that_is_not_parquet_is_said_so(tmp_path):
    src = tmp_path / "broken.parquet"
    src.write_bytes(b"PAR1 this is not a parquet file")
    p, _ = convert(tmp_path, str(src))
    assert_user_error(p, f"{src}: not a parquet file pyarrow can read")


def sft(tmp_path, train_file, *overrides):
    env, log = user_env(tmp_path)
    p = subprocess.run([KGYM, "sft"] + TINY + [f"data.train_files=[{train_file}]", f"trainer.out_dir={tmp_path / 'sft'}",
                                               f"tokenizer.corpus=[{train_file}]"] + list(overrides),
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert not log.exists(), "kgym ran the python3 from PATH: " + log.read_text()
    return p


def coldstart_text(tmp_path):
    # The tokenizer trains on text files; the parquet's conversations as text.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(m["content"] for r in coldstart_rows() for m in r["messages"]))
    return f"tokenizer.corpus=[{corpus}]"


def test_coldstart_schema_trains_with_kgym_sft(tmp_path):
    need_learner_packages()
    src = write(tmp_path / "coldstart.parquet", coldstart_rows())
    p = sft(tmp_path, src, coldstart_text(tmp_path), "data.max_length=512", "data.train_batch_size=4",
            "trainer.total_training_steps=2")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "4 conversations" in p.stdout + p.stderr
    assert (tmp_path / "sft" / "final").is_dir()


def test_a_coldstart_row_without_messages_is_one_line_naming_it(tmp_path):
    need_learner_packages()
    rows = coldstart_rows()
    rows[2]["messages"] = None
    src = write(tmp_path / "coldstart.parquet", rows)
    p = sft(tmp_path, src, coldstart_text(tmp_path), "data.max_length=512")
    assert_user_error(p, f"kgym sft: invalid argument: {src} row 3: no 'messages' field (data.messages_key)")
    assert p.stderr.count("row 3") == 1, p.stderr  # said once, on one line


def test_max_length_past_the_models_positions_is_refused_before_training(tmp_path):
    need_learner_packages()
    src = write(tmp_path / "coldstart.parquet", coldstart_rows())
    p = sft(tmp_path, src, coldstart_text(tmp_path), "model.init.max_position_embeddings=64")  # max_length: 18432
    assert_user_error(p, "data.max_length is 18432 but the model has 64 positions (model.init.max_position_embeddings)"
                      " and the longest sequence has ", "set data.max_length to 64 or less")
    assert not (tmp_path / "sft" / "checkpoints").exists() and not (tmp_path / "sft" / "final").exists()
