#!/usr/bin/env python3
"""Dr.Kernel's own reward path, unchanged, against `kgym serve`.

Fetches hkust-nlp/KernelGYM at run time (a checkout, a bare git directory, or a clone), and drives what its RL
trainer drives, from its own files: `kernel/rewards/kernel_reward.py::compute_kernel_reward_batch` (the custom reward
function of kernel_trainer.yaml) through `reward_client.py`'s KernelRewardClient (POST /evaluate, poll /status,
GET /results), the reward functions it selects by name, and the health check of `main_kernel.py` (read out of the
file with `ast`, since the file itself starts Hydra). The reward configuration is kernel_trainer.yaml's
`reward_model` with the 8B recipe's overrides (scripts/rl/8b_trloo_mrs_pr_prs.sh: calculate_reward_speedup, time
coverage weight 0.5) and CPU-sized trial counts.

Each candidate of a set of cases (compile error, missing ModelNew, runtime error, wrong values, wrong shape,
timeout, correct) is sent as a model response (one fenced code block, as the policy writes it). For each, the table
gives kgym's answer, the reward the recipe's function computes from it, and the reward the same function computes
from what KernelGYM's documented outcome matrix says for that case (research/kernelgym.md §4.1); and the size of the
turn feedback Dr.Kernel's multi-turn engine puts into the next prompt (json.dumps(env_state, indent=2)).

What is not KernelGYM's: `verl.tools.sandbox_fusion_tools.TokenBucketWorker`, the global rate limiter the client
imports from the verl submodule Dr.Kernel pins, is provided by a 20-line Ray actor of the same interface (acquire,
release, get_current_count): the pinned verl is not installable from PyPI, and its releases that still have the
module import torch>=2 and tensordict at `import verl`.

Usage (on the CPU; the packages go to a temporary folder):
  bench/kernelgym_compat/run_reward_client.py --kgym build/src/cli/kgym [--kernelgym PATH] [--out FILE]
Writes the raw records (command, commit, machine, date, every answer) as JSON; prints one table.
"""
import argparse
import ast
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANDIDATES = os.path.join(ROOT, "tests", "py", "candidates")
KERNELGYM_REPO = "hkust-nlp/KernelGYM"
DEFAULT_MIRROR = "/work/.mirror/hkust-nlp+KernelGYM/repo"
PACKAGES = ["ray==2.47.1", "httpx", "omegaconf"]  # what the reward client imports (its pins: Dr.Kernel's setup.sh)

# KernelGYM's documented outcome matrix (research/kernelgym.md §4.1) for each case: what its /results says. The
# client itself turns a response without `class ModelNew` away before any request (its preflight): no status.
PREFLIGHT = "not sent (client preflight)"
CASES = [
    ("compile_error", "syntax_error", dict(status="failed", compiled=False, correctness=False)),
    ("missing_modelnew", "missing_modelnew", dict(status=PREFLIGHT, compiled=False, correctness=False)),
    ("modelnew_not_defined", "modelnew_in_comment", dict(status="failed", compiled=False, correctness=False)),
    ("runtime_error", "forward_exception", dict(status="completed", compiled=True, correctness=False)),
    ("wrong_values", "wrong_values", dict(status="completed", compiled=True, correctness=False)),
    ("wrong_shape", "wrong_shape", dict(status="completed", compiled=True, correctness=False)),
    ("timeout", "infinite_loop", dict(status="failed", compiled=False, correctness=False)),
    ("correct", "good", dict(status="completed", compiled=True, correctness=True)),
]

TOKEN_BUCKET = '''"""Stand-in for verl.tools.sandbox_fusion_tools.TokenBucketWorker (kgym bench; see run_reward_client.py)."""
import threading

import ray


@ray.remote(concurrency_groups={"acquire": 1, "release": 10})
class TokenBucketWorker:
    def __init__(self, rate_limit):
        self.rate_limit = rate_limit
        self.current_count = 0
        self._slots = threading.Semaphore(rate_limit)

    @ray.method(concurrency_group="acquire")
    def acquire(self):
        self._slots.acquire()
        self.current_count += 1

    @ray.method(concurrency_group="release")
    def release(self):
        self._slots.release()
        self.current_count -= 1

    def get_current_count(self):
        return self.current_count
'''


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout.strip()


