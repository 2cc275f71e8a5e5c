"""`run_throughput.py --kernelbench DIR --level N`: throughput on KernelBench's own problems, side by side with
KernelBench's harness and KernelGYM's server (kb_mix.py builds the candidates, kb_runners.py runs them, kb_report.py
summarises). Writes one JSON (command, commit, machine, date, every record, summaries, agreement) and, where
matplotlib is installed, a plot of evaluations per GPU-hour against kgym's slots.

  --runners kgym:4,kernelbench,kernelgym   what runs, in that order (kgym:<slots> may repeat: a sweep;
                                            kgym:<slots>:spares<N> passes --spare-workers N,
                                            kgym:<slots>:lookahead<N> --reference-lookahead N)
  --budget kernelbench=150                  seconds a runner may take (stops submitting, later ones unfinished)
  --cap kernelgym=8                         at most N candidates for a runner, taken across the problems in turn
                                            (one whose queue could not finish the whole mix within any budget)
  --device cpu                              dry run: kgym on the CPU (Triton's interpreter when KGYM_TRITON_PATH
                                            holds Triton, else a torch epilogue), tiny sizes via --size small
"""
import datetime
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile

import kb_mix
import kb_report
import kb_runners

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def add_arguments(ap):
    g = ap.add_argument_group("KernelBench mode (--kernelbench DIR)")
    g.add_argument("--kernelbench", metavar="DIR", help="a KernelBench checkout (KernelBench/level<N>/*.py, src/)")
    g.add_argument("--level", type=int, default=2)
    g.add_argument("--problems", default="", help="problem ids, e.g. 12,1 (default: the first --max-problems)")
    g.add_argument("--max-problems", type=int, default=2)
    g.add_argument("--per-problem", type=int, default=16, help="candidates per problem")
    g.add_argument("--correct-only", action="store_true", help="only the correct candidates (level-1 figure)")
    g.add_argument("--runners", default="", help="default: kgym:<--slots>,kernelbench,kernelgym on a GPU, "
                                                  "kgym:<--slots> on the CPU")
    g.add_argument("--budget", action="append", default=[], metavar="RUNNER=S", help="time budget of a runner")
    g.add_argument("--cap", action="append", default=[], metavar="RUNNER=N", help="candidates a runner may take")
    g.add_argument("--device", choices=("cpu", "cuda"), help="cpu = --gpus none; cuda = --gpus 0 unless given")
    g.add_argument("--python", default=os.environ.get("KGYM_PYTHON", "python3"),
                   help="interpreter for KernelBench's harness and KernelGYM")
    g.add_argument("--kernelgym", default=os.path.join(ROOT, ".kb", "KernelGYM"), help="folder holding kernelgym/")
    g.add_argument("--redis-server", default=os.path.join(ROOT, ".kb", "redis", "redis-server"))
    g.add_argument("--epilogue", choices=("triton", "torch"), help="default: triton on a GPU; on the CPU triton "
                                                                    "if KGYM_TRITON_PATH holds it, else torch")
    g.add_argument("--timeout-candidate-s", type=int, default=15, help="timeout of the never-returning candidate")
    g.add_argument("--plot", default=None, help="PNG path (default: next to --out)")
    g.add_argument("--logs", default=None, help="folder for the evaluators' logs (default: a new temporary one)")


