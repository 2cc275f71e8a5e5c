#!/usr/bin/python3
"""Throughput of `kgym serve` against KernelGYM's protocol on a fixed mix of candidates.

Mix: tasks from tasks/ x `--candidates` (default 16) candidates each, about 30 % of them failing in various
ways (wrong output, compile error, runtime error, crash). On GPUs the correct candidates are the hand-written
Triton solutions and the wrong ones tasks/solutions/*_wrong.py; with `--gpus none` (CPU) they are the
pure-PyTorch rewrites and a perturbed copy of them.

kgym: one `kgym serve` (warm zygote, reference cached, several candidates per device, timing under a per-device
lock), fed by `--clients` concurrent POST /evaluate calls as the Dr.Kernel reward client does.
Baseline: KernelGYM's protocol, serially: a fresh process per candidate (`kgym eval`), which re-times the
reference every time.
Reports evaluations per device-hour for both, the devices' busy fraction under kgym, and whether every candidate
got the same correctness verdict. Prints one table; raw numbers go to bench/results/throughput-<host>.json.

With `--kernelbench DIR --level N` it runs KernelBench's own problems instead, side by side with KernelBench's
harness and KernelGYM's server (kernelbench_mode.py).
"""
import argparse
import concurrent.futures
import datetime
import glob
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelbench_mode  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def failing_variants(correct):
    """Candidates that fail in the ways RL rollouts do, derived from a correct one."""
    wrong = re.sub(r"(\n\s+def forward\(self[^\n]*\n)", r"\1        _kgym_scale = 1.5\n", correct, count=1)
    wrong = re.sub(r"return ([^\n]+)\n", r"return (\1) * 1.5\n", wrong, count=1) if wrong != correct else correct + "\n"
    return {
        "incorrect": wrong,
        "compile_error": correct.replace("class ModelNew", "class ModelNew(:", 1),
        "runtime_error": re.sub(r"(\n\s+def forward\(self[^\n]*\n)", r"\1        raise RuntimeError('bad launch')\n",
                                correct, count=1),
        "crash": re.sub(r"(\n\s+def forward\(self[^\n]*\n)", r"\1        import os; os._exit(3)\n", correct, count=1),
    }


