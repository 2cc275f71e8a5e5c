"""Three evaluators over the same candidates (kb_mix.py), each result normalised to one record:

  runner, setting, id, problem, kind, expected, completed, verdict, passed, speedup, kernel_ms, reference_ms,
  kernel_gpu_ms, reference_gpu_ms, gpu_time_source, wall_s, phase_s, flags, detail
  (kgym alone adds timing_lock, reference_timing_lock and reference_cache_key: its metadata's use of the device's
  timing lock by the candidate and by the reference it was judged against, see kb_report.lock_use)

`verdict` is one of correct, incorrect, compile_error, runtime_error, timeout, hacked, crashed, error (the
evaluator or the harness failed, not the candidate); `passed` is the evaluator's correctness verdict.
`kernel_gpu_ms` / `reference_gpu_ms` are device time per call: kgym's CUPTI kernel sums where it has them, else
the evaluator's own reported mean runtime (CUDA events around a call: kernels plus launch gaps), named in
`gpu_time_source`.

- kgym: `kgym serve` (one process, warm zygote, --slots-per-gpu evaluations in flight, timing exclusive per GPU),
  fed by concurrent POST /evaluate calls as Dr.Kernel's reward client sends them.
- kernelbench: KernelBench's `eval_kernel_against_ref` in a fresh process per evaluation (kb_eval_one.py), one at a
  time per GPU, killed at the candidate's timeout, as scripts/eval_from_generations.py's batch protocol does.
- kernelgym: KernelGYM's own FastAPI server (its default 4 uvicorn workers), its GPU worker for cuda:0 and a
  private redis-server, fed like kgym. Its worker monitor is not started (it may run `nvidia-smi --gpu-reset`).

Every runner stops submitting at its time budget; evaluations not finished by then are recorded with
completed=False, and the rate counts completed evaluations over the runner's wall time.
"""
import concurrent.futures
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

CLIENT_TIMEOUT_S = 1800
KGYM_OUTCOMES = {"correct", "incorrect", "compile_error", "runtime_error", "timeout", "hacked", "crashed"}


def record(runner, setting, cand, **fields):
    r = {"runner": runner, "setting": setting, "id": cand["id"], "problem": cand["problem"], "kind": cand["kind"],
         "expected": cand["expected"], "completed": False, "verdict": None, "passed": None, "speedup": None,
         "kernel_ms": None, "reference_ms": None, "kernel_gpu_ms": None, "reference_gpu_ms": None,
         "gpu_time_source": None, "wall_s": None, "phase_s": {}, "flags": [], "detail": ""}
    r.update(fields)
    return r


