"""Per problem, the mean of kgym's timing-lock hold parts over its correct candidates (per call where it says so),
the load phase's worker start and, from a run with KGYM_TRACE_TIMING=1, the per-call trace's medians: where a
candidate's time under the lock goes. With --idle, the lock's idle gaps instead: every gap between two holds longer
than 0.3 s, with the holder after it, whose reference it was and who computed that reference (an idle lock while a
task's evaluations wait for its reference, or for their own correctness phases). Usage: kb_hold_parts.py KB_JSON
[--idle]."""
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
            quiet = [(r.get("profile") or {}).get("quiet_wait_s") for r in rs]
            quiet = [x for x in quiet if isinstance(x, (int, float))]
            ran = [(r.get("profile") or {}).get("timing_bursts_ran") for r in rs]
            if any(x is not None for x in ran):  # 3399d09 on: a candidate's bursts only where they can lower its time
                print("   bursts ran for %d of %d candidates" % (sum(1 for x in ran if x), len(rs)))
            if quiet:  # --quiet-timing: the candidate's device work waiting for other evaluations' holds
                print("   quiet wait s per candidate: mean %.3f, max %.3f" % (statistics.mean(quiet), max(quiet)))
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


def holds(run):
    """The run's lock holds (start, end, label), each distinct hold once: a reference's hold appears in the record of
    every candidate that used it."""
    out = {}
    for r in run["records"]:
        for key, suffix in (("timing_lock", ""), ("reference_timing_lock", " (reference)")):
            t = r.get(key) or {}
            if not (t.get("first_at") and t.get("last_at")):
                continue
            who = (r.get("profile") or {}).get("reference_prepared_by") if suffix else None
            # "holds" where the run took the lock more than once (a candidate's bursts), else first .. last
            for a, b in t.get("holds") or [(t["first_at"], t["last_at"])]:
                out.setdefault((round(a, 4), round(b, 4)), r["id"] + suffix + (" by " + who if who else ""))
    return sorted((a, b, label) for (a, b), label in out.items())


def idle(path, gap_s=0.3):
    for run in json.load(open(path))["runs"]:
        if run["runner"] != "kgym":
            continue
        hs = holds(run)
        if not hs:
            continue
        gaps = [(b0, a1, label) for (_, b0, _), (a1, _, label) in zip(hs, hs[1:]) if a1 - b0 > gap_s]
        print("kgym", run["setting"], "%d holds over %.1f s, %.1f s idle in %d gaps over %.1f s"
              % (len(hs), hs[-1][1] - hs[0][0], sum(a1 - b0 for b0, a1, _ in gaps), len(gaps), gap_s))
        for b0, a1, label in gaps:
            print("  %7.2f s  idle %.2f s  then %s" % (a1 - hs[0][0], a1 - b0, label))


if __name__ == "__main__":
    idle(sys.argv[1]) if "--idle" in sys.argv[2:] else main(sys.argv[1])
