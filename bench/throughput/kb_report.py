"""Summaries of the KernelBench-mode runs (kb_runners.py records): evaluations per GPU-hour, GPU busy fraction,
per-phase time, the verdict agreement table, the level-1 wall-versus-GPU-work figure, and the slots plot.

Required GPU work (the numerator of the busy fraction) is the device time of the runs the protocol needs: for
every problem the runner touched, the reference's correctness and timed calls once, (C + P) x reference time per
call; for every candidate the runner judged correct, its correctness and timed calls, (C + P) x candidate time
per call (C = correctness trials, P = timed calls). Candidates judged failing count nothing (a lower bound).
Two estimates: `own` uses each runner's own per-call times (kgym: CUPTI kernel sums; KernelBench and KernelGYM:
their mean CUDA-event runtimes, which include launch gaps, so theirs is an upper estimate of the kernel time);
`cupti` uses kgym's CUPTI times of the same problems for every runner's correct candidates of kind "correct"
(the same code on the same GPU), so the three are compared on one numerator.
"""
import collections
import statistics


def _median(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def problem_times(records):
    """problem -> (candidate ms per call, reference ms per call): medians over correct candidates of kind
    'correct' and over every record's reference time."""
    out = {}
    for p in {r["problem"] for r in records}:
        rs = [r for r in records if r["problem"] == p and r["completed"]]
        cand = _median([r["kernel_gpu_ms"] for r in rs if r["kind"] == "correct" and r["verdict"] == "correct"])
        out[p] = (cand, _median([r["reference_gpu_ms"] for r in rs]))
    return out


def required_gpu_s(records, trials, times=None):
    """Seconds of required device work in `records` (completed ones); `times` (problem_times of another run)
    replaces the candidates' and references' own times where given."""
    done = [r for r in records if r["completed"]]
    own = problem_times(done)
    total = 0.0
    for p in {r["problem"] for r in done}:
        ref = (times.get(p, (None, None))[1] if times else None) or own[p][1]
        total += trials * (ref or 0.0)
    for r in done:
        if r["verdict"] != "correct":
            continue
        ms = r["kernel_gpu_ms"]
        if times and r["kind"] == "correct" and times.get(r["problem"], (None,))[0]:
            ms = times[r["problem"]][0]
        total += trials * (ms or 0.0)
    return total / 1000.0


def phase_sums(records):
    out = {}
    for r in records:
        for k, v in (r.get("phase_s") or {}).items():
            if isinstance(v, (int, float)):
                out[k] = out.get(k, 0.0) + v
    return out


def lock_use(records, wall):
    """The device timing lock (kgym's metadata.timing_lock, reference_timing_lock): acquisitions, total wait and hold
    of the candidates and of each run of a reference once (by its cache key and first acquisition: cached references
    repeat their notes, a reference computed again has other times), the hold's parts summed, and occupancy = total
    hold / the run's wall (the share of wall some timed part held the GPU); occupancy_in_span the same over the span
    from the first acquisition to the last release, where recorded; reference.made_again: the cache keys computed
    more than once. None where no record carries it (the other runners)."""
    cand = [r["timing_lock"] for r in records if isinstance(r.get("timing_lock"), dict)]
    refs = {}
    for r in records:
        lock = r.get("reference_timing_lock")
        if isinstance(lock, dict):
            refs.setdefault((r.get("reference_cache_key") or r["problem"], lock.get("first_at")), lock)
    if not cand and not refs:
        return None
    out = {}
    for name, uses in (("candidate", cand), ("reference", list(refs.values()))):
        parts = {}
        for u in uses:
            for k, v in (u.get("hold") or {}).items():
                if isinstance(v, (int, float)):
                    parts[k] = parts.get(k, 0.0) + v
        out[name] = {"runs": len(uses), "acquisitions": sum(u.get("acquisitions", 0) for u in uses),
                     "wait_s": sum(u.get("wait_s", 0.0) for u in uses),
                     "hold_s": sum(u.get("hold_s", 0.0) for u in uses), "hold_parts_s": parts}
    runs_of = collections.Counter(key for key, _ in refs)
    out["reference"]["made_again"] = sorted(k for k, n in runs_of.items() if n > 1)
    hold = out["candidate"]["hold_s"] + out["reference"]["hold_s"]
    out["hold_s"] = hold
    out["wait_s"] = out["candidate"]["wait_s"] + out["reference"]["wait_s"]
    out["occupancy"] = hold / wall if wall > 0 else None
    # From the first acquisition to the last release (where the records carry the wall-clock times): the lock's idle
    # time between holds, apart from the run's start (workers, references) and its end.
    firsts = [u["first_at"] for u in cand + list(refs.values()) if isinstance(u.get("first_at"), (int, float))]
    lasts = [u["last_at"] for u in cand + list(refs.values()) if isinstance(u.get("last_at"), (int, float))]
    if firsts and lasts and max(lasts) > min(firsts):
        out["held_span_s"] = max(lasts) - min(firsts)
        out["occupancy_in_span"] = hold / out["held_span_s"]
    return out


def summarise(run, trials, cupti_times):
    recs = run["records"]
    done = [r for r in recs if r["completed"]]
    wall = run["wall_s"] or 0.0
    own = required_gpu_s(recs, trials)
    cupti = required_gpu_s(recs, trials, cupti_times) if cupti_times else None
    verdicts = {}
    for r in done:
        verdicts.setdefault(r["kind"], {}).setdefault(r["verdict"], 0)
        verdicts[r["kind"]][r["verdict"]] += 1
    return {"runner": run["runner"], "setting": run["setting"], "candidates": len(recs), "completed": len(done),
            "wall_s": wall, "startup_s": run.get("startup_s"), "budget_s": run.get("budget_s"),
            "evals_per_gpu_hour": len(done) / wall * 3600 if wall > 0 else None,
            "required_gpu_s_own": own, "busy_fraction_own": own / wall if wall > 0 else None,
            "required_gpu_s_cupti": cupti,
            "busy_fraction_cupti": cupti / wall if cupti is not None and wall > 0 else None,
            "gpu_time_source": sorted({r["gpu_time_source"] for r in done if r["gpu_time_source"]}),
            "phase_s_sum": phase_sums(done), "wall_s_per_evaluation_median": _median([r["wall_s"] for r in done]),
            "verdicts_by_kind": verdicts, "device_busy_fraction_kgym_metric": run.get("device_busy_fraction"),
            "timing_lock": lock_use(done, wall), "error": run.get("error")}


def agreement(runs, mix):
    """Per candidate the verdict of each runner (the first run of each runner name), which runners passed it,
    and every disagreement on correctness, classified against the candidate's expected verdict."""
    first = {}
    for run in runs:
        first.setdefault(run["runner"], {r["id"]: r for r in run["records"]})
    rows, disagreements = [], []
    for c in mix:
        row = {"id": c["id"], "kind": c["kind"], "expected": c["expected"]}
        passed = {}
        for name, recs in first.items():
            r = recs.get(c["id"])
            row[name] = r["verdict"] if r and r["completed"] else None
            if r and r["completed"]:
                passed[name] = r["passed"]
        rows.append(row)
        if len(set(passed.values())) <= 1:
            continue
        should_pass = c["expected"] == "correct"
        for name, p in passed.items():
            if p == should_pass:
                continue
            why = ("fooled (expected)" if name in c["fooled_expected"] else "fooled") if p else "false failure"
            disagreements.append({"id": c["id"], "kind": c["kind"], "runner": name, "verdict": row[name],
                                  "expected": c["expected"], "why": why})
    compared = [r for r in rows if sum(r[n] is not None for n in first) >= 2]
    agree = 0
    for r in compared:
        vals = {first[n][r["id"]]["passed"] for n in first if r[n] is not None}
        agree += len(vals) == 1
    vs_expected = {n: sum(1 for c in mix if first[n].get(c["id"], {}).get("completed")
                          and first[n][c["id"]]["verdict"] == c["expected"]) for n in first}
    return {"runners": list(first), "rows": rows, "compared": len(compared), "agree_on_correctness": agree,
            "disagreements": disagreements, "matches_expected_verdict": vs_expected}


def level1_figure(run, correct_trials, perf_trials):
    """Per evaluation: wall (kgym's evaluation_s, which under concurrency includes waiting for the timing lock)
    against its pure GPU work, (C + P) x candidate time per call + C x reference time per call (the reference's own
    timing is shared by the task's evaluations). In aggregate: the run's wall over its required GPU work (see
    required_gpu_s: the reference once per problem), i.e. 1 / busy fraction."""
    records = run["records"]
    rows = []
    for r in records:
        if not r["completed"] or r["verdict"] != "correct" or not r["kernel_gpu_ms"]:
            continue
        calls_ms = (correct_trials + perf_trials) * r["kernel_gpu_ms"] + correct_trials * (r["reference_gpu_ms"] or 0)
        gpu = calls_ms / 1e3
        wall = (r.get("phase_s") or {}).get("evaluation") or r["wall_s"]
        rows.append({"id": r["id"], "problem": r["problem"], "wall_s": wall, "pure_gpu_s": gpu,
                     "ratio": wall / gpu if gpu > 0 else None, "phase_s": r.get("phase_s")})
    required = required_gpu_s(records, correct_trials + perf_trials)
    return {"evaluations": rows, "ratio_median": _median([x["ratio"] for x in rows]),
            "aggregate_wall_s": run["wall_s"], "aggregate_required_gpu_s": required,
            "aggregate_ratio": run["wall_s"] / required if required > 0 else None,
            "definition": "wall per evaluation (metadata.evaluation_s) / ((C+P) x candidate CUPTI kernel ms + "
                          "C x reference CUPTI kernel ms)"}


def table(summaries):
    lines = ["| runner | setting | done/cands | wall s | evals/GPU-h | busy (own) | busy (cupti) | median wall/eval s "
             "| lock hold s (occupancy) | lock wait s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        f = lambda x, fmt: (fmt % x) if isinstance(x, (int, float)) else "-"  # noqa: E731
        lk = s.get("timing_lock") or {}
        hold = "%s (%s)" % (f(lk.get("hold_s"), "%.1f"), f(lk.get("occupancy"), "%.3f")) if lk else "-"
        lines.append("| %s | %s | %d/%d | %s | %s | %s | %s | %s | %s | %s |" % (
            s["runner"], ",".join("%s=%s" % kv for kv in s["setting"].items()) or "-", s["completed"],
            s["candidates"], f(s["wall_s"], "%.1f"), f(s["evals_per_gpu_hour"], "%.0f"),
            f(s["busy_fraction_own"], "%.3f"), f(s["busy_fraction_cupti"], "%.3f"),
            f(s["wall_s_per_evaluation_median"], "%.2f"), hold, f(lk.get("wait_s"), "%.1f")))
    parts = [(s, (s.get("timing_lock") or {}).get("candidate", {}).get("hold_parts_s")) for s in summaries]
    for s, p in parts:
        if p:
            lines.append("")
            lines.append("timing lock hold of %s %s candidates, by part (s): %s" % (
                s["runner"], ",".join("%s=%s" % kv for kv in s["setting"].items()),
                ", ".join("%s %.2f" % (k, v) for k, v in sorted(p.items()) if k != "verified")))
    for s in summaries:
        again = ((s.get("timing_lock") or {}).get("reference") or {}).get("made_again")
        if again:
            lines.append("references computed more than once in the %s run: %d (%s)" % (
                s["runner"], len(again), ", ".join(k[:12] for k in again)))
    return "\n".join(lines)


def plot(summaries, path):
    """Evaluations per GPU-hour against kgym's slots (hollow: a run cut short by its budget; runs with another
    --spare-workers are left out), with the other runners as horizontal lines. Returns False where matplotlib is
    missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    pts = sorted((s["setting"]["slots"], s["evals_per_gpu_hour"] or 0, s["completed"] < s["candidates"])
                 for s in summaries if s["runner"] == "kgym" and "spare_workers" not in s["setting"])
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", color="C0", label="kgym serve")
        for x, y, partial in pts:
            ax.plot([x], [y], "o", color="C0", fillstyle="none" if partial else "full")
    for i, s in enumerate(x for x in summaries if x["runner"] != "kgym"):
        if s["evals_per_gpu_hour"]:
            ax.axhline(s["evals_per_gpu_hour"], color="C%d" % (i + 1), ls="--", label=s["runner"])
    ax.set_xlabel("kgym --slots-per-gpu")
    ax.set_ylabel("evaluations per GPU-hour")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True
