#!/usr/bin/python3
"""The gym at its physical limit (issue 40): evaluations per GPU-hour of `kgym serve` on a broad KernelBench mix,
against the limit set by the mix's own required device work, with every evaluation's account summed.

Mix: KernelBench problems of level 1 and level 2 (--l1, --l2: convolutions 2-D/3-D/transposed, GEMMs, norms,
reductions, activations), each reference renamed `ModelNew` as its own candidate, `--copies` of each. For each slot
count of --slots, one `kgym serve`: a warm pass (one copy of every problem: the references are made, once per problem
and server, as in an RL run's first step) and then the measured pass (`--copies` more of every problem, fed by
`--clients` concurrent clients speaking KernelGYM's protocol). Then KernelBench's own harness (a fresh process per
evaluation, its batch protocol) on one copy of each problem within --kb-budget seconds.

Definitions (written into the output with the numbers):
  required device work of an evaluation  its default correctness trials and its reported timed calls, from the
                                          candidate's kernel timeline (metadata.account.gpu.required_s)
  limit_evals_per_gpu_hour               3600 / mean required device work per evaluation of the measured pass: what
                                          one GPU would do running only required work back to back
  fraction_of_limit                      evals_per_gpu_hour / limit
  busy_fraction                          all device work this server caused in the measured pass (every candidate
                                          worker's operations: required, checking, transfers and load; and the
                                          references made in it) / the pass's wall
  required_busy_fraction                 required device work / wall (the same as fraction_of_limit, by definition)
  checking_share                         checking device work / required device work (src/eval/account.h)

Writes OUT/gym_limit.json (command, commit, machine, date, every record) and prints one table. `--device cpu`
rehearses the whole run here (small sizes; device work is then unknown and the GPU fields are null).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "throughput"))
import kb_mix  # noqa: E402
import kb_runners  # noqa: E402

# Level 1 at KernelBench's sizes, those whose inputs and outputs stay under ~1 GB (the multi-GB ones are the level-1
# wall figure's, kb_report.level1_figure), and the 13 level-2 problems of research/throughput-kernelbench-l2.md.
L1 = "1,10,40,54,59,61,88,95"  # GEMM, 3-D tensor GEMM, LayerNorm, Conv3d x2, ConvTranspose3d, GELU, CrossEntropy
L2 = "1,9,12,27,34,41,49,56,63,70,78,85,92"


def renamed_mix(kb_dir, l1, l2, copies, timeout_s):
    mix = []
    for level, ids in ((1, l1), (2, l2)):
        want = [int(x) for x in ids.split(",") if x.strip()]
        for pid, name, path in kb_mix.select_problems(kb_mix.list_problems(kb_dir, level), want):
            ref = open(path).read()
            for i in range(copies + 1):  # copy 0: the warm pass
                mix.append({"id": "L%d-%d-%02d" % (level, pid, i), "level": level, "problem_id": pid,
                            "problem": "L%d/%s" % (level, name), "kind": "correct", "expected": "correct",
                            "ref": ref, "kernel": re.sub(r"\bModel\b", "ModelNew", ref),
                            "timeout_s": timeout_s, "copy": i})
    return mix


def account_sums(records):
    """Sums of the account's wall parts, hold parts and device work over the completed records."""
    wall, hold, gpu = {}, {}, {}
    known = 0
    for r in records:
        a = r.get("account") or {}
        for k, v in (a.get("wall") or {}).items():
            wall[k] = wall.get(k, 0.0) + v
        for k, v in (a.get("hold_parts") or {}).items():
            if isinstance(v, (int, float)):
                hold[k] = hold.get(k, 0.0) + v
        g = a.get("gpu") or {}
        if g.get("known"):
            known += 1
            for k, v in (g.get("parts_s") or {}).items():
                gpu[k] = gpu.get(k, 0.0) + v
    return {"wall_s": wall, "hold_parts_s": hold, "gpu_s": gpu, "gpu_known": known,
            "frozen_s": sum((r.get("account") or {}).get("frozen_s", 0.0) for r in records)}


def references_made(records):
    """Device seconds of the references made while these records ran (once per cache key)."""
    seen = {}
    for r in records:
        a = r.get("account") or {}
        if r.get("reference_cache_key") and a.get("reference_gpu_s") is not None:
            seen[r["reference_cache_key"]] = a["reference_gpu_s"]
    return seen


