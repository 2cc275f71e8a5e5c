"""Per problem, the mean of kgym's timing-lock hold parts over its correct candidates (per call where it says so),
the load phase's worker start and, from a run with KGYM_TRACE_TIMING=1, the per-call trace's medians: where a
candidate's time under the lock goes. Usage: kb_hold_parts.py KB_JSON."""
import json
import statistics
import sys


def main(path):
    d = json.load(open(path))
    for run in d["runs"]:
        if run["runner"] != "kgym":
            continue
        print("kgym", run["setting"])
        s = [x for x in d.get("summaries", []) if x["runner"] == "kgym" and x["setting"] == run["setting"]]
        lk = (s[0].get("timing_lock") or {}) if s else {}
        if lk.get("occupancy_in_span") is not None:
            print(" lock occupancy %.3f of the run's wall, %.3f from its first acquisition to its last release (%.1f s)"
                  % (lk["occupancy"], lk["occupancy_in_span"], lk["held_span_s"]))
        by = {}
        for r in run["records"]:
            if r.get("verdict") == "correct" and isinstance(r.get("timing_lock"), dict):
                by.setdefault(r["problem"], []).append(r)
        for p, rs in sorted(by.items()):
            parts = {}
            for r in rs:
                for k, v in r["timing_lock"]["hold"].items():
                    parts.setdefault(k, []).append(v)
            calls = d.get("perf_trials", 100) + 4
            mean = {k: statistics.mean(v) for k, v in parts.items()}
            per_call = {k: round(mean[k] / calls * 1000, 3) for k in ("calls_s", "arm_s", "bracket_s", "watch_s")
                        if k in mean}
            start = [(r.get("profile") or {}).get("worker_start_s") for r in rs]
            start = [x for x in start if isinstance(x, (int, float))]
            print(" %-40s n=%d kernel_ms=%.3f hold_s=%.3f per_call_ms=%s bursts_s=%.3f fetch_s=%.3f start_s=%s"
                  % (p[:40], len(rs), statistics.median(r["kernel_gpu_ms"] or 0 for r in rs),
                     statistics.mean(r["timing_lock"]["hold_s"] for r in rs), per_call, mean.get("bursts_s", 0),
                     mean.get("fetch_s", 0), round(statistics.mean(start), 2) if start else None))
            traces = [(r.get("profile") or {}).get("trace_median_ms") for r in rs]
            traces = [t for t in traces if t]
            tails = [(r.get("profile") or {}).get("trace_bracket_tail_ms") for r in rs]
            tails = [t for t in tails if t]
            if tails:
                print("   bracket tail ms (median over candidates):",
                      {k: round(statistics.median(t[k] for t in tails), 3) for k in tails[0]})
            if traces:  # KGYM_TRACE_TIMING=1: the per-call series' medians, then their median over the candidates
                keys = sorted({k for t in traces for k in t})
                print("   trace ms:", {k: round(statistics.median(t[k] for t in traces if t.get(k) is not None), 3)
                                       for k in keys if any(t.get(k) is not None for t in traces)})


if __name__ == "__main__":
    main(sys.argv[1])
