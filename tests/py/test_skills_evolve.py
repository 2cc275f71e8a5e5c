"""Skills end to end: `kgym agent --skills` (k selection calls per task in the three tool-call forms, names
outside the library dropped, injection before the last "Optimize the architecture named Model", the null scheme),
then one full `kgym skills evolve` round over that run (trigger, summaries with a lazy skill, greedy turn-1
verification on the gym, usage counters, the next snapshot), driven by a scripted OpenAI server and a scripted
KernelGYM server; and the second-task option turning a verified skill away."""
import json
import os
import re
import shutil
import subprocess

import pytest

from agent_fakes import FakeGym, FakeOpenAI, Reply, kernel_response

KGYM = os.environ.get("KGYM_BIN", "")
pytestmark = pytest.mark.skipif(not (KGYM and os.path.exists(KGYM)), reason="KGYM_BIN not built")

SENTINEL = "Optimize the architecture named Model"
TASKS = {"level1/1_Alpha": "Alpha", "level1/2_Beta": "Beta"}
LIBRARY = [
    {"name": "tile_matmul", "description": "tile the K loop of a matmul", "scope": "task_specific/matmul",
     "tags": ["matmul", "tiling"], "content": "## Motivation\nreuse\n## Key Idea\ntile K\n## Example\n`tl.dot`"},
    {"name": "warp_reduce", "description": "reduce inside a warp", "scope": "general", "tags": ["reduction"],
     "content": "## Motivation\nfewer barriers\n## Key Idea\nshuffle\n## Example\n`tl.sum`"},
    {"name": "online_softmax", "description": "one pass softmax with a running max", "scope": "general",
     "tags": ["softmax"], "content": "## Motivation\none read\n## Key Idea\nrescale\n## Example\n`tl.max`"},
]
GOOD = {"name": "Fuse Epilogue Into Matmul", "description": "apply bias and activation before the store",
        "scope": "general", "tags": ["fusion", "epilogue"],
        "content": "## Motivation\nsaves a round trip\n## Key Idea\nfuse the epilogue\n## Example\n`acc += b`"}
LAZY = {"name": "use_torch_fallback", "description": "fall back to PyTorch for the hard part", "scope": "general",
        "tags": ["fallback"], "content": "## Motivation\nsafe\n## Key Idea\ncall torch\n## Example\n`x @ w`"}
WEAK = {"name": "weak_hint", "description": "a hint that does not help", "scope": "general", "tags": ["misc"],
        "content": "## Motivation\nnone\n## Key Idea\nnothing much\n## Example\n`pass`"}

# The three tool-call forms, one per selection call j (the order the selector makes them in); Beta's first call
# comes back as structured message.tool_calls instead.
SELECTIONS = [
    '<tool_call>\n<function=select_skills>\n<parameter=think>\nmatmul bound\n</parameter>\n<parameter=selected_skills>'
    '\n[{"name": "tile_matmul", "reason": "tiles"}]\n</parameter>\n</function>\n</tool_call>',
    '<tool_call>{"name": "select_skills", "arguments": {"think": "t", "selected_skills": [{"name": "warp_reduce", '
    '"reason": "r"}, {"name": "made_up_skill", "reason": "not in the library"}, {"name": "online_softmax", '
    '"reason": "r"}]}}</tool_call>',
    'Picks:\n```json\n{"name": "select_skills", "arguments": {"think": "t", "selected_skills": '
    '[{"name": "online_softmax", "reason": "r"}]}}\n```',
]


def make_tasks(root):
    for tid, name in TASKS.items():
        path = os.path.join(root, tid + ".py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"# TASK={name}\nimport torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                    f"        return x\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
                    f"def get_init_inputs():\n    return []\n")


def all_text(body):
    return "\n".join(m.get("content") or "" for m in body["messages"])


def tool_names(body):
    return [t["function"]["name"] for t in body.get("tools", [])]


