"""Checks the built-in task suite (tasks/) on the CPU at the small size.

Every reference must import, build and run; its output must not be degenerate (constant, all
zeros, an input passed through, or independent of the input); every task must have a Triton
solution and a wrong one; every pure-PyTorch rewrite must match its reference. The full size is
checked for shapes and memory only, on the meta device.
"""
import ast
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = os.path.join(ROOT, "tasks")
ATOL = RTOL = 1e-2


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_solutions = _load(os.path.join(TASKS, "check_solutions.py"), "kgym_check_solutions")
describe = _load(os.path.join(TASKS, "describe.py"), "kgym_describe")
TASK_PATHS = check_solutions.task_paths()
TASK_IDS = list(TASK_PATHS)
TORCH_SOLUTIONS = [t for t in TASK_IDS if os.path.exists(check_solutions.solution_path(t, "torch"))]


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setenv("KGYM_TASK_SIZE", "small")


def _run(task, seed_model, seed_inputs):
    torch.manual_seed(seed_model)
    model = task.Model(*task.get_init_inputs()).eval()
    torch.manual_seed(seed_inputs)
    inputs = task.get_inputs()
    with torch.no_grad():
        return model(*inputs), inputs


def test_suite_has_enough_tasks_in_every_level():
    levels = {}
    for task_id in TASK_IDS:
        levels.setdefault(task_id.split("/")[0], []).append(task_id)
    assert len(TASK_IDS) >= 24
    assert sorted(levels) == ["level1", "level2", "level3"]
    assert all(len(v) >= 4 for v in levels.values()), levels
    assert len(TORCH_SOLUTIONS) >= 8


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_runs_and_is_not_degenerate(task_id, small):
    task = _load(TASK_PATHS[task_id], "t_" + task_id.replace("/", "_"))
    assert task.SIZE == "small"
    init = task.get_init_inputs()
    assert isinstance(init, list)
    out, inputs = _run(task, 0, 1)
    assert isinstance(inputs, list) and inputs
    for x in inputs:
        assert isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dtype == torch.float32
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert torch.isfinite(out).all()
    # Deterministic given the seeds.
    again, _ = _run(task, 0, 1)
    assert torch.equal(out, again)
    # Not constant, not zero, not an input passed through (KernelBench degenerate-problem defects).
    assert not torch.allclose(out, torch.zeros_like(out), atol=ATOL, rtol=RTOL)
    assert not torch.allclose(out, torch.full_like(out, out.mean().item()), atol=ATOL, rtol=RTOL)
    for x in inputs:
        if x.shape == out.shape:
            assert not torch.allclose(out, x, atol=ATOL, rtol=RTOL)
    # The output depends on the input values.
    other, _ = _run(task, 0, 2)
    assert not torch.allclose(out, other, atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_every_task_has_triton_and_wrong_solutions(task_id):
    init_args = _init_args(TASK_PATHS[task_id], "Model")
    for kind in ("triton", "wrong"):
        path = check_solutions.solution_path(task_id, kind)
        assert os.path.exists(path), path
        source = open(path).read()
        assert "@triton.jit" in source and "tl." in source
        # Same constructor signature as the reference.
        assert _init_args(path, "ModelNew") == init_args


@pytest.mark.parametrize("task_id", TORCH_SOLUTIONS)
def test_torch_solution_matches_reference(task_id, small):
    result = check_solutions.check(task_id, "torch", "cpu", trials=2)
    assert result["verdict"] == "correct", result


def test_checker_flags_a_wrong_torch_solution(tmp_path, small, monkeypatch):
    # The comparison used above must be able to fail: a rewrite with the wrong slope is incorrect.
    level_dir = tmp_path / "solutions" / "level1"
    level_dir.mkdir(parents=True)
    (level_dir / "leaky_relu_torch.py").write_text(
        "import torch\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, negative_slope):\n"
        "        super().__init__()\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x)\n")
    real = check_solutions.solution_path
    monkeypatch.setattr(check_solutions, "solution_path",
                        lambda t, k: str(level_dir / "leaky_relu_torch.py") if t == "level1/leaky_relu" else real(t, k))
    assert check_solutions.check("level1/leaky_relu", "torch", "cpu", trials=1)["verdict"] == "incorrect"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_full_size_fits_and_small_size_is_small(task_id):
    full = describe.describe_task(task_id, TASK_PATHS[task_id], "full")
    small = describe.describe_task(task_id, TASK_PATHS[task_id], "small")
    # Inputs + reference output + candidate output stay well inside one GPU and the 12 GB budget.
    assert full["input_bytes"] + full["param_bytes"] + 2 * full["output_bytes"] < 12e9
    assert small["bytes_moved"] < 64e6
    assert full["bytes_moved"] > 20 * small["bytes_moved"]


def _init_args(path, class_name):
    tree = ast.parse(open(path).read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return [a.arg for a in item.args.args]
    raise AssertionError(f"{path}: no {class_name}.__init__")
