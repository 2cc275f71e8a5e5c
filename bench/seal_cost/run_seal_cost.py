#!/usr/bin/python3
"""Cost of the seal: time per evaluation with the sandbox on vs off (`--unsafe-no-sandbox`), on honest candidates.

The seal is everything `kgym doctor` lists: network, PID and mount namespaces, a fresh /proc, private /tmp,
/dev/shm and /var/tmp, hidden paths, every other mount read-only, uid 65534, rlimits, no_new_privs, scrubbed
environment. `--unsafe-no-sandbox` turns all of it off at once (there is no finer switch).

Candidates: the honest rewrites of tests/redteam (with their references) and the PyTorch solutions of a few tasks
of tasks/ at KGYM_TASK_SIZE=small. Each is evaluated `--reps` times in each mode, sealed and unsealed interleaved
(the order alternates per repetition) so drift in the machine's load hits both modes alike; medians per candidate.
Two paths are measured:
  fresh  one `kgym eval` process per evaluation (zygote start, reference run, candidate): process wall time and
         the evaluator's own `evaluation_s` (reference + candidate worker);
  warm   one `kgym serve --gpus none --cpu-slots 1` per mode, requests one at a time: the reference is cached
         after a first untimed round, so each request is one candidate worker (the path RL training uses).
Goal: sealed <= 1.10 x unsealed (geometric mean over the candidates of the ratio of medians; the ratio of the
sums of medians is reported too). Raw numbers go to bench/results/seal_cost-<host>.json.
"""
import argparse
import datetime
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RT = os.path.join(ROOT, "tests", "redteam")

CANDIDATES = [  # (name, reference, candidate, size)
    ("redteam/honest_relu", "refs/relu.py", "candidates/honest_relu.py", None),
    ("redteam/honest_linear_relu", "refs/linear_relu.py", "candidates/honest_linear_relu.py", None),
    ("redteam/honest_matmul", "refs/matmul.py", "candidates/honest_matmul.py", None),
    ("redteam/honest_mse", "refs/mse.py", "candidates/honest_mse.py", None),
    ("redteam/honest_softmax", "refs/softmax_wide.py", "candidates/honest_softmax.py", None),
    ("tasks/level1/relu", "../../tasks/level1/relu.py", "../../tasks/solutions/level1/relu_torch.py", "small"),
    ("tasks/level1/layernorm", "../../tasks/level1/layernorm.py", "../../tasks/solutions/level1/layernorm_torch.py",
     "small"),
    ("tasks/level2/linear_bias_gelu", "../../tasks/level2/linear_bias_gelu.py",
     "../../tasks/solutions/level2/linear_bias_gelu_torch.py", "small"),
]


def median(xs):
    return statistics.median(xs) if xs else None


def eval_once(args, bin_, c, sealed, cwd):
    name, ref, ker, size = c
    cmd = [bin_, "eval", "--ref", os.path.join(RT, ref), "--kernel", os.path.join(RT, ker), "--device", "cpu",
           "--num-correct-trials", str(args.correct_trials), "--num-perf-trials", str(args.perf_trials)]
    if size:
        cmd += ["--size", size]
    if not sealed:
        cmd.append("--unsafe-no-sandbox")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd)
    wall = time.perf_counter() - t0
    r = json.loads(p.stdout)
    return {"wall_s": wall, "evaluation_s": r["metadata"].get("evaluation_s"), "outcome": r["outcome"],
            "sandbox": r["metadata"].get("sandbox", {})}