def kernelgym_tree(given, work):
    """A KernelGYM source tree: a checkout as is, a bare git directory archived, else a clone."""
    src = given or (DEFAULT_MIRROR if os.path.isdir(DEFAULT_MIRROR) else "")
    if src and os.path.isdir(os.path.join(src, "drkernel")):
        return src, sh("git", "-C", src, "rev-parse", "HEAD") if os.path.isdir(os.path.join(src, ".git")) else "?"
    tree = os.path.join(work, "KernelGYM")
    os.makedirs(tree)
    if src:
        subprocess.run(f"git --git-dir='{src}' archive HEAD | tar -x -C '{tree}'", shell=True, check=True)
        return tree, sh("git", "--git-dir", src, "rev-parse", "HEAD")
    shutil.rmtree(tree)
    sh("git", "clone", "--depth", "1", "https://github.com/" + KERNELGYM_REPO, tree)
    return tree, sh("git", "-C", tree, "rev-parse", "HEAD")


def install_packages(pkgs_dir, work):
    if pkgs_dir and os.path.isdir(os.path.join(pkgs_dir, "ray")):
        return pkgs_dir
    target = pkgs_dir or os.path.join(work, "pkgs")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", target, *PACKAGES], check=True)
    return target


def stand_ins(work):
    d = os.path.join(work, "standins")
    os.makedirs(os.path.join(d, "verl", "tools"))
    for init in ("verl/__init__.py", "verl/tools/__init__.py"):
        open(os.path.join(d, init), "w").close()
    with open(os.path.join(d, "verl", "tools", "sandbox_fusion_tools.py"), "w") as f:
        f.write(TOKEN_BUCKET)
    return d


def health_check_function(tree):
    """main_kernel.py's _check_kernel_server_health, as written there (the module itself needs Hydra and VERL)."""
    path = os.path.join(tree, "drkernel", "kernel", "main_kernel.py")
    mod = ast.parse(open(path).read())
    fn = next(n for n in mod.body if isinstance(n, ast.FunctionDef) and n.name == "_check_kernel_server_health")
    scope = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), scope)
    return scope["_check_kernel_server_health"]


def start_server(kgym, work, extra):
    log = open(os.path.join(work, "serve.log"), "w")
    proc = subprocess.Popen([kgym, "serve", "--port", "0", "--gpus", "none", "--cpu-slots", "4", "--store",
                             os.path.join(work, "store.sqlite"), *extra], stdout=subprocess.PIPE, stderr=log,
                            text=True)
    m = re.search(r"listening on (http://[\d.]+:\d+)", proc.stdout.readline())
    if not m:
        proc.kill()
        raise SystemExit("kgym serve did not start; see " + log.name)
    return proc, m.group(1)


def reward_config(tree, url):
    from omegaconf import OmegaConf
    cfg = OmegaConf.load(os.path.join(tree, "drkernel", "kernel", "config", "kernel_trainer.yaml"))
    rm = cfg.reward_model
    rm.server_url = url
    # The 8B recipe (scripts/rl/8b_trloo_mrs_pr_prs.sh) and CPU-sized evaluations.
    rm.reward_func_name = "calculate_reward_speedup"
    rm.speedup_reward_upper_bound, rm.speedup_reward_lower_bound = 3.0, 0.0
    rm.coverage_reward.enable, rm.coverage_reward.weight = True, 0.5
    rm.coverage_reward.reward_type = "time_coverage"
    rm.task_timeout, rm.task_timeout_in_client, rm.timeout = 20, 300, 300
    rm.num_correct_trials, rm.num_perf_trials = 2, 10
    rm.max_concurrent, rm.rate_limit = 8, 8
    # kernel_reward.py reads reward_config.reference_backend, which kernel_trainer.yaml lacks (a missing key raises
    # there, and every reward becomes the penalty); kernel_grading.yaml and grading_common.sh set it: null, eager.
    rm.reference_backend = None
    return rm