def summarise(records, wall, before_keys):
    done = [r for r in records if r.get("completed")]
    sums = account_sums(done)
    g = sums["gpu_s"]
    required = g.get("correctness", 0.0) + g.get("timed", 0.0)
    checking = g.get("checks", 0.0) + g.get("harness", 0.0)
    refs = {k: v for k, v in references_made(done).items() if k not in before_keys}
    known = sums["gpu_known"] == len(done) and done
    rate = len(done) / wall * 3600 if wall > 0 else 0.0
    limit = 3600 / (required / len(done)) if known and required > 0 else None
    return {"evaluations": len(records), "completed": len(done), "wall_s": wall, "evals_per_gpu_hour": rate,
            "all_correct": bool(done) and len(done) == len(records) and all(r["verdict"] == "correct" for r in done),
            "verdicts": {v: sum(r["verdict"] == v for r in done) for v in sorted({r["verdict"] for r in done})},
            "required_gpu_s": required if known else None, "checking_gpu_s": checking if known else None,
            "load_gpu_s": g.get("load") if known else None, "transfers_gpu_s": g.get("transfers") if known else None,
            "references_made_gpu_s": sum(refs.values()),
            "limit_evals_per_gpu_hour": limit, "fraction_of_limit": rate / limit if limit else None,
            "required_busy_fraction": required / wall if known and wall > 0 else None,
            "busy_fraction": (required + checking + g.get("load", 0.0) + g.get("transfers", 0.0) + sum(refs.values())) / wall
            if known and wall > 0 else None,
            "checking_share": checking / required if known and required > 0 else None,
            "median_wall_per_evaluation_s": statistics.median([r["wall_s"] for r in done]) if done else None,
            "account": sums}