def _positive(x):
    return x if isinstance(x, (int, float)) and x > 0 else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post_json(url, body, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def kernelgym_request(cand, task_id, args):
    """The body Dr.Kernel's reward client posts (research/kernelgym.md §1.10), with this candidate's timeout."""
    return {"task_id": task_id, "reference_code": cand["ref"], "kernel_code": cand["kernel"], "backend": "triton",
            "num_correct_trials": args.correct_trials, "num_perf_trials": args.perf_trials,
            "timeout": cand["timeout_s"], "priority": "normal", "entry_point": "Model", "is_valid": False,
            "verbose_errors": True, "enable_profiling": True, "detect_decoy_kernel": True,
            "reference_backend": None}


# ----- verdicts -----

def kgym_verdict(res):
    """(verdict, fields) from a kgym result (KernelGYM fields + outcome, metadata)."""
    outcome = res.get("outcome")
    verdict = outcome if outcome in KGYM_OUTCOMES else "error"
    md = res.get("metadata") or {}
    cand_gpu = _positive(md.get("timeline_kernel_sum_median_ms"))
    ref_gpu = _positive(md.get("reference_timeline_kernel_sum_median_ms"))
    fields = {"passed": bool(res.get("correctness")), "speedup": res.get("speedup"),
              "kernel_ms": _positive(res.get("kernel_runtime")),
              "reference_ms": _positive(res.get("reference_runtime")),
              "kernel_gpu_ms": cand_gpu, "reference_gpu_ms": ref_gpu,
              "gpu_time_source": "cupti" if cand_gpu or ref_gpu else "reported_mean",
              "phase_s": md.get("phase_s") or {}, "detail": (res.get("outcome_detail") or "")[:300],
              "timing_lock": md.get("timing_lock"), "reference_timing_lock": md.get("reference_timing_lock"),
              "reference_cache_key": md.get("reference_cache_key"),
              "account": md.get("account"),  # where its wall and device time went (src/eval/account.h)
              # the reference gave the same outputs on every default draw (and, for reference_insensitive, on
              # every trial): a degenerate problem at these sizes (eval/reference_run.cc, CheckSensitivity)
              "flags": [k for k in ("reference_default_insensitive", "reference_insensitive") if md.get(k)]}
    fields["profile"] = kgym_profile(res)
    if not cand_gpu:
        fields["kernel_gpu_ms"] = fields["kernel_ms"] if verdict == "correct" else None
    if not ref_gpu:
        fields["reference_gpu_ms"] = fields["reference_ms"]
    if md.get("evaluation_s") is not None:
        fields["phase_s"] = dict(fields["phase_s"], evaluation=md["evaluation_s"])
    return verdict, fields


PROFILE_KEYS = ("load_s", "worker_start_s", "candidate_worker", "reference_worker", "kernel_self_reported_median_ms",
                "kernel_cuda_event_median_ms", "timeline_kernel_sum_median_ms", "timing_kept_calls",
                "timing_kept_fetch_s", "timeline_fetch_s", "detect_grad_s", "timing_null_median_ms",
                "reference_prepared_by", "host_memory", "quiet_wait_s", "reference_quiet_wait_s", "timing_bursts_ran",
                "lent_buffers", "timing_calls", "timing_stopped", "timing_median_ci_rel", "timing_attempts",
                "timing_drained", "timing_shared_calls", "timing_contended", "frozen_s", "precision")
TRIAL_PROFILE_KEYS = ("exchange_s", "compare_s", "worker_s")


def kgym_profile(res):
    """Where a kgym evaluation's time went, beyond phase_s: the metadata's timing figures and, per correctness
    trial, the supervisor's exchange and comparison seconds and the worker's own steps (a profile, not a verdict)."""
    md = res.get("metadata") or {}
    out = {k: md[k] for k in PROFILE_KEYS if k in md}
    trials = ((res.get("correctness_detail") or {}).get("trials")) or []
    out["trials"] = [{k: t[k] for k in TRIAL_PROFILE_KEYS if k in t} for t in trials if isinstance(t, dict)]
    trace = md.get("timing_trace")  # kgym serve run with KGYM_TRACE_TIMING=1: the per-call series, as medians
    if isinstance(trace, dict):
        series = {k: v for k, v in trace.items() if isinstance(v, list)}
        series.update({"null_" + k: v for k, v in (trace.get("null") or {}).items() if isinstance(v, list)})
        nums = {k: sorted(y for y in v if isinstance(y, (int, float))) for k, v in series.items()}
        out["trace_median_ms"] = {k: statistics.median(x) if x else None for k, x in nums.items()}
        # The brackets' tail: a few slow calls (other processes' work on the GPU) cost the lock more than the median
        b = nums.get("bracket_ms") or []
        if b:
            median = out["trace_median_ms"]["bracket_ms"]
            out["trace_bracket_tail_ms"] = {"mean": statistics.mean(b), "p90": b[int(0.9 * (len(b) - 1))],
                                            "max": b[-1], "over_2x_median": sum(x > 2 * median for x in b)}
    return out


def host_cpu():
    """(busy, total) jiffies of all CPUs (/proc/stat), or None where there is none."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def host_cpu_busy(before, after):
    """The machine's CPUs' busy fraction between two host_cpu() samples."""
    if not before or not after or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 4)


def kernelbench_verdict(result, timed_out=False):
    """(verdict, fields) from KernelBench's KernelExecResult (a dict), or its batch protocol's timeout."""
    if timed_out:
        return "timeout", {"passed": False, "detail": "Evaluation timed out"}
    if result is None:
        return "error", {"passed": False, "detail": "the harness returned None (its lock-file retry case)"}
    md = result.get("metadata") or {}
    runtime, ref = _positive(result.get("runtime")), _positive(result.get("ref_runtime"))
    fields = {"passed": bool(result.get("correctness")), "kernel_ms": runtime, "reference_ms": ref,
              "kernel_gpu_ms": runtime, "reference_gpu_ms": ref, "gpu_time_source": "reported_mean",
              "speedup": ref / runtime if runtime and ref and result.get("correctness") else 0.0,
              "flags": ["excessive_speedup"] if md.get("excessive_speedup") else []}
    if "other_error" in md or "cuda_error" in md:
        return "error", dict(fields, detail=str(md.get("other_error") or md.get("cuda_error"))[:300])
    if not result.get("compiled"):
        return "compile_error", dict(fields, detail=str(md.get("compilation_error", ""))[:300])
    if result.get("correctness"):
        return "correct", dict(fields, detail="correct (%s)" % md.get("correctness_trials", ""))
    if "runtime_error" in md:
        return "runtime_error", dict(fields, detail=str(md["runtime_error"])[:300])
    return "incorrect", dict(fields, detail=str(md.get("correctness_issue", md.get("max_difference", "")))[:300])


def kernelgym_verdict(resp):
    """(verdict, fields) from KernelGYM's EvaluationResponse."""
    code = resp.get("error_code") or ""
    md = resp.get("metadata") or {}
    kernel, ref = _positive(resp.get("kernel_runtime")), _positive(resp.get("reference_runtime"))
    fields = {"passed": bool(resp.get("correctness")), "speedup": resp.get("speedup"), "kernel_ms": kernel,
              "reference_ms": ref, "kernel_gpu_ms": kernel, "reference_gpu_ms": ref,
              "gpu_time_source": "reported_mean",
              "detail": str(resp.get("error_message") or md.get("correctness_issue") or "")[:300]}
    if resp.get("decoy_kernel"):
        return "hacked", dict(fields, detail="decoy kernel")
    if code == "TIMEOUT_ERROR" or "timeout after" in fields["detail"]:
        return "timeout", fields
    if resp.get("correctness") and resp.get("status") == "completed":
        return "correct", fields
    if code in ("COMPILATION_ERROR", "SYNTAX_ERROR", "IMPORT_ERROR") or resp.get("compiled") is False:
        return "compile_error", fields
    if code in ("RUNTIME_ERROR", "INSTANTIATION_ERROR") or md.get("runtime_error"):
        return "runtime_error", fields
    if code in ("SYSTEM_ERROR", "UNKNOWN_ERROR", "RESOURCE_ERROR", "VALIDATION_ERROR"):
        return "error", fields
    return "incorrect", fields


# ----- feeding an HTTP evaluator with concurrent clients -----

def feed(url, mix, args, budget_s, runner, setting, task_prefix, body_fn, verdict_fn):
    """POSTs every candidate with `args.clients` concurrent clients; returns (records by id, wall seconds).
    Stops waiting at the budget: what has not answered by then stays completed=False."""
    recs = {c["id"]: record(runner, setting, c) for c in mix}
    t0 = time.time()

    def one(c):
        s = time.time()
        try:
            # The request's timeout limits the evaluation, not its wait in the queue: the client waits as long as
            # Dr.Kernel's does (read timeout 1800 s); the runner's budget bounds the whole run anyway.
            res = post_json(url, body_fn(c, task_prefix + c["id"], args), CLIENT_TIMEOUT_S)
        except (urllib.error.URLError, OSError, ValueError) as e:
            return c, None, str(e), time.time() - s
        return c, res, None, time.time() - s

    pool = concurrent.futures.ThreadPoolExecutor(args.clients)
    futs = [pool.submit(one, c) for c in mix]
    try:
        for f in concurrent.futures.as_completed(futs, timeout=budget_s):
            c, res, err, wall = f.result()
            if err is not None:
                recs[c["id"]].update(completed=True, verdict="error", passed=False, wall_s=wall, detail=err[:300])
                continue
            verdict, fields = verdict_fn(res)
            recs[c["id"]].update(fields, completed=True, verdict=verdict, wall_s=wall)
    except concurrent.futures.TimeoutError:
        pass
    wall = time.time() - t0
    pool.shutdown(wait=False, cancel_futures=True)
    return recs, wall


# ----- kgym -----

# Runner options: kgym:<slots>[:<option><N>]..., each a kgym serve flag (an A/B of one flag in one run).
KGYM_OPTIONS = {"spares": ("spare_workers", "--spare-workers"),
                "lookahead": ("reference_lookahead", "--reference-lookahead"),
                "quiet": ("quiet_timing", "--quiet-timing"),  # quiet1: on, quiet0: off
                "lent": ("lent_buffers", "--lent-buffers"),  # lent0: the worker's own memfd per reply
                "minperf": ("min_perf_trials", "--min-perf-trials"),  # minperf0: every one of the perf trials
                "nofreeze": ("no_freeze", "--no-freeze-neighbours")}  # nofreeze1: neighbours run during holds


def kgym_setting(name, default_slots):
    """kgym:<slots>[:spares<N>][:lookahead<N>][:quiet<0|1>][:lent<N>][:minperf<N>][:nofreeze1] -> {"slots": slots
    [, "spare_workers": N][, "reference_lookahead": N][, "quiet_timing": 0|1][, "lent_buffers": N]
    [, "min_perf_trials": N][, "no_freeze": 1]}."""
    parts = name.split(":")
    setting = {"slots": int(parts[1]) if len(parts) > 1 and parts[1] else default_slots}
    for p in parts[2:]:
        opt = next((o for o in KGYM_OPTIONS if p.startswith(o) and p[len(o):].isdigit()), None)
        if opt is None:
            raise ValueError("unknown kgym runner option %r in %r (kgym:<slots>[:%s])"
                             % (p, name, "][:".join(o + "<N>" for o in KGYM_OPTIONS)))
        setting[KGYM_OPTIONS[opt][0]] = int(p[len(opt):])
    return setting


def kgym_tag(setting):
    """A setting in file names and task ids: "16", "16-spares4", "16-lookahead0"."""
    return "%d" % setting["slots"] + "".join("-%s%d" % (o, setting[key]) for o, (key, _) in KGYM_OPTIONS.items()
                                             if setting.get(key) is not None)


def start_kgym(args, setting, tmp):
    slots, tag = setting["slots"], kgym_tag(setting)
    cmd = [args.bin, "serve", "--port", "0", "--store", os.path.join(tmp, "kgym-%s.sqlite" % tag),
           "--gpus", "none" if args.device == "cpu" else args.gpu, "--slots-per-gpu", str(slots),
           "--cpu-slots", str(slots), "--drain-timeout", "5"]
    for key, flag in KGYM_OPTIONS.values():
        if setting.get(key) is not None:
            cmd += ([flag] if setting[key] else []) if key in ("quiet_timing", "no_freeze") else [flag, str(setting[key])]
    log = open(os.path.join(tmp, "kgym-serve-slots%s.log" % tag), "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://[\d.]+:\d+)", line)
    if not m:
        proc.kill()
        raise RuntimeError("kgym serve did not start: %r (log %s)" % (line, log.name))
    return proc, m.group(1), " ".join(cmd)


def kgym_body(c, task_id, args):
    body = kernelgym_request(c, task_id, args)
    body["kgym_result"] = True  # kgym's verdict and fields (outcome, phase_s, timing_lock, ...), not KernelGYM's answer
    if args.size:
        body["size"] = args.size
    return body


def run_kgym(mix, args, setting, budget_s, tmp):
    t_start = time.time()
    proc, url, cmd = start_kgym(args, setting, tmp)
    startup = time.time() - t_start
    cpu0 = host_cpu()
    recs, wall = feed(url + "/evaluate", mix, args, budget_s, "kgym", setting, "s%s-" % kgym_tag(setting), kgym_body,
                      kgym_verdict)
    cpu = host_cpu_busy(cpu0, host_cpu())
    busy = {}
    try:
        with urllib.request.urlopen(url + "/v1/metrics", timeout=30) as r:
            prom = r.read().decode()
        busy = {d: float(v) for d, v in re.findall(r'kgym_device_busy_fraction\{device="([^"]+)"\} ([\d.e+-]+)', prom)}
    except OSError:
        pass
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
    return {"runner": "kgym", "setting": setting, "command": cmd, "startup_s": startup, "wall_s": wall,
            "budget_s": budget_s, "records": list(recs.values()), "device_busy_fraction": busy, "host_cpu_busy": cpu}


# ----- KernelBench's harness -----

def run_kernelbench(mix, args, budget_s, tmp):
    child = os.path.join(HERE, "kb_eval_one.py")
    recs = [record("kernelbench", {}, c) for c in mix]
    t0 = time.time()
    for c, rec in zip(mix, recs):
        if time.time() - t0 > budget_s:
            break
        job = {"kernelbench": os.path.abspath(args.kernelbench), "ref": c["ref"], "kernel": c["kernel"],
               "build_dir": os.path.join(tmp, "kb-build", c["id"]), "num_correct_trials": args.correct_trials,
               "num_perf_trials": args.perf_trials, "backend": "triton",
               "device": "cuda:%s" % args.gpu if args.device == "cuda" else "cpu"}
        s = time.time()
        p = subprocess.Popen([args.python, child], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = p.communicate(json.dumps(job), timeout=c["timeout_s"])
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            timed_out = True
        wall = time.time() - s
        line = next((l for l in reversed(out.splitlines()) if l.startswith("KB_RESULT ")), None)
        if timed_out:
            verdict, fields = kernelbench_verdict(None, timed_out=True)
        elif line is None:
            verdict, fields = "error", {"passed": False, "detail": ("exit %s: " % p.returncode) + err[-300:]}
        else:
            got = json.loads(line[len("KB_RESULT "):])
            verdict, fields = kernelbench_verdict(got["result"])
            fields["phase_s"] = got.get("phase_s", {})
        rec.update(fields, completed=True, verdict=verdict, wall_s=wall)
        with open(os.path.join(tmp, "kernelbench-stderr.log"), "a") as log:
            log.write("==== %s (%s, %.1f s)\n%s\n" % (c["id"], verdict, wall, err[-4000:]))
    return {"runner": "kernelbench", "setting": {},
            "command": "%s %s (one process per evaluation)" % (args.python, child),
            "startup_s": 0.0, "wall_s": time.time() - t0, "budget_s": budget_s, "records": recs}


# ----- KernelGYM's server and worker -----

def _wait_for(pred, timeout, what, proc):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return
        if proc.poll() is not None:
            raise RuntimeError("KernelGYM: %s exited with status %s while starting" % (what, proc.returncode))
        time.sleep(0.5)
    raise RuntimeError("KernelGYM: %s not ready after %d s" % (what, timeout))


def _http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def start_kernelgym(args, tmp, procs):
    """Starts redis-server, KernelGYM's API server and its GPU worker for one GPU (appended to `procs`, also when a
    later one fails to start); returns the API's URL."""
    logs = os.path.join(tmp, "kernelgym-logs")
    os.makedirs(logs, exist_ok=True)
    rport, aport = free_port(), free_port()
    env = dict(os.environ, API_HOST="127.0.0.1", API_PORT=str(aport), REDIS_HOST="127.0.0.1", REDIS_PORT=str(rport),
               REDIS_KEY_PREFIX="kernelgym", GPU_DEVICES="[%s]" % args.gpu, LOG_DIR=logs, SAVE_EVAL_RESULTS="false",
               PYTHONPATH=os.pathsep.join(p for p in (args.kernelgym, os.environ.get("PYTHONPATH")) if p))
    redis_env = dict(os.environ)
    if args.redis_lib:
        redis_env["LD_LIBRARY_PATH"] = args.redis_lib
    procs.append(subprocess.Popen([args.redis_server, "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no"], stdout=open(os.path.join(logs, "redis.log"), "w"),
                                  stderr=subprocess.STDOUT, env=redis_env, cwd=tmp, start_new_session=True))
    _wait_for(lambda: _port_open(rport), 20, "redis-server", procs[-1])
    api_log = open(os.path.join(logs, "api_server.out"), "w")
    procs.append(subprocess.Popen([args.python, "-m", "kernelgym.server.api.server"], stdout=api_log,
                                  stderr=subprocess.STDOUT, env=env, cwd=tmp, start_new_session=True))
    url = "http://127.0.0.1:%d" % aport
    _wait_for(lambda: _http_ok(url + "/"), 90, "API server", procs[-1])
    wlog = os.path.join(logs, "worker_gpu_%s.out" % args.gpu)
    procs.append(subprocess.Popen([args.python, "-m", "kernelgym.worker.single_worker", "--worker-id",
                                   "worker_gpu_%s" % args.gpu, "--device", "cuda:%s" % args.gpu],
                                  stdout=open(wlog, "w"), stderr=subprocess.STDOUT, env=env, cwd=tmp,
                                  start_new_session=True))
    _wait_for(lambda: "processing loop started" in open(wlog).read(), 120, "GPU worker", procs[-1])
    return url


def _port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def stop_processes(procs):
    for p in reversed(procs):
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in reversed(procs):
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def run_kernelgym(mix, args, budget_s, tmp):
    t0 = time.time()
    procs = []
    try:
        url = start_kernelgym(args, tmp, procs)
        startup = time.time() - t0
        recs, wall = feed(url + "/evaluate", mix, args, budget_s, "kernelgym", {}, "kg-", kernelgym_request,
                          kernelgym_verdict)
    except RuntimeError as e:
        return dict(failed_run("kernelgym", mix, str(e)), startup_s=time.time() - t0, budget_s=budget_s)
    finally:
        stop_processes(procs)
    return {"runner": "kernelgym", "setting": {}, "startup_s": startup, "wall_s": wall, "budget_s": budget_s,
            "command": "%s -m kernelgym.server.api.server + kernelgym.worker.single_worker (cuda:%s)"
                       % (args.python, args.gpu), "records": list(recs.values())}


def failed_run(name, mix, error):
    """A runner that could not run: every record unfinished, the reason kept."""
    runner = name.split(":")[0]
    setting = kgym_setting(name, None) if runner == "kgym" and ":" in name else {}
    return {"runner": runner, "setting": setting, "command": "", "startup_s": 0.0, "wall_s": 0.0, "budget_s": None,
            "records": [record(runner, setting, c, detail=error) for c in mix], "error": error}


def run_runner(name, mix, args, budget_s, tmp):
    """`name` is kgym:<slots>[:spares<N>], kernelbench or kernelgym."""
    if name.startswith("kgym"):
        return run_kgym(mix, args, kgym_setting(name, args.slots), budget_s, tmp)
    if name == "kernelbench":
        return run_kernelbench(mix, args, budget_s, tmp)
    if name == "kernelgym":
        return run_kernelgym(mix, args, budget_s, tmp)
    raise ValueError("unknown runner %r (kgym:<slots>[:spares<N>], kernelbench, kernelgym)" % name)

