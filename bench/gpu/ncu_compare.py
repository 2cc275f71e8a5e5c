#!/usr/bin/env python3
"""kgym's GPU times against Nsight Compute's, and the repeatability of kgym's candidate time.

A. kgym: one `kgym serve` running one evaluation at a time per GPU (so nothing else uses the device while one is
   timed) evaluates each task's solution against its reference (KernelGYM requests, --perf-trials timed calls),
   then the --cv-task candidate --cv-repeats times. Kept from each result: kernel_runtime / reference_runtime (what
   kgym reports: the median over timed calls of the span of a call's kernels over all streams) and the CUPTI
   timeline's per-call kernel sums (timeline_kernel_sum_median_ms / reference_timeline_kernel_sum_median_ms).
B. ncu: one `ncu --clock-control none --cache-control none` over bench/gpu/ncu_driver.py, which runs every task's
   reference and solution CALLS times, each call alone in an NVTX range; gpu__time_duration.sum of the kernels in
   a range, summed, is ncu's time for that call; the median over the CALLS calls is compared.

Per (task, side) the verdict says which criterion holds: kgym's reported time within 2 % of ncu's; or the kernel
sum within 2 % and the rest of the difference the gaps between the call's kernels (reported - kernel sum); or a
call under 50 us of kernels, where fixed per-launch costs dominate; else UNEXPLAINED. --out gets ncu_compare.md,
ncu_compare.json (everything parsed), ncu_raw.csv (ncu's output), ncu_driver.out and kgym_results.json.

    python3 bench/gpu/ncu_compare.py --bin build/gpu/kgym --out "$OUT/ncu"
    python3 bench/gpu/ncu_compare.py --self-test
"""
import argparse
import csv
import datetime
import glob
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DRIVER = os.path.join(HERE, "ncu_driver.py")
# The 11 tasks with the smallest full-size inputs (tasks/describe.py --size full: 17-134 MB each), so input
# transfer does not dominate the evaluations; all GEMM/conv-bound, 2-16 ms per call on an H200. With the
# reference of each, 22 kernels (calls) to compare.
DEFAULT_TASKS = ["level3/mlp", "level3/transformer_block", "level2/linear_swiglu", "level3/small_cnn",
                 "level2/linear_bias_gelu", "level2/linear_logsumexp", "level1/matmul", "level1/conv2d",
                 "level2/causal_softmax_scores", "level2/conv2d_relu_bias", "level3/resnet_block"]
CALLS = 5
DURATION = "gpu__time_duration.sum"
NVTX_RE = re.compile(r"kgym_(ref|sol)\.(level\d+)\.(\w+)\.c(\d+)")  # ncu_driver.range_name
TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3,
         "second": 1e3}
TOL = 0.02
SHORT_MS = 0.05


T0 = time.time()


class Interrupted(Exception):
    """SIGTERM (an outer `timeout`): stop, then write what there is."""


def on_sigterm(*_):
    raise Interrupted()


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------- ncu CSV

