"""Adaptive trials against fixed counts on one KernelBench-mode run (bench/throughput/run_throughput.py with the
runners kgym:<slots> and kgym:<slots>:minperf0, the latter timing every one of the perf trials): per candidate the
two verdicts and times, then the verdicts that differ, the largest time difference of the correct candidates, the
timed GPU work (timed calls x the kernel's GPU time per call) of each, and evaluations per GPU-hour.

  python3 bench/gpu/adaptive_report.py kb_l2_adaptive.json [--json out.json]
"""
import argparse
import json
import statistics


def runs_by_setting(doc):
    out = {}
    for run in doc.get("runs", []):
        if run.get("runner") != "kgym":
            continue
        fixed = (run.get("setting") or {}).get("min_perf_trials") == 0
        out["fixed" if fixed else "adaptive"] = run
    return out


def timed_work_ms(rec, default_calls):
    prof = rec.get("profile") or {}
    calls = prof.get("timing_calls") or default_calls
    per = rec.get("kernel_gpu_ms") or rec.get("kernel_ms")
    return calls * per if per else 0.0


def compare(doc, perf_trials=100):
    runs = runs_by_setting(doc)
    if set(runs) != {"adaptive", "fixed"}:
        raise SystemExit("need one kgym run with adaptive trials and one with min_perf_trials 0, got %s" % list(runs))
    a = {r["id"]: r for r in runs["adaptive"]["records"]}
    f = {r["id"]: r for r in runs["fixed"]["records"]}
    rows, diffs, work = [], [], {"adaptive": 0.0, "fixed": 0.0}
    calls = {"adaptive": [], "fixed": []}
    for cid in sorted(set(a) & set(f)):
        ra, rf = a[cid], f[cid]
        row = {"id": cid, "problem": ra.get("problem"), "kind": ra.get("kind"), "verdict_adaptive": ra.get("verdict"),
               "verdict_fixed": rf.get("verdict"), "ms_adaptive": ra.get("kernel_ms"), "ms_fixed": rf.get("kernel_ms"),
               "calls_adaptive": (ra.get("profile") or {}).get("timing_calls"),
               "calls_fixed": (rf.get("profile") or {}).get("timing_calls")}
        if ra.get("verdict") == rf.get("verdict") == "correct" and row["ms_adaptive"] and row["ms_fixed"]:
            row["rel_diff"] = row["ms_adaptive"] / row["ms_fixed"] - 1
            diffs.append(abs(row["rel_diff"]))
            work["adaptive"] += timed_work_ms(ra, perf_trials)
            work["fixed"] += timed_work_ms(rf, perf_trials)
            calls["adaptive"].append(row["calls_adaptive"] or perf_trials)
            calls["fixed"].append(row["calls_fixed"] or perf_trials)
        rows.append(row)
    summ = {s.get("setting", {}).get("min_perf_trials") == 0 and "fixed" or "adaptive": s
            for s in doc.get("summaries", []) if s.get("runner") == "kgym"}
    return {"rows": rows,
            "verdicts_differ": [r["id"] for r in rows if r["verdict_adaptive"] != r["verdict_fixed"]],
            "compared": len(rows), "correct_both": len(diffs),
            "max_abs_rel_diff": max(diffs) if diffs else None,
            "median_abs_rel_diff": statistics.median(diffs) if diffs else None,
            "timed_gpu_work_ms": work,
            "timed_gpu_work_ratio": work["adaptive"] / work["fixed"] if work["fixed"] else None,
            "median_calls": {k: statistics.median(v) if v else None for k, v in calls.items()},
            "evals_per_gpu_hour": {k: s.get("evals_per_gpu_hour") for k, s in summ.items()},
            "gpu_busy": {k: s.get("gpu_busy") for k, s in summ.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kb_json")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    c = compare(json.load(open(a.kb_json)))
    print("\n## Adaptive trials against 100 calls (level-2 mix)\n")
    print("| compared | verdicts that differ | correct in both | max abs time diff | median abs time diff | "
          "timed GPU work adaptive / fixed | median calls adaptive / fixed | evals / GPU-hour adaptive / fixed |")
    print("|---|---|---|---|---|---|---|---|")
    pct = lambda x: "%.2f %%" % (100 * x) if x is not None else "-"  # noqa: E731
    e = c["evals_per_gpu_hour"]
    print("| %d | %s | %d | %s | %s | %s | %s / %s | %s / %s |" % (
        c["compared"], c["verdicts_differ"] or "none", c["correct_both"], pct(c["max_abs_rel_diff"]),
        pct(c["median_abs_rel_diff"]), "%.3f" % c["timed_gpu_work_ratio"] if c["timed_gpu_work_ratio"] else "-",
        c["median_calls"]["adaptive"], c["median_calls"]["fixed"],
        "%.0f" % e["adaptive"] if e.get("adaptive") else "-", "%.0f" % e["fixed"] if e.get("fixed") else "-"))
    if a.json:
        json.dump(c, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