class Script:
    """Answers selection, summary, policy and verification requests; records what it was asked."""

    def __init__(self, second_task_speed=2.0):
        self.selection_calls = {}  # task -> number of select_skills requests seen
        self.kinds = []
        self.second_task_speed = second_task_speed

    def __call__(self, task, sample, turn, attempt, body):
        text = all_text(body)
        m = re.search(r"# TASK=(\w+)", text)
        task = m.group(1) if m else "?"
        if "select_skills" in tool_names(body):
            j = self.selection_calls.get(task, 0)
            self.selection_calls[task] = j + 1
            self.kinds.append(("selection", task, j))
            if task == "Beta" and j == 0:  # a server with a tool parser: the call comes as message.tool_calls
                args = {"think": "t", "selected_skills": [{"name": "tile_matmul", "reason": "r"}]}
                return Reply(raw_body=json.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                        "name": "select_skills", "arguments": json.dumps(args)}}]}}]}))
            return Reply(content=SELECTIONS[j % 3])
        if "update_skill_library" in tool_names(body):
            self.kinds.append(("summary", task, body.get("seed")))
            skills = [GOOD, LAZY] if body.get("seed", 0) % 2 == 0 else [WEAK]
            call = {"name": "update_skill_library", "arguments": {"think": "what worked", "new_skills": skills}}
            return Reply(content="<tool_call>" + json.dumps(call) + "</tool_call>")
        first = body["messages"][0]["content"]
        if body.get("temperature") == 0:  # greedy turn-1 verification (or a second-task baseline)
            self.kinds.append(("verify", task, first))
            if "name: Fuse Epilogue Into Matmul" in first:  # names are normalised only at flush
                return Reply(content=kernel_response("SPEED=2.0" if task == "Alpha" else
                                                     f"SPEED={self.second_task_speed}"))
            if "name: weak_hint" in first:
                return Reply(content=kernel_response("SPEED=1.1"))
            return Reply(content=kernel_response("SPEED=1.0"))
        self.kinds.append(("policy", task, sample, turn))
        # Policy: Alpha's scheme-0 trajectory improves 1.0 -> 1.5 (triggers); everything else stays flat.
        if task == "Alpha" and sample == 0:
            return Reply(content=kernel_response("SPEED=1.0" if turn == 1 else "SPEED=1.5"))
        return Reply(content=kernel_response("SPEED=1.0" if task == "Alpha" else "SPEED=0.8"))


def write_jsonl(path, records):
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return str(path)