def response_text(name):
    code = open(os.path.join(CANDIDATES, name + ".py")).read()
    return "Here is the optimized implementation.\n\n```python\n" + code + "```\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kgym", default=os.path.join(ROOT, "build", "src", "cli", "kgym"))
    ap.add_argument("--kernelgym", default="", help="KernelGYM checkout or bare git dir (default: mirror, else clone)")
    ap.add_argument("--packages", default="", help="folder with the client's packages (installed there if absent)")
    ap.add_argument("--mode", default="default", choices=["default", "compat"], help="kgym serve --mode")
    ap.add_argument("--out", default="")
    ap.add_argument("--note", default="", help="stored with the results (e.g. which build the binary is)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="kgym-kernelgym-compat-")
    tree, kg_commit = kernelgym_tree(args.kernelgym, work)
    pkgs = install_packages(args.packages, work)
    paths = [pkgs, stand_ins(work), os.path.join(tree, "drkernel")]
    sys.path[:0] = paths
    # Ray's own processes (its agents, the actors' workers) import ray and the client's modules too.
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [os.environ.get("PYTHONPATH")] if p])
    os.environ.setdefault("RAY_DISABLE_DOCKER_CPU_WARNING", "1")
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    from kernel.rewards.kernel_reward import compute_kernel_reward_batch  # noqa: E402  (Dr.Kernel's, unchanged)
    from kernel.rewards import reward_client  # noqa: E402

    proc, url = start_server(args.kgym, work, ["--mode", args.mode])
    records = []
    try:
        health_check_function(tree)(url)  # raises unless /health says "healthy" within 10 s
        cfg = reward_config(tree, url)
        ref = open(os.path.join(CANDIDATES, "ref_linear_relu.py")).read()
        names = [c[1] for c in CASES]
        t0 = time.time()
        merged = compute_kernel_reward_batch([response_text(n) for n in names], [ref] * len(names),
                                             ["Model"] * len(names), reward_config=cfg, uuids=names, is_valid=False)
        wall = time.time() - t0
        client = reward_client.KernelRewardClient(reward_config=cfg)
        for (case, _, kg), got in zip(CASES, merged):
            fact = dict(kg, status=kg["status"] if kg["status"] != PREFLIGHT else "failed", decoy_kernel=False, speedup=got.get("speedup", 0.0) if kg["correctness"] else 0.0,
                        metadata={})
            feedback = json.dumps(got, ensure_ascii=False, indent=2)  # what the multi-turn engine prompts with
            records.append({
                "case": case, "status": got.get("status", PREFLIGHT), "compiled": got.get("compiled"),
                "correctness": got.get("correctness"), "error_code": got.get("error_code"),
                "speedup": got.get("speedup"), "reward": got.get("reward"),
                "reward_like_kernel": client.calculate_reward_like_kernel(got)["reward"],
                "kernelgym_status": kg["status"],
                "kernelgym_reward": client.calculate_reward_speedup(fact)["reward"],
                "kernelgym_reward_like_kernel": client.calculate_reward_like_kernel(fact)["reward"],
                "feedback_chars": len(feedback), "answer": got})
    finally:
        proc.terminate()
        proc.wait(60)
        ray.shutdown()

    cols = ["case", "status", "kernelgym_status", "reward", "kernelgym_reward", "reward_like_kernel",
            "kernelgym_reward_like_kernel", "feedback_chars"]
    print(" | ".join(cols))
    for r in records:
        print(" | ".join(str(r[c]) for c in cols))
    same = all(r["status"] == r["kernelgym_status"] and r["reward"] == r["kernelgym_reward"] and
               r["reward_like_kernel"] == r["kernelgym_reward_like_kernel"] for r in records)
    print(f"{len(records)} cases in {wall:.1f} s; statuses and rewards as KernelGYM's: {same}")
    out = {"command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
           "commit": sh("git", "-C", ROOT, "rev-parse", "HEAD"), "kernelgym_commit": kg_commit,
           "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs (no GPU)",
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": sys.version.split()[0],
           "kgym_binary": args.kgym, "note": args.note, "kgym_mode": args.mode, "reward_func_name": "calculate_reward_speedup", "wall_s": wall,
           "all_as_kernelgym": same, "records": records}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