def run_slots(args, entry, mix, tmp):
    setting = kb_runners.kgym_setting("kgym:" + entry, 16)  # "16", "16:spares4", ...
    slots, tag = setting["slots"], kb_runners.kgym_tag(setting)
    proc, url, cmd = kb_runners.start_kgym(args, setting, tmp)
    try:
        warm = [c for c in mix if c["copy"] == 0]
        measured = [c for c in mix if c["copy"] > 0]
        wrecs, wwall = kb_runners.feed(url + "/evaluate", warm, args, args.warm_budget, "kgym", setting,
                                       "w%s-" % tag, kb_runners.kgym_body, kb_runners.kgym_verdict)
        before = set(references_made(wrecs.values()))
        mrecs, mwall = kb_runners.feed(url + "/evaluate", measured, args, args.budget, "kgym", setting,
                                       "m%s-" % tag, kb_runners.kgym_body, kb_runners.kgym_verdict)
    finally:
        proc.send_signal(kb_runners.signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    out = {"slots": slots, "setting": entry, "command": cmd, "warm": summarise(list(wrecs.values()), wwall, set()),
           "measured": summarise(list(mrecs.values()), mwall, before)}
    out["records"] = list(wrecs.values()) + list(mrecs.values())
    return out


def machine():
    gpu = ""
    if shutil.which("nvidia-smi"):
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    return {"uname": " ".join(platform.uname()), "cpu": cpu, "cores": os.cpu_count(), "gpu": gpu,
            "hostname": socket.gethostname()}


def table(out):
    rows = ["| setting | done | wall s | evals/GPU-h | limit | fraction | busy | required busy | checking share | "
            "median wall/eval s |", "|---|---|---|---|---|---|---|---|---|---|"]
    f = lambda x, p=3: "-" if x is None else ("%.*f" % (p, x))  # noqa: E731
    for s in [r for r in out["runs"] if "measured" in r]:
        m = s["measured"]
        rows.append("| %s | %d/%d | %.1f | %.0f | %s | %s | %s | %s | %s | %s |" % (
            s["setting"], m["completed"], m["evaluations"], m["wall_s"], m["evals_per_gpu_hour"],
            f(m["limit_evals_per_gpu_hour"], 0), f(m["fraction_of_limit"]), f(m["busy_fraction"]),
            f(m["required_busy_fraction"]), f(m["checking_share"]), f(m["median_wall_per_evaluation_s"], 1)))
    for s in [r for r in out["runs"] if "measured" in r]:
        a = s["measured"]["account"]
        total = sum(a["wall_s"].values()) or 1
        parts = ", ".join("%s %.0f%%" % (k, 100 * v / total) for k, v in sorted(a["wall_s"].items(), key=lambda kv: -kv[1]))
        rows.append("\n%s: evaluation wall by part (sum %.0f s): %s; frozen by others' holds %.0f s" % (
            s["setting"], total, parts, a["frozen_s"]))
        rows.append("  hold parts (s): " + ", ".join("%s %.2f" % kv for kv in sorted(a["hold_parts_s"].items())))
        rows.append("  device work (s): " + ", ".join("%s %.2f" % kv for kv in sorted(a["gpu_s"].items())))
    kb = out.get("kernelbench")
    if kb:
        rows.append("\nKernelBench's harness: %d/%d in %.0f s = %.0f evals/GPU-h; kgym best %.0f = %.1fx" % (
            kb["completed"], kb["evaluations"], kb["wall_s"], kb["evals_per_gpu_hour"],
            out["evals_per_gpu_hour"], out["evals_per_gpu_hour"] / kb["evals_per_gpu_hour"]
            if kb["evals_per_gpu_hour"] else 0))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("KGYM_BIN", os.path.join(ROOT, "build/src/cli/kgym")))
    ap.add_argument("--kernelbench", default=os.path.join(ROOT, ".kb", "KernelBench"))
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--gpu", default="0")
    ap.add_argument("--l1", default=L1)
    ap.add_argument("--l2", default=L2)
    ap.add_argument("--copies", type=int, default=3, help="measured copies of each problem (plus one warm copy)")
    ap.add_argument("--slots", default="8,16,32")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--correct-trials", type=int, default=5)
    ap.add_argument("--perf-trials", type=int, default=100)
    ap.add_argument("--warm-budget", type=float, default=90)
    ap.add_argument("--budget", type=float, default=90, help="seconds for each measured pass")
    ap.add_argument("--kb-budget", type=float, default=90, help="seconds for KernelBench's harness (0: skip)")
    ap.add_argument("--python", default=os.environ.get("KGYM_PYTHON", "python3"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "gym-limit"))
    args = ap.parse_args()
    # What kb_runners reads of its arguments.
    args.gpus = "none" if args.device == "cpu" else args.gpu
    args.size = "small" if args.device == "cpu" else ""
    args.timeout = 300
    args.kernelbench = os.path.abspath(args.kernelbench)
    os.makedirs(args.out, exist_ok=True)
    mix = renamed_mix(args.kernelbench, args.l1, args.l2, args.copies, args.timeout)
    if not mix:
        print("no KernelBench problems under %s" % args.kernelbench, file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="kgym-gym-limit-")
    out = {"benchmark": "gym-limit", "command": " ".join(sys.argv),
           "git_commit": os.environ.get("KGYM_BENCH_COMMIT") or subprocess.run(
               ["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
           "machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "definitions": __doc__.split("Definitions (written into the output with the numbers):")[1].split(
               "Writes OUT")[0].strip(),
           "problems": sorted({c["problem"] for c in mix}), "copies": args.copies,
           "correct_trials": args.correct_trials, "perf_trials": args.perf_trials, "runs": [], "logs": tmp}
    path = os.path.join(args.out, "gym_limit.json")
    for entry in [s.strip() for s in args.slots.split(",") if s.strip()]:
        print("kgym serve %s: warm pass then measured pass" % entry, file=sys.stderr, flush=True)
        t0 = time.time()
        try:
            out["runs"].append(run_slots(args, entry, mix, tmp))
        except Exception as e:  # noqa: BLE001 - one run failing must not lose the others
            out["runs"].append({"setting": entry, "error": "%s: %s" % (type(e).__name__, e)})
        print("  %.0f s" % (time.time() - t0), file=sys.stderr, flush=True)
        json.dump(out, open(path, "w"), indent=1, default=str)
    ok = [r for r in out["runs"] if "measured" in r]
    best = max(ok, key=lambda r: r["measured"]["evals_per_gpu_hour"]) if ok else None
    if best:
        m = best["measured"]
        out.update({k: m[k] for k in ("evals_per_gpu_hour", "limit_evals_per_gpu_hour", "fraction_of_limit",
                                      "busy_fraction", "required_busy_fraction", "checking_share")})
        out["best_slots"] = best["slots"]
        out["all_correct"] = all(r["measured"]["all_correct"] and r["warm"]["all_correct"] for r in ok)
        out["slots_curve"] = [{"slots": r["slots"], "setting": r["setting"],
                               "evals_per_gpu_hour": r["measured"]["evals_per_gpu_hour"],
                               "busy_fraction": r["measured"]["busy_fraction"],
                               "fraction_of_limit": r["measured"]["fraction_of_limit"]} for r in ok]
    if args.kb_budget > 0 and args.device == "cuda":
        print("KernelBench's harness", file=sys.stderr, flush=True)
        kb_mix_one = [c for c in mix if c["copy"] == 0]
        kb = kb_runners.run_kernelbench(kb_mix_one, args, args.kb_budget, tmp)
        done = [r for r in kb["records"] if r.get("completed")]
        out["kernelbench"] = {"evaluations": len(kb["records"]), "completed": len(done), "wall_s": kb["wall_s"],
                              "evals_per_gpu_hour": len(done) / kb["wall_s"] * 3600 if kb["wall_s"] else 0,
                              "verdicts": {v: sum(r["verdict"] == v for r in done) for v in
                                           sorted({r["verdict"] for r in done})},
                              "command": kb["command"], "records": kb["records"]}
        out["kernelbench_evals_per_gpu_hour"] = out["kernelbench"]["evals_per_gpu_hour"]
    json.dump(out, open(path, "w"), indent=1, default=str)
    print(table(out))
    print("raw numbers: %s (logs in %s)" % (path, tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