def _triton_importable(python):
    env = dict(os.environ, PYTHONPATH=os.environ.get("KGYM_TRITON_PATH", ""))
    return subprocess.run([python, "-c", "import triton.language"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def _resolve(args):
    if args.device == "cpu":
        args.gpus = "none"
    elif args.device == "cuda" and args.gpus == "none":
        args.gpus = "0"
    args.device = "cpu" if args.gpus == "none" else "cuda"
    args.gpu = "0" if args.gpus in ("none", "all") else args.gpus.split(",")[0]
    if args.epilogue is None:
        cpu_python = os.environ.get("KGYM_PYTHON", "/usr/bin/python3")
        args.epilogue = "triton" if args.device == "cuda" or _triton_importable(cpu_python) else "torch"
    if not args.runners:
        args.runners = "kgym:%d" % args.slots + (",kernelbench,kernelgym" if args.device == "cuda" else "")
    # Absolute: KernelGYM's processes run in a folder of their own.
    args.kernelbench, args.kernelgym = os.path.abspath(args.kernelbench), os.path.abspath(args.kernelgym)
    args.redis_server = os.path.abspath(args.redis_server)
    lib = os.path.join(os.path.dirname(args.redis_server), "lib")
    args.redis_lib = lib if os.path.isdir(lib) else ""
    if not os.path.exists(args.redis_server):
        args.redis_server = shutil.which("redis-server") or args.redis_server
    budgets = {}
    for b in args.budget:
        name, _, secs = b.partition("=")
        budgets[name] = float(secs)
    args.budgets = budgets
    args.caps = {name: int(n) for name, _, n in (c.partition("=") for c in args.cap)}


def capped(mix, n):
    """At most n candidates of the mix, taken across its problems in turn (each problem's in its own order)."""
    if n is None or n >= len(mix):
        return mix
    by_problem = {}
    for c in mix:
        by_problem.setdefault(c["problem"], []).append(c)
    out, i = [], 0
    while len(out) < n:
        out += [cs[i] for cs in by_problem.values() if i < len(cs)][:n - len(out)]
        i += 1
    return out


def _machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    gpu = ""
    if shutil.which("nvidia-smi"):
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    return {"uname": " ".join(platform.uname()), "cpu": cpu, "cores": os.cpu_count(), "gpu": gpu,
            "hostname": socket.gethostname()}


def _commit():
    c = os.environ.get("KGYM_BENCH_COMMIT")
    if c:
        return c
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def main(args):
    _resolve(args)
    ids = [int(x) for x in args.problems.split(",") if x.strip()]
    mix = kb_mix.build_mix(args.kernelbench, args.level, ids or None, None if ids else args.max_problems,
                           args.per_problem, args.epilogue, args.timeout, args.timeout_candidate_s)
    if args.correct_only:
        mix = kb_mix.correct_only(mix)
    if not mix:
        print("no KernelBench problems under %s/KernelBench/level%d" % (args.kernelbench, args.level), file=sys.stderr)
        return 2
    if args.device == "cpu" and args.epilogue == "triton":
        os.environ["TRITON_INTERPRET"] = "1"
    trials = args.correct_trials + args.perf_trials
    path = args.out or os.path.join(ROOT, "bench/results", "throughput-kernelbench-l%d-%s.json"
                                    % (args.level, socket.gethostname()))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    out = {"benchmark": "throughput-kernelbench", "command": " ".join(sys.argv), "git_commit": _commit(),
           "machine": _machine(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "level": args.level, "problems": sorted({c["problem"] for c in mix}), "candidates": len(mix),
           "epilogue": args.epilogue, "correct_trials": args.correct_trials, "perf_trials": args.perf_trials,
           "kinds": {k: sum(c["kind"] == k for c in mix) for k in kb_mix.KINDS},
           "definitions": {"busy_fraction": kb_report.__doc__.strip(), "runners": kb_runners.__doc__.strip()},
           "runs": [], "summaries": []}
    tmp = args.logs or tempfile.mkdtemp(prefix="kgym-kb-throughput-")
    os.makedirs(tmp, exist_ok=True)
    out["logs_dir"] = tmp
    runs = []
    for name in [n.strip() for n in args.runners.split(",") if n.strip()]:
        budget = args.budgets.get(name, args.budgets.get(name.split(":")[0], 3600.0))
        sub = capped(mix, args.caps.get(name, args.caps.get(name.split(":")[0])))
        print("running %s (budget %.0f s) on %d candidates" % (name, budget, len(sub)), file=sys.stderr, flush=True)
        try:
            runs.append(kb_runners.run_runner(name, sub, args, budget, tmp))
        except Exception as e:  # noqa: BLE001 - one runner failing to start must not lose the others' results
            runs.append(kb_runners.failed_run(name, sub, "%s: %s" % (type(e).__name__, e)))
        cupti = kb_report.problem_times([r for run in runs if run["runner"] == "kgym" for r in run["records"]])
        out["runs"] = runs
        out["summaries"] = [kb_report.summarise(run, trials, cupti) for run in runs]
        out["agreement"] = kb_report.agreement(runs, mix)
        kgym_runs = [run for run in runs if run["runner"] == "kgym"]
        if (args.level == 1 or args.correct_only) and kgym_runs:
            out["level1"] = kb_report.level1_figure(kgym_runs[0], args.correct_trials, args.perf_trials)
        json.dump(out, open(path, "w"), indent=1, default=str)  # after every runner: a cut-short run keeps its part
    print(kb_report.table(out["summaries"]))
    ag = out["agreement"]
    print("\ncorrectness verdicts agree on %d of %d candidates compared; disagreements:" % (ag["agree_on_correctness"],
                                                                                           ag["compared"]))
    for d in ag["disagreements"]:
        print("  %(id)s %(runner)s said %(verdict)s, expected %(expected)s: %(why)s" % d)
    if "level1" in out:
        l1 = out["level1"]
        print("level %d: wall / pure GPU work: median per evaluation %s, whole run %s" % (
            args.level, l1["ratio_median"], l1["aggregate_ratio"]))
    plot = args.plot or os.path.splitext(path)[0] + ".png"
    if any(s["runner"] == "kgym" for s in out["summaries"]) and kb_report.plot(out["summaries"], plot):
        print("plot: %s" % plot)
    print("raw numbers: %s (logs in %s)" % (path, tmp))
    return 0