def start_server(bin_, sealed, tmp, tag):
    cmd = [bin_, "serve", "--port", "0", "--store", os.path.join(tmp, tag + ".sqlite"), "--gpus", "none",
           "--cpu-slots", "1"]
    if not sealed:
        cmd.append("--unsafe-no-sandbox")
    log = open(os.path.join(tmp, tag + ".log"), "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, cwd=tmp)
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://[\d.]+:\d+)", line)
    if not m:
        proc.kill()
        raise RuntimeError("kgym serve did not start: " + line)
    return proc, m.group(1), cmd


def post_once(args, url, c, k):
    name, ref, ker, size = c
    body = {"task_id": "%s-%d" % (name, k), "reference_code": open(os.path.join(RT, ref)).read(),
            "kernel_code": open(os.path.join(RT, ker)).read(), "backend": "triton",
            "num_correct_trials": args.correct_trials, "num_perf_trials": args.perf_trials, "timeout": 300,
            "entry_point": "Model", "is_valid": False, "verbose_errors": True, "enable_profiling": False,
            "detect_decoy_kernel": False, "reference_backend": None, "size": size or ""}
    req = urllib.request.Request(url + "/evaluate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        res = json.loads(r.read())
    return {"wall_s": time.perf_counter() - t0, "outcome": res.get("outcome"),
            "evaluation_s": (res.get("metadata") or {}).get("evaluation_s")}


def summarise(samples, key):
    """Per-candidate medians for both modes and their ratio; `ratio` is the geometric mean of the per-candidate
    ratios (every candidate counts the same), `sum_ratio` the ratio of the sums of medians (long ones dominate)."""
    per, tot_s, tot_u, logs = {}, 0.0, 0.0, []
    for name, modes in samples.items():
        s = median([x[key] for x in modes["sealed"] if x.get(key) is not None])
        u = median([x[key] for x in modes["unsealed"] if x.get(key) is not None])
        per[name] = {"sealed": s, "unsealed": u, "ratio": s / u if s and u else None,
                     "extra_s": s - u if s is not None and u is not None else None}
        tot_s += s or 0
        tot_u += u or 0
        if s and u:
            logs.append(math.log(s / u))
    return {"per_candidate": per, "sum_sealed_s": tot_s, "sum_unsealed_s": tot_u,
            "sum_ratio": tot_s / tot_u if tot_u else None,
            "ratio": math.exp(sum(logs) / len(logs)) if logs else None,
            "median_extra_s": median([v["extra_s"] for v in per.values() if v["extra_s"] is not None])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("KGYM_BIN", os.path.join(ROOT, "build/src/cli/kgym")))
    ap.add_argument("--lock", default="/tmp/kgym-build.lock", help="lock held by builds of the shared tree")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.5,
                    help="idle seconds before each measured evaluation (a server starts its next spare worker in "
                         "the background after each request)")
    ap.add_argument("--correct-trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    ap.add_argument("--paths", default="fresh,warm", help="fresh, warm or both")
    ap.add_argument("--out", default=None)
    ap.add_argument("--note", action="append", default=[], help="free text recorded with the results")
    args = ap.parse_args()
    paths = args.paths.split(",")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kgym-seal-cost-") as tmp:
        # Private copies of the binary and of the harness it runs, taken under the build lock: the shared tree
        # may be rebuilt or edited while this runs, and the two must match.
        bin_ = os.path.join(tmp, "kgym")
        harness = os.environ.get("KGYM_HARNESS_PATH") or os.path.join(tmp, "python")
        with open(args.lock, "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            shutil.copy2(args.bin, bin_)
            # What the copies were taken from (the tree may move on while the benchmark runs).
            commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "python",
                                    "CMakeLists.txt"], capture_output=True, text=True).stdout.strip()
            built = datetime.datetime.fromtimestamp(os.path.getmtime(args.bin), datetime.timezone.utc).isoformat()
            if harness.startswith(tmp):
                shutil.copytree(os.path.join(ROOT, "python", "kgym_harness"), os.path.join(harness, "kgym_harness"),
                                ignore=shutil.ignore_patterns("__pycache__"))
        os.environ["KGYM_HARNESS_PATH"] = harness
        digest = hashlib.sha256(open(bin_, "rb").read()).hexdigest()
        results = {}
        if "fresh" in paths:
            samples = {c[0]: {"sealed": [], "unsealed": []} for c in CANDIDATES}
            for rep in range(args.reps):
                for c in CANDIDATES:
                    for sealed in ((True, False) if rep % 2 == 0 else (False, True)):
                        time.sleep(args.gap)
                        x = eval_once(args, bin_, c, sealed, tmp)
                        samples[c[0]]["sealed" if sealed else "unsealed"].append(x)
                print("fresh: repetition %d/%d done" % (rep + 1, args.reps), file=sys.stderr)
            results["fresh"] = {"process_wall": summarise(samples, "wall_s"),
                                "evaluation_s": summarise(samples, "evaluation_s"), "samples": samples}
        if "warm" in paths:
            servers = {s: start_server(bin_, s, tmp, "sealed" if s else "unsealed") for s in (True, False)}
            try:
                samples = {c[0]: {"sealed": [], "unsealed": []} for c in CANDIDATES}
                for c in CANDIDATES:  # untimed: fills each server's reference cache and its zygote's imports
                    for s in (True, False):
                        post_once(args, servers[s][1], c, -1)
                for rep in range(args.reps):
                    for c in CANDIDATES:
                        for sealed in ((True, False) if rep % 2 == 0 else (False, True)):
                            time.sleep(args.gap)  # lets the previous request's background work finish
                            x = post_once(args, servers[sealed][1], c, rep)
                            samples[c[0]]["sealed" if sealed else "unsealed"].append(x)
                    print("warm: repetition %d/%d done" % (rep + 1, args.reps), file=sys.stderr)
            finally:
                for proc, _, _ in servers.values():
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
            results["warm"] = {"request_wall": summarise(samples, "wall_s"),
                               "evaluation_s": summarise(samples, "evaluation_s"), "samples": samples,
                               "server_commands": {("sealed" if s else "unsealed"): " ".join(v[2])
                                                   for s, v in servers.items()}}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    goal = 1.10
    verdict = {}
    for path, res in results.items():
        for key, summ in res.items():
            if isinstance(summ, dict) and "ratio" in summ:
                verdict["%s.%s" % (path, key)] = {"ratio": summ["ratio"], "sum_ratio": summ["sum_ratio"],
                                                  "goal_met": summ["ratio"] is not None
                                                  and summ["ratio"] <= goal}
    out = {"benchmark": "seal_cost", "command": " ".join([sys.argv[0]] + sys.argv[1:]), "git_commit": commit,
           "source_tree_dirty": dirty.splitlines(), "binary_sha256": digest, "binary_built": built,
           "machine": {"uname": " ".join(platform.uname()), "cpu": cpu, "cores": os.cpu_count()},
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "load_average_before": load_before, "load_average_after": os.getloadavg(),
           "reps": args.reps, "gap_s": args.gap, "correct_trials": args.correct_trials, "perf_trials": args.perf_trials,
           "goal_ratio": goal, "verdict": verdict, "notes": args.note, "results": results}
    path = args.out or os.path.join(ROOT, "bench/results", "seal_cost-%s.json" % socket.gethostname())
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print("%-36s %10s %10s %7s" % ("", "sealed", "unsealed", "ratio"))
    for p_, res in results.items():
        for key, summ in res.items():
            if not (isinstance(summ, dict) and "per_candidate" in summ):
                continue
            print("%s / %s (median seconds)" % (p_, key))
            for name, v in summ["per_candidate"].items():
                print("  %-34s %10.4f %10.4f %7.3f" % (name, v["sealed"], v["unsealed"], v["ratio"]))
            print("  %-34s %10.4f %10.4f %7.3f" % ("sum of medians", summ["sum_sealed_s"], summ["sum_unsealed_s"],
                                                   summ["sum_ratio"]))
            print("  %-34s %10s %10s %7.3f  goal <= %.2f: %s" % (
                "geometric mean of ratios", "", "", summ["ratio"], goal, "met" if summ["ratio"] <= goal else "NOT met"))
            print("  %-34s %10.4f" % ("median extra seconds (sealed-unsealed)", summ["median_extra_s"]))
    print("raw results: " + path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