def build_mix(args):
    cpu = args.gpus == "none"
    mix = []
    for ref_path in sorted(glob.glob(os.path.join(ROOT, "tasks/level*/*.py"))):
        level = os.path.basename(os.path.dirname(ref_path))
        name = os.path.splitext(os.path.basename(ref_path))[0]
        sol_dir = os.path.join(ROOT, "tasks/solutions", level)
        good = os.path.join(sol_dir, f"{name}_torch.py" if cpu else f"{name}_triton.py")
        if not os.path.exists(good):
            continue
        ref, correct = open(ref_path).read(), open(good).read()
        variants = failing_variants(correct)
        wrong_path = os.path.join(sol_dir, f"{name}_wrong.py")
        if not cpu and os.path.exists(wrong_path):
            variants["incorrect"] = open(wrong_path).read()
        # 16 candidates: 11 correct (~70 %), then 2 incorrect, compile error, runtime error, crash (~30 %).
        kinds = ["correct"] * 11 + ["incorrect", "incorrect", "compile_error", "runtime_error", "crash"]
        kinds = (kinds * ((args.candidates + len(kinds) - 1) // len(kinds)))[: args.candidates]
        for i, kind in enumerate(kinds):
            code = correct if kind == "correct" else variants[kind]
            mix.append({"id": f"{level}-{name}-{i:02d}", "task": f"{level}/{name}", "kind": kind, "ref": ref,
                        "kernel": code})
        if len({m["task"] for m in mix}) >= args.tasks:
            break
    return mix


def request_body(c, args):
    return {"task_id": c["id"], "reference_code": c["ref"], "kernel_code": c["kernel"], "backend": "triton",
            "num_correct_trials": args.correct_trials, "num_perf_trials": args.perf_trials, "timeout": args.timeout,
            "priority": "normal", "entry_point": "Model", "is_valid": False, "verbose_errors": True,
            "enable_profiling": True, "detect_decoy_kernel": True, "reference_backend": None, "size": args.size,
            "kgym_result": True}  # kgym's verdict and fields (outcome, metadata) rather than KernelGYM's answer


def post(url, body, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def run_kgym(args, mix, tmp):
    cmd = [args.bin, "serve", "--port", "0", "--store", os.path.join(tmp, "bench.sqlite"), "--gpus", args.gpus,
           "--slots-per-gpu", str(args.slots), "--cpu-slots", str(args.slots)]
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://[\d.]+:\d+)", line)
    if not m:
        raise RuntimeError("kgym serve did not start: " + line)
    url = m.group(1)
    results = {}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
        futs = {pool.submit(post, url + "/evaluate", request_body(c, args), args.timeout * 4): c for c in mix}
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            try:
                results[c["id"]] = f.result()
            except Exception as e:  # noqa: BLE001 - recorded, counted as a disagreement
                results[c["id"]] = {"error": str(e)}
    wall = time.time() - t0
    with urllib.request.urlopen(url + "/v1/metrics", timeout=30) as r:
        prom = r.read().decode()
    busy = {d: float(v) for d, v in re.findall(r'kgym_device_busy_fraction\{device="([^"]+)"\} ([\d.e+-]+)', prom)}
    proc.send_signal(signal.SIGTERM)
    proc.wait(120)
    return {"wall_s": wall, "results": results, "busy_fraction": busy, "command": " ".join(cmd)}


def run_baseline(args, mix, tmp):
    results = {}
    t0 = time.time()
    device = "cpu" if args.gpus == "none" else "cuda"
    gpu = "0" if args.gpus in ("none", "all") else args.gpus.split(",")[0]
    for c in mix:
        ref, ker = os.path.join(tmp, "ref.py"), os.path.join(tmp, "kernel.py")
        open(ref, "w").write(c["ref"])
        open(ker, "w").write(c["kernel"])
        cmd = [args.bin, "eval", "--ref", ref, "--kernel", ker, "--device", device, "--gpus", gpu, "--task-id", c["id"],
               "--num-correct-trials", str(args.correct_trials), "--num-perf-trials", str(args.perf_trials),
               "--eval-timeout", str(args.timeout)]
        if args.size:
            cmd += ["--size", args.size]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout * 4)
        try:
            results[c["id"]] = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            results[c["id"]] = {"error": p.stderr[-500:]}
    return {"wall_s": time.time() - t0, "results": results}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("KGYM_BIN", os.path.join(ROOT, "build/src/cli/kgym")))
    ap.add_argument("--gpus", default="none", help="none (CPU), all, or 0,1,...")
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--size", default=None, help="task size; default small on CPU, full on GPU")
    ap.add_argument("--correct-trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--baseline-sample", type=int, default=0,
                    help="run the serial baseline on every k-th candidate only (0 = all); rates are per evaluation")
    ap.add_argument("--out", default=None)
    kernelbench_mode.add_arguments(ap)
    args = ap.parse_args()
    if args.kernelbench:
        return kernelbench_mode.main(args)
    if args.size is None:
        args.size = "small" if args.gpus == "none" else ""
    mix = build_mix(args)
    if not mix:
        print("no tasks with solutions found under tasks/", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kgym-throughput-") as tmp:
        kg = run_kgym(args, mix, tmp)
        sample = mix[:: args.baseline_sample] if args.baseline_sample > 0 else mix
        base = run_baseline(args, sample, tmp)
    n_devices = max(1, len(kg["busy_fraction"]))
    kgym_rate = len(mix) / kg["wall_s"] * 3600 / n_devices
    base_rate = len(sample) / base["wall_s"] * 3600
    agree, compared, kinds = 0, 0, {}
    rows = []
    for c in sample:
        a, b = kg["results"].get(c["id"], {}), base["results"].get(c["id"], {})
        compared += 1
        same = a.get("correctness") == b.get("correctness") and "error" not in a and "error" not in b
        agree += same
        rows.append({"id": c["id"], "kind": c["kind"], "kgym_outcome": a.get("outcome"), "baseline_outcome": b.get("outcome"),
                     "kgym_correct": a.get("correctness"), "baseline_correct": b.get("correctness"),
                     "kgym_speedup": a.get("speedup"), "baseline_speedup": b.get("speedup"),
                     "kgym_detail": a.get("outcome_detail") or a.get("error"),
                     "baseline_detail": b.get("outcome_detail") or b.get("error")})
    for c in mix:
        o = kg["results"].get(c["id"], {}).get("outcome", "error")
        kinds.setdefault(c["kind"], {}).setdefault(o, 0)
        kinds[c["kind"]][o] += 1
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    out = {"benchmark": "throughput", "command": " ".join(sys.argv), "git_commit": commit,
           "machine": {"uname": " ".join(platform.uname()), "cpu": cpu, "cores": os.cpu_count(), "gpus": args.gpus},
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "candidates": len(mix), "tasks": len({c["task"] for c in mix}), "baseline_candidates": len(sample),
           "kgym": {"wall_s": kg["wall_s"], "evals_per_device_hour": kgym_rate, "busy_fraction": kg["busy_fraction"],
                    "devices": n_devices, "server_command": kg["command"]},
           "baseline": {"wall_s": base["wall_s"], "evals_per_device_hour": base_rate},
           "speedup_vs_baseline": kgym_rate / base_rate if base_rate else None,
           "verdicts_equal": agree, "verdicts_compared": compared, "outcomes_by_kind": kinds, "per_candidate": rows}
    path = args.out or os.path.join(ROOT, "bench/results", f"throughput-{socket.gethostname()}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    json.dump(out, open(path, "w"), indent=2)
    print(f"{'':<28} {'kgym serve':>14} {'serial baseline':>16}")
    print(f"{'candidates':<28} {len(mix):>14} {len(sample):>16}")
    print(f"{'wall time (s)':<28} {kg['wall_s']:>14.1f} {base['wall_s']:>16.1f}")
    print(f"{'evals / device-hour':<28} {kgym_rate:>14.0f} {base_rate:>16.0f}")
    busy = ", ".join(f"{d} {v:.2f}" for d, v in kg["busy_fraction"].items())
    print(f"{'device busy fraction':<28} {busy:>14}")
    print(f"{'speedup vs baseline':<28} {out['speedup_vs_baseline'] or 0:>14.1f}x")
    print(f"{'equal correctness verdicts':<28} {agree:>9}/{compared:<4}")
    print(f"raw numbers: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