def parse_ncu_csv(text):
    """ncu --csv output -> one dict per profiled kernel: id, kernel, task/side/call (None outside our ranges), ms.

    The raw page (--page raw: a header, a unit row, one row per kernel, the NVTX stack in the column
    "thread Domain:Push/Pop_Range:PL_Type:..." as `<tid>  "<default domain>:<range>:none:..."`) and the details page
    (one row per metric, "Metric Name"/"Metric Unit"/"Metric Value") are both read. Lines that are not CSV records
    (==PROF== messages) are skipped."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    start = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if start is None:
        return []
    header = rows[start]
    recs = [dict(zip(header, r)) for r in rows[start + 1:] if len(r) == len(header) and r != header]
    nvtx_cols = [c for c in header if "Push/Pop_Range" in c] or [c for c in header if "Range" in c]

    def kernel(rec, value, unit):
        unit = (unit or "nsecond").strip().lower()  # --print-units base: durations in ns
        if unit not in TO_MS:
            raise ValueError(f"unknown unit {unit!r} for {DURATION}")
        k = {"id": int(rec["ID"]), "kernel": rec.get("Kernel Name", "")[:160], "task": None, "side": None,
             "call": None, "ms": float(value.replace(",", "")) * TO_MS[unit]}
        found = [m for c in nvtx_cols for m in NVTX_RE.finditer(rec.get(c, ""))]
        if found:  # the last one is the innermost range
            side, level, name, call = found[-1].groups()
            k.update(task=f"{level}/{name}", side=side, call=int(call))
        return k

    out, seen = [], set()
    if "Metric Name" in header and "Metric Value" in header:
        for r in recs:
            if r["Metric Name"] in (DURATION, "Duration") and r["ID"] not in seen:
                seen.add(r["ID"])
                out.append(kernel(r, r["Metric Value"], r.get("Metric Unit")))
        return out
    units = recs.pop(0) if recs and not recs[0].get("ID", "").strip() else {}
    return [kernel(r, r[DURATION], units.get(DURATION)) for r in recs
            if r.get("ID", "").strip() and r.get(DURATION, "").strip()]


def per_call(kernels, calls=CALLS):
    """{task: {side: ...}}: kernel times summed per call; median over the calls, and the total / calls."""
    acc = {}
    for k in kernels:
        if k["task"] is None:
            continue
        e = acc.setdefault(k["task"], {}).setdefault(k["side"], {"by_call": {}, "kernels": 0, "names": []})
        e["by_call"][k["call"]] = e["by_call"].get(k["call"], 0.0) + k["ms"]
        e["kernels"] += 1
        short = k["kernel"].split("(")[0][:60]
        if short not in e["names"]:
            e["names"].append(short)
    for sides in acc.values():
        for e in sides.values():
            v = list(e["by_call"].values())
            e.update(calls_seen=len(v), median_ms=statistics.median(v), mean_ms=sum(v) / calls,
                     kernels_per_call=e["kernels"] / len(v))
            e["by_call"] = {str(c): ms for c, ms in sorted(e["by_call"].items())}
    return acc


# ---------------------------------------------------------------- verdicts

def judge(ksum, reported, ncu_ms, source=None):
    """Which agreement criterion holds for one (task, side); see the module docstring."""
    out = {"sum_diff": None, "reported_diff": None, "gap_ms": None}
    if not ncu_ms or reported is None:
        out["verdict"] = "no data (" + ", ".join(w for w, miss in (("ncu", not ncu_ms), ("kgym", reported is None))
                                                 if miss) + ")"
        return out
    out["reported_diff"] = dr = reported / ncu_ms - 1
    if ksum is not None:
        out["sum_diff"] = ksum / ncu_ms - 1
        out["gap_ms"] = reported - ksum
    if abs(dr) <= TOL:
        out["verdict"] = "reported within 2 %"
    elif out["sum_diff"] is not None and abs(out["sum_diff"]) <= TOL and out["gap_ms"] > 0:
        what = "gaps between kernels" if source == "timeline" else "supervisor bracket beyond the kernels"
        out["verdict"] = f"kernel sum within 2 %; rest = {what}"
    elif ncu_ms < SHORT_MS:
        out["verdict"] = "short call (< 50 us): launch overhead"
    else:
        out["verdict"] = "UNEXPLAINED"
    return out


def positive(x):
    return x if isinstance(x, (int, float)) and x > 0 else None


def build_rows(tasks, kgym, ncu):
    rows = []
    for task in tasks:
        res = kgym.get(task) or {}
        md = res.get("metadata") or {}
        for side in ("sol", "ref"):
            if side == "sol":
                ksum, rep = md.get("timeline_kernel_sum_median_ms"), res.get("kernel_runtime")
                src = md.get("timing_source")
            else:
                ksum, rep = md.get("reference_timeline_kernel_sum_median_ms"), res.get("reference_runtime")
                src = "timeline" if ksum is not None else ("supervisor" if positive(rep) else None)
            n = (ncu.get(task) or {}).get(side) or {}
            row = {"task": task, "side": side, "outcome": res.get("outcome"), "timing_source": src,
                   "kgym_reported_ms": positive(rep), "kgym_kernel_sum_ms": positive(ksum),
                   "ncu_ms": n.get("median_ms"), "ncu_mean_ms": n.get("mean_ms"),
                   "ncu_kernels_per_call": n.get("kernels_per_call"), "ncu_calls_seen": n.get("calls_seen"),
                   "ncu_kernels": n.get("names")}
            row.update(judge(row["kgym_kernel_sum_ms"], row["kgym_reported_ms"], row["ncu_ms"], src))
            if n and n["calls_seen"] < CALLS:
                row["verdict"] += f" (ncu saw {n['calls_seen']} of {CALLS} calls)"
            rows.append(row)
    return rows


def spread(values):
    if len(values) < 2:
        return {"n": len(values), "mean": values[0] if values else None, "stdev": None, "cv": None}
    mean, sd = statistics.mean(values), statistics.stdev(values)
    return {"n": len(values), "mean": mean, "stdev": sd, "cv": sd / mean, "min": min(values), "max": max(values),
            "values": values}


def cv_summary(task, results, wanted):
    ok = [r for r in results if positive(r.get("kernel_runtime"))]
    rep = spread([r["kernel_runtime"] for r in ok])
    ksum = spread([r["metadata"]["timeline_kernel_sum_median_ms"] for r in ok
                   if positive((r.get("metadata") or {}).get("timeline_kernel_sum_median_ms"))])
    if rep["n"] < wanted:
        goal = f"not judged: {rep['n']} of {wanted} repeats finished"
    elif rep["mean"] < 1.0:
        goal = "not applicable: candidate under 1 ms"
    else:
        goal = "met (CV <= 1 %)" if rep["cv"] <= 0.01 else "NOT met (CV > 1 %)"
    return {"task": task, "repeats_wanted": wanted, "kernel_runtime": rep, "timeline_kernel_sum": ksum,
            "goal": goal, "timing_sources": sorted({(r.get("metadata") or {}).get("timing_source") or "?" for r in ok})}


# ---------------------------------------------------------------- markdown

def f3(x):
    return "–" if x is None else f"{x:.3f}"


def pct(x, sign="+"):
    return "–" if x is None else f"{x * 100:{sign}.2f} %"


def markdown(state):
    h = state["header"]
    L = ["# kgym GPU timing vs Nsight Compute", "",
         f"- command: `{h['command']}`", f"- tree: {h['tree']}", f"- GPU: {h['gpu']}", f"- date (UTC): {h['date']}",
         f"- host: {h['host']}", f"- versions: {h.get('versions')}; ncu: {h.get('ncu_version')}"]
    if state.get("kgym_command"):
        L.append(f"- kgym: `{state['kgym_command']}`; {state['args']['perf_trials']} timed calls, "
                 f"{state['args']['correct_trials']} correctness trials, one evaluation at a time")
    if state.get("ncu"):
        n = state["ncu"]
        L.append(f"- ncu (rc {n.get('rc')}, {n.get('wall_s', 0):.0f} s): `{shlex.join(n['command'])}`")
    for note in state["notes"]:
        L.append(f"- note: {note}")
    L += ["", "ncu ms: kernels of one call summed (gpu__time_duration.sum), median over the "
          f"{CALLS} calls. kgym kernel sum: timeline_kernel_sum_median_ms (reference_... for ref). kgym reported: "
          "kernel_runtime / reference_runtime, with its timing source. gap = reported − kernel sum.", "",
          "| task | side | outcome | ncu kernels/call | ncu ms | kgym kernel sum ms | Δ sum "
          "| kgym reported ms (source) "
          "| Δ reported | gap ms | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in state["rows"]:
        kpc = "–" if r["ncu_kernels_per_call"] is None else f"{r['ncu_kernels_per_call']:.1f}"
        L.append(f"| {r['task']} | {r['side']} | {r['outcome'] or '–'} | {kpc} | {f3(r['ncu_ms'])} | "
                 f"{f3(r['kgym_kernel_sum_ms'])} | {pct(r['sum_diff'])} | {f3(r['kgym_reported_ms'])} "
                 f"({r['timing_source'] or '–'}) | {pct(r['reported_diff'])} | {f3(r['gap_ms'])} | {r['verdict']} |")
    counts = {}
    for r in state["rows"]:
        key = "UNEXPLAINED" if r["verdict"] == "UNEXPLAINED" else r["verdict"].split(";")[0].split(" (")[0]
        counts[key] = counts.get(key, 0) + 1
    judged = [r for r in state["rows"] if not r["verdict"].startswith("no data")]
    sums = [r for r in judged if r["sum_diff"] is not None]
    L += ["", f"**{len(judged)} kernels (calls) compared**, goal ≥ 20. By criterion: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
          + f". Kernel sum within 2 % of ncu: {sum(abs(r['sum_diff']) <= TOL for r in sums)} of {len(sums)}."]
    for cv in state.get("cv") or []:
        rep, ks = cv["kernel_runtime"], cv["timeline_kernel_sum"]
        L += ["", f"## Repeatability: {cv['task']} candidate submitted {cv['repeats_wanted']} times", "",
              "| quantity | n | mean ms | stdev ms | CV |", "|---|---|---|---|---|"]
        for name, s in (("kernel_runtime (reported)", rep), ("timeline_kernel_sum_median_ms", ks)):
            L.append(f"| {name} | {s['n']} | {f3(s['mean'])} | {f3(s['stdev'])} | {pct(s['cv'], '')} |")
        L += ["", f"Goal (CV ≤ 1 % for kernels ≥ 1 ms): **{cv['goal']}**; timing sources: "
              f"{', '.join(cv['timing_sources'])}. The reference is cached by the server, so only the candidate is "
              "re-timed."]
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- kgym serve

class Serve:
    """`kgym serve` on a free port, one evaluation in flight per device."""

    def __init__(self, args):
        gpus = args.gpus
        self.tmp = tempfile.mkdtemp(prefix="kgym-ncu-")
        self.command = [args.bin, "serve", "--port", "0", "--store", os.path.join(self.tmp, "store.sqlite"),
                        "--gpus", gpus, "--slots-per-gpu", "1", "--cpu-slots", "1", "--drain-timeout", "5"]
        env = dict(os.environ)
        lib = os.path.join(os.path.dirname(os.path.abspath(args.bin)), "lib")  # bench/gpu/pack.sh's layout
        if os.path.isdir(lib):
            env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env.setdefault("KGYM_HARNESS_PATH", os.path.join(ROOT, "python"))
        env.setdefault("KGYM_PYTHON", args.python)
        self.log = open(os.path.join(args.out, "kgym_serve.log"), "w")
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://[\d.]+:\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError("kgym serve did not start: " + line.strip() + " (see kgym_serve.log)")
        self.url = m.group(1)
        # Keep reading its stdout so a full pipe never blocks the server.
        threading.Thread(target=lambda: [self.log.write(x) for x in self.proc.stdout], daemon=True).start()

    def call(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def stop(self):
        """SIGTERM (drains for --drain-timeout), then SIGKILL to its whole process group: a cancelled evaluation
        must not keep the device busy during the ncu stage."""
        kids = descendants(self.proc.pid)  # zygote and workers leave the server's group (sandbox sessions)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.log.write("ncu_compare: kgym serve still running 15 s after SIGTERM: SIGKILL to its group\n")
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the server's own group (start_new_session): its workers
        except ProcessLookupError:
            pass
        self.proc.wait()
        t = time.time()
        while time.time() - t < 10 and any(os.path.exists(f"/proc/{k}") for k in kids):
            time.sleep(0.2)
        for k in kids:  # still there: a cancelled evaluation that kept computing
            try:
                os.kill(k, signal.SIGKILL)
                self.log.write(f"ncu_compare: SIGKILL to leftover kgym process {k}\n")
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def descendants(pid):
    """Every live process below pid (from /proc's parent links)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parent[int(d)] = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, frontier = [], [pid]
    while frontier:
        kids = [c for c, p in parent.items() if p in frontier]
        out += kids
        frontier = kids
    return out


def request_body(job_id, task, args, priority):
    level, name = task.split("/")
    body = {"task_id": job_id, "reference_code": open(os.path.join(ROOT, "tasks", level, name + ".py")).read(),
            "kernel_code": open(os.path.join(ROOT, "tasks", "solutions", level,
                                             f"{name}_{args.solution_kind}.py")).read(),
            "backend": "triton", "entry_point": "Model", "num_correct_trials": args.correct_trials,
            "num_perf_trials": args.perf_trials, "timeout": args.eval_timeout, "priority": priority,
            "enable_profiling": True}
    if args.size:
        body["size"] = args.size
    return body


def run_kgym(serve, jobs, results):
    """Submits every job, then waits for them in order; a job still unfinished at its deadline is cancelled."""
    for j in jobs:
        serve.call("POST", "/v1/evaluations", j["body"])
    pending = list(jobs)
    while pending:
        j = pending[0]
        left = j["deadline"] - time.time()
        if left <= 0:
            try:
                serve.call("DELETE", f"/v1/evaluations/{j['id']}")
            except OSError:
                pass
            results[j["id"]] = {"error": "cancelled: time budget"}
            log(f"kgym {j['id']}: cancelled (time budget)")
            pending.pop(0)
            continue
        wait = max(1, min(20, int(left)))
        rec = serve.call("GET", f"/v1/evaluations/{j['id']}?wait={wait}", timeout=wait + 60)
        if rec.get("state") == "done":
            r = results[j["id"]] = rec["result"]
            md = r.get("metadata") or {}
            log(f"kgym {j['id']}: {r.get('outcome')} ref {r.get('reference_runtime')} ms, kernel "
                f"{r.get('kernel_runtime')} ms ({md.get('timing_source', '?')}), {md.get('evaluation_s', 0):.1f} s")
            pending.pop(0)


# ---------------------------------------------------------------- ncu

def find_ncu(given):
    if given:
        return given
    cands = [shutil.which("ncu"), "/usr/local/cuda/bin/ncu"] + sorted(glob.glob("/usr/local/cuda-*/bin/ncu")) \
        + sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def run_ncu(args, ncu, tasks, end, filtered):
    """One ncu process over the driver (or the driver alone when there is no ncu); bounded by `end`."""
    csv_path = os.path.join(args.out, "ncu_raw.csv" if filtered else "ncu_raw_unfiltered.csv")
    out_path = os.path.join(args.out, "ncu_driver.out" if filtered else "ncu_driver_unfiltered.out")
    # The driver starts no task after its deadline, so ncu still exits (and prints its results) before `end`.
    driver = [args.python, DRIVER, "--tasks", ",".join(tasks), "--kind", args.solution_kind,
              "--device", "cuda" if args.gpus != "none" else "cpu", "--size", args.size or "full",
              "--calls", str(CALLS), "--deadline", f"{end - args.ncu_tail:.0f}"]
    cmd = driver
    if ncu:
        cmd = [ncu, "--target-processes", "application-only", "--clock-control", "none", "--cache-control", "none",
               "--nvtx"] + (["--nvtx-include", "regex:kgym_.*/"] if filtered else []) + \
              ["--metrics", DURATION, "--csv", "--page", "raw", "--print-units", "base",
               "--log-file", csv_path] + driver
    t = time.time()
    rc = None
    with open(out_path, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=max(1, end - time.time()))
        except (subprocess.TimeoutExpired, Interrupted) as e:
            for sig in (signal.SIGTERM, signal.SIGKILL):  # its own process group: ncu and the driver
                try:
                    os.killpg(p.pid, sig)
                    p.wait(10)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
            if isinstance(e, Interrupted):
                raise
            rc = "timeout"
    text = open(csv_path, errors="replace").read() if os.path.exists(csv_path) else ""
    driver_lines = []
    for line in open(out_path, errors="replace"):
        if line.startswith("{"):
            try:
                driver_lines.append(json.loads(line))
            except ValueError:
                pass
    kernels = parse_ncu_csv(text)
    return {"command": cmd, "rc": rc, "wall_s": time.time() - t, "filtered": filtered, "csv": csv_path,
            "driver": driver_lines, "messages": [x for x in text.splitlines() if x.startswith("==")][:40],
            "output_tail": open(out_path, errors="replace").read()[-3000:], "kernels": kernels}


# ---------------------------------------------------------------- main

def header(args):
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    # The packed tree's commit.txt (bench/gpu/pack.sh: HEAD, then `git status --short`; the GPU machine has no
    # .git) next to the binary; else this checkout's HEAD.
    commit_txt = os.path.join(os.path.dirname(os.path.abspath(args.bin)), "commit.txt")
    head = run(["git", "-C", ROOT, "rev-parse", "HEAD"])
    if not os.path.exists(commit_txt) and not head:
        commit_txt = os.path.join(ROOT, "build/gpu/commit.txt")
    if os.path.exists(commit_txt):
        lines = [x.strip() for x in open(commit_txt).read().split("\n")]
        dirty = [x for x in lines[1:] if x]
        tree = f"{lines[0]} ({os.path.relpath(commit_txt, ROOT)}"
        tree += f"; uncommitted: {', '.join(dirty)})" if dirty else ")"
    else:
        dirty = run(["git", "-C", ROOT, "status", "--short", "--untracked-files=no"]).splitlines()
        tree = head + (f" ({len(dirty)} uncommitted tracked files)" if dirty else "")
    return {"command": shlex.join(["python3", os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:]),
            "tree": tree or "unknown",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu": run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
            or "none (no nvidia-smi)",
            "host": f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}"}


def kgym_stage(args, tasks, state, results, main_deadline, end):
    """Returns ({task: main result}, [cv results]); a failure is noted and the ncu stage still runs."""
    serve = None
    nonce = f"{int(T0) % 100000:05d}"
    jobs = [{"id": f"ncu{nonce}-{t.replace('/', '-')}", "task": t, "group": "main", "deadline": main_deadline}
            for t in tasks]
    jobs += [{"id": f"ncu{nonce}-cv{i:02d}-{args.cv_task.replace('/', '-')}", "task": args.cv_task, "group": "cv",
              "deadline": end} for i in range(args.cv_repeats)]
    try:
        for j in jobs:  # the tasks first, then the repeats
            j["body"] = request_body(j["id"], j["task"], args, "high" if j["group"] == "main" else "normal")
        serve = Serve(args)
        state["kgym_command"] = shlex.join(serve.command)
        log(f"kgym serve at {serve.url}: {len(tasks)} tasks, then {args.cv_repeats} x {args.cv_task}")
        run_kgym(serve, jobs, results)
    except Interrupted:
        raise
    except Exception as e:  # noqa: BLE001
        state["notes"].append(f"kgym stage failed: {type(e).__name__}: {e}")
    finally:
        if serve:
            serve.stop()
        main = {j["task"]: results.get(j["id"]) for j in jobs if j["group"] == "main"}
        cv = [results[j["id"]] for j in jobs
              if j["group"] == "cv" and "error" not in results.get(j["id"], {"error": 1})]
        state["by_task"], state["cv_results"] = main, cv


def ncu_stage(args, tasks, state, end):
    ncu = find_ncu(args.ncu)
    if not ncu and args.gpus != "none":
        state["notes"].append("ncu not found (PATH, /usr/local/cuda*/bin, /opt/nvidia/nsight-compute): no ncu stage")
        return
    if end - time.time() < args.ncu_tail + 15:
        state["notes"].append(f"ncu stage skipped: {end - time.time():.0f} s of the budget left")
        return
    if ncu:
        v = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
        state["header"]["ncu_version"] = v.splitlines()[-1] if v else "?"
    else:
        state["notes"].append("no ncu here: the driver ran without the profiler (no ncu times)")
    log(f"ncu stage: {len(tasks)} tasks, {end - time.time():.0f} s left")
    n = run_ncu(args, ncu, tasks, end, filtered=True)
    if ncu and not any(k["task"] for k in n["kernels"]) and any(d.get("ok") for d in n["driver"]) \
            and end - time.time() > 90:
        state["notes"].append("the NVTX include filter profiled none of our ranges: reran without it (kernels "
                              "attributed from the CSV's NVTX column; see ncu_raw.csv for the filtered run)")
        n = run_ncu(args, ncu, tasks, end, filtered=False)
    state["ncu"] = {k: v for k, v in n.items() if k != "kernels"}
    state["ncu_kernels"] = n["kernels"]
    state["ncu_per_call"] = per_call(n["kernels"])
    state["header"]["versions"] = next((d["versions"] for d in n["driver"] if "versions" in d), None)
    log(f"ncu rc {n['rc']} in {n['wall_s']:.0f} s: {len(n['kernels'])} kernels, "
        f"{sum(1 for k in n['kernels'] if k['task'])} in our ranges")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/gpu/kgym"))
    ap.add_argument("--out", default=None, help="output folder (default bench/results/ncu-compare-<UTC date>)")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    ap.add_argument("--solution-kind", default="triton", help="tasks/solutions/levelN/<task>_<kind>.py")
    ap.add_argument("--gpus", default="0" if os.path.exists("/dev/nvidia0") else "none", help="kgym serve --gpus")
    ap.add_argument("--size", default=None, help="task size; default full on a GPU, small on the CPU")
    ap.add_argument("--perf-trials", type=int, default=30)
    ap.add_argument("--correct-trials", type=int, default=1)
    ap.add_argument("--eval-timeout", type=int, default=300)
    ap.add_argument("--cv-task", default="level1/matmul")
    ap.add_argument("--cv-repeats", type=int, default=10)
    ap.add_argument("--time-budget", type=float, default=500, help="seconds for everything, outputs included")
    ap.add_argument("--ncu", default=None, help="ncu binary (default: PATH, /usr/local/cuda*/bin, /opt/nvidia)")
    ap.add_argument("--ncu-tail", type=float, default=45, help="seconds kept for ncu after the driver's last task")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the driver and kgym's workers")
    ap.add_argument("--skip-kgym", action="store_true")
    ap.add_argument("--skip-ncu", action="store_true")
    ap.add_argument("--self-test", action="store_true", help="check the parser and the verdicts, run nothing")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    budget = args.time_budget
    end = T0 + budget - 10  # 10 s to write the outputs
    if args.size is None:
        args.size = "small" if args.gpus == "none" else ""
    args.out = args.out or os.path.join(ROOT, "bench/results",
                                        "ncu-compare-" + time.strftime("%Y-%m-%d", time.gmtime()))
    os.makedirs(args.out, exist_ok=True)
    tasks = [t for t in args.tasks.split(",") if t]
    signal.signal(signal.SIGTERM, on_sigterm)
    state = {"header": header(args), "args": vars(args), "notes": [], "by_task": {}, "cv_results": []}
    results = {}
    # kgym: the tasks until half the budget, the repeats until 30 % of it is left; ncu: the rest (it starts
    # earlier when kgym finishes early).
    ncu_share = 0 if args.skip_ncu else 0.3 * budget
    try:
        if not args.skip_kgym:
            kgym_stage(args, tasks, state, results, T0 + 0.5 * budget, end - ncu_share)
        if not args.skip_ncu:
            ncu_stage(args, tasks, state, end)
    except Interrupted:
        state["notes"].append("interrupted (SIGTERM): partial results")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        state["rows"] = build_rows(tasks, state["by_task"], state.get("ncu_per_call", {}))
        state["cv"] = [cv_summary(args.cv_task, state.pop("cv_results"), args.cv_repeats)] if args.cv_repeats and \
            not args.skip_kgym else []
        state.pop("by_task")
        state["kgym"] = {jid: slim(r) for jid, r in results.items()}
        state["wall_s"] = time.time() - T0
        json.dump(results, open(os.path.join(args.out, "kgym_results.json"), "w"), indent=1)
        json.dump(state, open(os.path.join(args.out, "ncu_compare.json"), "w"), indent=1, default=str)
        md = markdown(state)
        open(os.path.join(args.out, "ncu_compare.md"), "w").write(md)
        print(md)
        log(f"outputs in {args.out}")
    return 0


KEPT = ("timing_source", "timing_source_reason", "timeline_problem", "timeline_span_median_ms",
        "timeline_busy_median_ms", "timeline_kernel_sum_median_ms", "timing_supervisor_median_ms",
        "timing_harness_overhead_ms", "timing_crosscheck", "reference_timeline_busy_median_ms",
        "reference_timeline_kernel_sum_median_ms", "reference_harness_overhead_ms", "reference_supervisor_median_ms",
        "reference_timeline_problem", "reference_kernels", "kernel_cuda_event_median_ms",
        "reference_cuda_event_median_ms", "candidate_kernels", "evaluation_s", "device")


def slim(r):
    """The fields of one kgym result that this comparison reads (the whole results are in kgym_results.json)."""
    md = r.get("metadata") or {}
    return {"outcome": r.get("outcome"), "outcome_detail": (r.get("outcome_detail") or r.get("error") or "")[:300],
            "kernel_runtime": r.get("kernel_runtime"), "reference_runtime": r.get("reference_runtime"),
            **{k: md[k] for k in KEPT if k in md}}


# ---------------------------------------------------------------- self-test

# ncu --csv --page raw --print-units base, as ncu writes it: ==PROF== lines, header, unit row, one row per kernel.
# The NVTX cell is `<tid>  "<domain>:<range>:<payload fields>"`, its quotes doubled inside the CSV field.
SAMPLE_RAW = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "_matmul_kernel" - 0: 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","device__attribute_display_name","gpu__time_duration.sum"
"","","","","","","","","","","","","","","nsecond"
"0","4242","python3.12","127.0.0.1","4242  ""<default domain>:kgym_ref.level1.matmul.c0:none:none:none:none:none:none""","","void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)","1","7","(256, 1, 1)","(16, 32, 1)","0","9.0","NVIDIA H200","2,876,512"
"1","4242","python3.12","127.0.0.1","4242  ""<default domain>:kgym_ref.level1.matmul.c1:none:none:none:none:none:none""","","void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)","1","7","(256, 1, 1)","(16, 32, 1)","0","9.0","NVIDIA H200","2880000"
"2","4242","python3.12","127.0.0.1","4242  ""<default domain>:kgym_sol.level1.matmul.c0:none:none:none:none:none:none""","","_matmul_kernel","1","7","(128, 1, 1)","(64, 64, 1)","0","9.0","NVIDIA H200","3500000"
"3","4242","python3.12","127.0.0.1","4242  ""<default domain>:kgym_sol.level1.matmul.c1:none:none:none:none:none:none""","","_matmul_kernel","1","7","(128, 1, 1)","(64, 64, 1)","0","9.0","NVIDIA H200","3600000"
"4","4242","python3.12","127.0.0.1","","","void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, T2, T3)","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0","NVIDIA H200","95000"
"5","4242","python3.12","127.0.0.1","4242  ""<default domain>:kgym_ref.level3.mlp.c0:none:none:none:none:none:none""","","sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32","1","7","(256, 1, 1)","(32, 8, 1)","0","9.0","NVIDIA H200","1000000"
"6","4242","python3.12","127.0.0.1","4242  ""<default domain>:kgym_ref.level3.mlp.c0:none:none:none:none:none:none""","","void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel(T1)>(int, T2, T3)","1","7","(128, 1, 1)","(4096, 1, 1)","0","9.0","NVIDIA H200","20000"
==PROF== Disconnected from process 4242
'''

SAMPLE_DETAILS = '''"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","7","python3","localhost","7  ""<default domain>:kgym_sol.level1.relu.c3:none:none:none:none:none:none""","relu_kernel","1","7","(1024, 1, 1)","(655360, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1,234.50"
'''


def self_test():
    ks = parse_ncu_csv(SAMPLE_RAW)
    assert len(ks) == 7, ks
    assert ks[0]["task"] == "level1/matmul" and ks[0]["side"] == "ref" and ks[0]["call"] == 0
    assert abs(ks[0]["ms"] - 2.876512) < 1e-9, ks[0]["ms"]  # thousands separators, ns -> ms
    assert ks[4]["task"] is None  # the flush kernel, outside every range (unfiltered run)
    pc = per_call(ks)
    assert pc["level1/matmul"]["ref"]["calls_seen"] == 2
    assert abs(pc["level1/matmul"]["ref"]["median_ms"] - (2.876512 + 2.88) / 2) < 1e-9
    assert abs(pc["level1/matmul"]["sol"]["mean_ms"] - (3.5 + 3.6) / CALLS) < 1e-9
    assert abs(pc["level3/mlp"]["ref"]["median_ms"] - 1.02) < 1e-9 and pc["level3/mlp"]["ref"]["kernels"] == 2
    d = parse_ncu_csv(SAMPLE_DETAILS)
    assert len(d) == 1 and d[0]["task"] == "level1/relu" and d[0]["call"] == 3 and abs(d[0]["ms"] - 1.2345) < 1e-9
    assert parse_ncu_csv("==PROF== nothing\n") == []
    # Verdicts, one per criterion.
    assert judge(3.55, 3.56, 3.55, "timeline")["verdict"] == "reported within 2 %"
    v = judge(1.02, 1.10, 1.02, "timeline")
    assert v["verdict"].startswith("kernel sum within 2 %") and abs(v["gap_ms"] - 0.08) < 1e-9, v
    assert judge(0.02, 0.03, 0.04)["verdict"].startswith("short call")
    assert judge(2.0, 2.5, 3.0, "timeline")["verdict"] == "UNEXPLAINED"
    assert judge(None, 3.0, None)["verdict"] == "no data (ncu)"
    # kgym results without the timeline keys (the CPU, or no recorder): the reported time alone is compared.
    kg = {"level1/matmul": {"outcome": "correct", "kernel_runtime": 3.57, "reference_runtime": 2.9,
                            "metadata": {"timing_source": "supervisor"}},
          "level3/mlp": {"outcome": "correct", "kernel_runtime": 9.0, "reference_runtime": 1.1,
                         "metadata": {"timing_source": "timeline", "timeline_kernel_sum_median_ms": 9.0,
                                      "reference_timeline_kernel_sum_median_ms": 1.03}}}
    rows = build_rows(["level1/matmul", "level3/mlp", "level1/relu"], kg, pc)
    by = {(r["task"], r["side"]): r for r in rows}
    assert by[("level1/matmul", "sol")]["verdict"] == "reported within 2 % (ncu saw 2 of 5 calls)"
    assert by[("level1/matmul", "ref")]["timing_source"] == "supervisor"
    assert by[("level3/mlp", "ref")]["verdict"].startswith("kernel sum within 2 %")
    assert by[("level1/relu", "sol")]["verdict"] == "no data (ncu, kgym)"
    cv = cv_summary("level1/matmul", [{"kernel_runtime": x, "metadata": {"timeline_kernel_sum_median_ms": x - 0.1}}
                                      for x in (3.60, 3.62, 3.61, 3.59, 3.60, 3.61, 3.62, 3.60, 3.61, 3.60)], 10)
    assert cv["goal"].startswith("met") and cv["kernel_runtime"]["cv"] < 0.01, cv
    assert cv_summary("x", [], 10)["goal"].startswith("not judged")
    state = {"header": {"command": "c", "tree": "t", "gpu": "g", "date": "d", "host": "h"},
             "args": {"perf_trials": 30, "correct_trials": 1}, "notes": ["n"], "rows": rows, "cv": [cv]}
    md = markdown(state)
    assert "| level3/mlp | ref |" in md and "kernels (calls) compared" in md and "Repeatability" in md, md
    print(md)
    print("self-test ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