def run(*args, check=True):
    p = subprocess.run([KGYM, *args], capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.fixture
def world(tmp_path):
    tasks = tmp_path / "tasks"
    make_tasks(str(tasks))
    lib = tmp_path / "lib"
    run("skills", "add", "--library", str(lib), write_jsonl(tmp_path / "seed.jsonl", LIBRARY))
    script = Script()
    llm, gym = FakeOpenAI(script), FakeGym()
    yield tmp_path, str(tasks), str(lib), script, llm, gym
    llm.close()
    gym.close()


def run_agent(tasks, lib, llm, gym, out):
    run("agent", "--tasks", tasks, "--base-url", llm.base_url, "--model", "fake", "--server", gym.url, "--out", out,
        "--turns", "2", "--samples", "4", "--seed", "0", "--llm-timeout", "60", "--max-retries", "1", "--retry-backoff", "0.05",
        "--no-progress", "--skills", lib)
    recs = {}
    with open(os.path.join(out, "trajectories.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            recs[r["key"]] = r
    return recs


def test_agent_selects_and_injects_then_evolve_round(world):
    tmp, tasks, lib, script, llm, gym = world
    out = str(tmp / "run")
    recs = run_agent(tasks, lib, llm, gym, out)
    assert len(recs) == 8
    # k = 3 selection calls per task, made once however many samples need them.
    assert script.selection_calls == {"Alpha": 3, "Beta": 3}
    want = {0: ["tile_matmul"], 1: ["warp_reduce", "online_softmax"], 2: ["online_softmax"], 3: []}
    for key, rec in recs.items():
        note = rec["first_turn"]
        assert note["scheme"] == rec["sample"] % 4 and note["schemes"] == 4
        assert note["skills"] == want[note["scheme"]], key
        first = rec["messages"][0]["content"]
        plain = note["plain_prompt"]
        if note["scheme"] == 3:
            assert note["null_scheme"] and note["injected"] is None and first == plain
            continue
        assert "made_up_skill" not in first
        # The block sits right before the last sentinel; the instruction stays last.
        block_at = first.index("## [Skill Library]")
        assert block_at < first.rindex(SENTINEL)
        assert first.endswith(plain[plain.rindex(SENTINEL):])
        assert first.replace(note["injected"], "") != plain  # header/footer were added too
        for name in note["skills"]:
            assert f"name: {name}" in first[block_at:first.rindex(SENTINEL)]
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["skills"]["schemes"] == 4 and cfg["skills"]["skills"] == 3

    # One evolve round.
    p = run("skills", "evolve", out, "--library", lib, "--base-url", llm.base_url, "--model", "fake",
            "--server", gym.url, "--skill-summaries", "2", "--seed", "0", "--llm-timeout", "60", "--max-retries", "1")
    assert "1 triggered task(s)" in p.stdout and "+ fuse_epilogue_into_matmul" in p.stdout
    rep = json.load(open(os.path.join(out, "evolve.json")))
    assert [c["task"] for c in rep["cases"]] == ["level1/1_Alpha"]
    assert rep["cases"][0]["turn1_speedup"] == 1.0 and rep["cases"][0]["best_speedup"] == 1.5
    # Summary 0 proposed GOOD + LAZY (lazy filtered), summary 1 proposed WEAK.
    assert any("use_torch_fallback" in r for s in rep["summaries"] for r in s["rejected"])
    assert [s["reward"] for s in rep["summaries"]] == [2.0, 0.0]  # summary 0 proposed the admitted skill
    assert "update_skill_library" in rep["summaries"][0]["response"]
    by_name = {c["name"]: c for c in rep["candidates"]}
    assert set(by_name) == {"Fuse Epilogue Into Matmul", "weak_hint"}
    good, weak = by_name["Fuse Epilogue Into Matmul"], by_name["weak_hint"]
    assert good["admitted"] and good["verify_speedup"] == 2.0
    assert good["runs"][0]["turn1_speedup"] == 1.0 and good["runs"][0]["passes"]
    assert not weak["admitted"] and weak["runs"][0]["speedup"] == pytest.approx(1.1)
    # The verification prompt carried the winning scheme's skills, then the candidate, before the sentinel.
    verify_prompts = [k[2] for k in script.kinds if k[0] == "verify" and "Fuse Epilogue" in k[2]]
    assert verify_prompts
    vp = verify_prompts[0]
    assert vp.index("name: tile_matmul") < vp.index("name: Fuse Epilogue Into Matmul") < vp.rindex(SENTINEL)
    # The next snapshot: old skills with usage counters, plus the verified one.
    assert sorted(os.listdir(lib)) == ["global_step_0.jsonl", "global_step_1.jsonl"]
    skills = json.loads(run("skills", "list", "--library", lib, "--json").stdout)
    names = [s["name"] for s in skills]
    assert names == ["tile_matmul", "warp_reduce", "online_softmax", "fuse_epilogue_into_matmul"]
    added = skills[-1]
    assert added["verify_speedup"] == 2.0 and added["description"] == GOOD["description"]
    tile = skills[0]
    # tile_matmul was injected into scheme 0 of both tasks; only Alpha's reached speedup >= 1.0.
    assert tile["uses"] == 2 and tile["successes"] == 1
    assert skills[2]["uses"] == 4  # online_softmax: schemes 1 and 2 of both tasks
    assert run("skills", "search", "--library", lib, "--query", "fuse epilogue", "--json").stdout.count(
        "fuse_epilogue_into_matmul") == 1

    # Evolving from the same run again would count usage twice: refused, nothing written.
    p = run("skills", "evolve", out, "--library", lib, "--base-url", llm.base_url, "--model", "fake",
            "--server", gym.url, check=False)
    assert p.returncode != 0 and "--force" in p.stderr
    assert sorted(os.listdir(lib)) == ["global_step_0.jsonl", "global_step_1.jsonl"]
    # Extending an older snapshot would overwrite the newer one: refused too.
    before = open(os.path.join(lib, "global_step_1.jsonl")).read()
    p = run("skills", "evolve", out, "--library", lib, "--base-url", llm.base_url, "--model", "fake",
            "--server", gym.url, "--force", "--step", "0", check=False)
    assert p.returncode != 0 and "would replace" in p.stderr
    assert open(os.path.join(lib, "global_step_1.jsonl")).read() == before


def test_second_task_requirement_rejects_a_task_local_skill(world):
    tmp, tasks, lib, script, llm, gym = world
    out = str(tmp / "run")
    run_agent(tasks, lib, llm, gym, out)
    script.second_task_speed = 1.1  # the skill does not carry over to Beta
    lib2 = str(tmp / "lib2")
    shutil.copytree(lib, lib2)
    p = run("skills", "evolve", out, "--library", lib2, "--base-url", llm.base_url, "--model", "fake",
            "--server", gym.url, "--skill-summaries", "2", "--seed", "0", "--second-task", "--llm-timeout", "60")
    rep = json.load(open(os.path.join(out, "evolve.json")))
    good = next(c for c in rep["candidates"] if c["name"] == "Fuse Epilogue Into Matmul")
    assert not good["admitted"] and "second task" in good["reason"]
    assert [r["task"] for r in good["runs"]] == ["level1/1_Alpha", "level1/2_Beta"]
    assert good["runs"][0]["passes"] and not good["runs"][1]["passes"]
    assert rep["second_task_baselines"]["level1/2_Beta"]["speedup"] == 1.0
    assert rep["added"] == [] and "0 added" in p.stdout
    names = [s["name"] for s in json.loads(run("skills", "list", "--library", lib2, "--json").stdout)]
    assert names == ["tile_matmul", "warp_reduce", "online_softmax"]
    assert sorted(os.listdir(lib2)) == ["global_step_0.jsonl", "global_step_1.jsonl"]


# --------------------------------------------------------------------------- the same round on a real CPU gym
# `kgym serve --gpus none` evaluates for real (pristine reference process, sandboxed candidate, CPU timing). The
# reference sleeps 20 ms per call; a candidate that keeps the sleep runs at ~1x, one that drops it at >> 1.2x, so
# the trigger and verification rules see real measurements with a wide margin on either side.
CPU_REF = """# TASK=Alpha
import time
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        time.sleep(0.02)
        return torch.relu(x)
def get_inputs():
    return [torch.randn(32, 32)]
def get_init_inputs():
    return []
"""


def cpu_kernel(slow):
    body = "        time.sleep(0.02)\n" if slow else ""
    return ("Kernel:\n```python\nimport time\nimport torch\nclass ModelNew(torch.nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n    def forward(self, x):\n"
            f"{body}        return torch.clamp(x, min=0.0)\n```\n")


class CpuScript(Script):
    def __call__(self, task, sample, turn, attempt, body):
        if "select_skills" in tool_names(body) or "update_skill_library" in tool_names(body):
            return super().__call__(task, sample, turn, attempt, body)
        first = body["messages"][0]["content"]
        if body.get("temperature") == 0:
            self.kinds.append(("verify", "Alpha", first))
            return Reply(content=cpu_kernel(slow="name: Fuse Epilogue Into Matmul" not in first))
        self.kinds.append(("policy", "Alpha", sample, turn))
        return Reply(content=cpu_kernel(slow=not (sample == 0 and turn == 2)))


def test_evolve_round_on_cpu_gym(tmp_path):
    from server_util import Server

    tasks = tmp_path / "tasks"
    (tasks / "level1").mkdir(parents=True)
    (tasks / "level1" / "1_Alpha.py").write_text(CPU_REF)
    lib = str(tmp_path / "lib")
    run("skills", "add", "--library", lib, write_jsonl(tmp_path / "seed.jsonl", LIBRARY))
    gym = Server(tmp_path, "--gpus", "none", "--cpu-slots", "2")
    llm = FakeOpenAI(CpuScript())
    try:
        probe = gym.post("/evaluate", {"task_id": "probe", "reference_code": CPU_REF, "kernel_code":
                                       cpu_kernel(False).split("```python\n")[1].split("```")[0],
                                       "backend": "triton", "num_correct_trials": 1, "num_perf_trials": 2,
                                       "timeout": 120, "entry_point": "Model"}, timeout=300).json()
        if probe.get("error_code") == "SYSTEM_ERROR":
            pytest.skip("evaluator infrastructure unavailable here: " + str(probe.get("error_message")))
        trials = ["--num-correct-trials", "2", "--num-perf-trials", "5"]
        out = str(tmp_path / "run")
        run("agent", "--tasks", str(tasks), "--base-url", llm.base_url, "--model", "fake", "--server", gym.url,
            "--out", out, "--turns", "2", "--samples", "4", "--seed", "0", "--llm-timeout", "30", "--max-retries", "1",
            "--no-progress", "--skills", lib, *trials)
        recs = [json.loads(line) for line in open(os.path.join(out, "trajectories.jsonl"))]
        s0 = next(r for r in recs if r["sample"] == 0)
        t1, t2 = (t["result"] for t in s0["turns"])
        assert t1["correctness"] and t2["correctness"], (t1, t2)
        assert 0.5 < t1["speedup"] < 1.15 and t2["speedup"] > 3, (t1["speedup"], t2["speedup"])
        run("skills", "evolve", out, "--library", lib, "--base-url", llm.base_url, "--model", "fake",
            "--server", gym.url, "--skill-summaries", "2", "--seed", "0", "--llm-timeout", "30", *trials)
        rep = json.load(open(os.path.join(out, "evolve.json")))
        by_name = {c["name"]: c for c in rep["candidates"]}
        good, weak = by_name["Fuse Epilogue Into Matmul"], by_name["weak_hint"]
        assert good["admitted"] and good["verify_speedup"] > 3, good
        assert not weak["admitted"] and weak["runs"][0]["correct"] and weak["runs"][0]["speedup"] < 1.2, weak
        skills = json.loads(run("skills", "list", "--library", lib, "--json").stdout)
        assert skills[-1]["name"] == "fuse_epilogue_into_matmul"
        assert skills[-1]["verify_speedup"] == good["verify_speedup"]
    finally:
        llm.close()
        gym.kill()
