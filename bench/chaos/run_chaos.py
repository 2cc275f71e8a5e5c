#!/usr/bin/env python3
"""Chaos bench: `kgym serve --redis` with two `kgym worker`s on the CPU, a stream of real (cheap) evaluations from
clients that retry as Dr.Kernel's reward client does (the same task_id, backing off on no answer and on 5xx), while a
killer stops the API node, a worker or Redis at random and starts it again: Redis by SIGKILL, the API node and the
workers by SIGKILL or SIGTERM (--signals; a SIGTERM'd node drains for DRAIN_S and must have ended DRAIN_S + 5 s after
the signal). Then the same submissions run again
on a fresh cluster with no kills, and every verdict is compared.

What is counted (the JSON's "summary"):
  submissions           task ids submitted
  kills                 stops by kind (server, worker, redis), each followed by a restart; sigterm_server and
                        sigterm_worker count those that were SIGTERMs
  sigterm_not_ended_within_drain_plus_5s  SIGTERM'd nodes still alive DRAIN_S + 5 s after the signal
  lost                  submissions never answered (no finished job by the end)
  duplicated            jobs the store finished more than once, or whose stored result differs from what the client
                        was answered
  failed_by_infrastructure  answers with error_code SYSTEM_ERROR (a failure that was not the candidate's)
  verdict_mismatches    answers whose outcome differs from the fault-free run's for the same submission

Redis runs without persistence, so every Redis kill loses what it held (queue, leases, finished results not yet
collected): the API node's store is what must carry every accepted job through.

Usage: bench/chaos/run_chaos.py [--duration 600] [--rate 0.8] [--out bench/results/chaos-cpu-DATE.json]
       [--kgym build/src/cli/kgym] [--seed 1] [--signals kill,term]
"""
import argparse
import datetime
import json
import os
import platform
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRAIN_S = 2  # --drain-timeout of the API node and the workers: a SIGTERM lands inside evaluations and cuts some short

# Cheap CPU cases: small references, candidates whose verdict does not depend on timing.
# (A reference as cheap as -x, 0.14 ms a call, once had a correct candidate judged hacked (caching) by the timing rules
# on this 2-core VM: its unseen input sets slowed by the evaluations beside it, nothing the kills did. The bench is
# about the service's faults, so its tasks do a little more work per element.)
REFS = {
    "relu": "torch.relu(x)", "tanh": "torch.tanh(x)", "sigmoid": "torch.sigmoid(x)",
    "gelu": "torch.nn.functional.gelu(x)",
}
# The body of each kind of candidate's forward (8 spaces in), for a reference's expression.
CANDIDATES = {
    "correct": "return {expr}",
    # Correct and slow (the same work 400 times per call, ~2 s an evaluation), so kills land inside evaluations.
    "slow_correct": "for _ in range(400):\n            y = {expr}\n        return y",
    "wrong": "return {expr} + 0.25",
    "compile_error": "return {expr} +",  # a syntax error
    "runtime_error": "return torch.matmul(x, torch.ones(3, 5))",  # shapes that do not multiply (x is 256 x 1024)
}


def reference(expr):
    # 256 x 1024 float32: 1 MiB, so the tensors travel as memfds and the outputs come back in lent buffers.
    return (f"import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return {expr}\n"
            "def get_inputs():\n    return [torch.randn(256, 1024)]\ndef get_init_inputs():\n    return []\n")


def candidate(body):
    return f"import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        {body}\n"


def submissions(n, seed):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ref, kind = rng.choice(sorted(REFS)), rng.choice(sorted(CANDIDATES))
        expr = REFS[ref]
        out.append({"task_id": f"chaos-{i:04d}-{ref}-{kind}", "case": f"{ref}/{kind}",
                    "body": {"task_id": f"chaos-{i:04d}-{ref}-{kind}", "reference_code": reference(expr),
                             "kernel_code": candidate(CANDIDATES[kind].format(expr=expr)), "backend": "triton",
                             "num_correct_trials": 3, "num_perf_trials": 30, "timeout": 120, "priority": "normal",
                             "entry_point": "Model", "is_valid": False, "verbose_errors": True,
                             "enable_profiling": False, "detect_decoy_kernel": True, "reference_backend": None}})
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None


class Cluster:
    """A private redis-server, `kgym serve --redis` on a fixed port and two `kgym worker`s, each restartable."""

    def __init__(self, kgym, work, name):
        self.kgym, self.work = kgym, work
        self.redis_port, self.port = free_port(), free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.url = f"http://127.0.0.1:{self.port}"
        self.store = os.path.join(work, f"{name}-store.sqlite")
        self.logs = {k: open(os.path.join(work, f"{name}-{k}.log"), "a") for k in ("redis", "server", "worker")}
        self.procs = {}
        self.lock = threading.Lock()
        for kind in ("redis", "server", "worker-a", "worker-b"):
            self.start(kind)
        self.wait_ready()

    def command(self, kind):
        if kind == "redis":
            return [shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(self.redis_port), "--bind",
                    "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"]
        if kind == "server":
            return [self.kgym, "serve", "--port", str(self.port), "--store", self.store, "--redis", self.redis_url,
                    "--drain-timeout", str(DRAIN_S)]
        return [self.kgym, "worker", "--redis", self.redis_url, "--worker-id", kind, "--gpus", "none",
                "--cpu-slots", "2", "--lease", "3", "--drain-timeout", str(DRAIN_S)]

    def start(self, kind):
        log = self.logs["worker" if kind.startswith("worker") else kind]
        log.write(f"=== {time.strftime('%H:%M:%S')} start {kind}\n")
        log.flush()
        self.procs[kind] = subprocess.Popen(self.command(kind), stdout=log, stderr=log, cwd=ROOT)

    def kill(self, kind, sig=signal.SIGKILL):
        """Sends `sig` and waits for the process to end; returns (seconds it took, whether it ended by itself). A
        SIGTERM'd node that is still alive DRAIN_S + 5 s later is SIGKILLed (and counted as not ending)."""
        p = self.procs[kind]
        t0 = time.time()
        p.send_signal(sig)
        try:
            p.wait(DRAIN_S + 5 if sig == signal.SIGTERM else 30)
            ended = True
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(30)
            ended = False
        return time.time() - t0, ended

    def wait_ready(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if http("GET", self.url + "/health", timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the cluster did not start")

    def close(self):
        for kind, p in self.procs.items():
            if p.poll() is None:
                p.kill()
                p.wait(30)


class Client:
    """Submits one job and waits for its answer, retrying as Dr.Kernel's reward client does."""

    def __init__(self, url, sub, give_up_at):
        self.url, self.sub, self.give_up_at = url, sub, give_up_at
        self.answer, self.retries, self.latency_s = None, 0, None

    def run(self):
        t0 = time.time()
        tid = self.sub["task_id"]
        posted = False
        while time.time() < self.give_up_at:
            try:
                if not posted:
                    status, _ = http("POST", self.url + "/v1/evaluations", self.sub["body"], timeout=30)
                    if status == 202:
                        posted = True
                        continue
                else:
                    status, j = http("GET", f"{self.url}/v1/evaluations/{tid}?wait=20", timeout=60)
                    if status == 200 and j["state"] == "done":
                        self.answer = j["result"]
                        self.latency_s = time.time() - t0
                        return
                    if status == 200:
                        continue
                    if status == 404:  # the server came back from before the job was stored: send it again
                        posted = False
            except (OSError, ValueError):
                pass
            self.retries += 1
            time.sleep(min(5.0, 0.5 * (1 + random.random()) * min(self.retries, 4)))


def run_clients(url, subs, rate, give_up_at, stop_submitting_at=None):
    clients, threads = [], []
    t0 = time.time()
    for k, sub in enumerate(subs):
        if rate > 0:
            due = t0 + k / rate
            while time.time() < due:
                time.sleep(min(0.05, due - time.time()) if due > time.time() else 0)
        if stop_submitting_at and time.time() > stop_submitting_at:
            break
        c = Client(url, sub, give_up_at)
        th = threading.Thread(target=c.run, daemon=True)
        th.start()
        clients.append(c)
        threads.append(th)
    return clients, threads


def killer(cluster, until, rng, kills, events, signals):
    while time.time() < until:
        time.sleep(rng.uniform(4, 10))
        if time.time() >= until:
            break
        kind = rng.choice(["server", "worker", "redis"])
        target = rng.choice(["worker-a", "worker-b"]) if kind == "worker" else kind
        # The API node and the workers get SIGTERM (a drain of DRAIN_S) or SIGKILL; Redis is always SIGKILLed.
        sig = rng.choice(signals) if kind != "redis" else signal.SIGKILL
        stop_s, ended = cluster.kill(target, sig)
        down = rng.uniform(0.5, 3.0)
        events.append({"at": round(time.time(), 3), "killed": target, "signal": signal.Signals(sig).name,
                       "stop_s": round(stop_s, 2), "ended_by_itself": ended, "down_s": round(down, 2)})
        time.sleep(down)
        cluster.start(target)
        kills[kind] += 1
        if sig == signal.SIGTERM:
            kills["sigterm_" + kind] += 1


def log_counts(*paths):
    """What the logs say was recovered: jobs re-queued after their worker died (expired leases, reaped by the API node
    or a worker) and jobs queued again by the API node after Redis lost them."""
    text = "".join(open(p).read() for p in paths)
    counts = {"requeued_after_worker_death": 0, "queued_again_after_redis_loss": 0}
    for line in text.splitlines():
        words = line.split()
        if "whose worker stopped heartbeating" in line or "with expired leases" in line:
            counts["requeued_after_worker_death"] += int(words[3])
        elif "redis did not hold" in line:
            counts["queued_again_after_redis_loss"] += int(words[3])
    return counts


def stored(store):
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return {r[0]: {"state": r[1], "completions": r[2], "result": json.loads(r[3]) if r[3] else None}
                for r in db.execute("SELECT id, state, completions, result FROM jobs")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=600, help="seconds of kills (and of submissions)")
    ap.add_argument("--rate", type=float, default=0.8, help="submissions per second")
    ap.add_argument("--kgym", default=os.path.join(ROOT, "build", "src", "cli", "kgym"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drain", type=float, default=600, help="seconds the answers may take after the kills end")
    ap.add_argument("--out", default=None)
    ap.add_argument("--signals", default="kill,term",
                    help="what stops the API node and the workers: kill (SIGKILL), term (SIGTERM, a drain), or both")
    a = ap.parse_args()
    signals = [{"kill": signal.SIGKILL, "term": signal.SIGTERM}[x] for x in a.signals.split(",")]
    work = tempfile.mkdtemp(prefix="kgym-chaos-")
    rng = random.Random(a.seed)
    subs = submissions(int(a.duration * a.rate), a.seed)
    started = datetime.datetime.now(datetime.timezone.utc)

    # 1. Chaos: submissions at `rate` while the killer works, then answers drained.
    cluster = Cluster(a.kgym, work, "chaos")
    kills, events = {"server": 0, "worker": 0, "redis": 0, "sigterm_server": 0, "sigterm_worker": 0}, []
    t0 = time.time()
    kt = threading.Thread(target=killer, args=(cluster, t0 + a.duration, rng, kills, events, signals), daemon=True)
    kt.start()
    clients, threads = run_clients(cluster.url, subs, a.rate, t0 + a.duration + a.drain, t0 + a.duration)
    kt.join()
    for th in threads:
        th.join(max(0.0, t0 + a.duration + a.drain - time.time()))
    chaos_s = time.time() - t0
    rows = stored(cluster.store)
    recovered = log_counts(os.path.join(work, "chaos-server.log"), os.path.join(work, "chaos-worker.log"))
    cluster.close()
    print(f"chaos: {len(clients)} submissions, kills {kills}, {chaos_s:.0f} s", flush=True)

    # 2. The same submissions with no kills.
    submitted = [c.sub for c in clients]
    base = Cluster(a.kgym, work, "baseline")
    t1 = time.time()
    base_clients, base_threads = run_clients(base.url, submitted, 0, time.time() + 3600)
    for th in base_threads:
        th.join()
    baseline_s = time.time() - t1
    base.close()
    baseline = {c.sub["task_id"]: c.answer for c in base_clients}

    # 3. The counts.
    records, lost, duplicated, infra, mismatched = [], [], [], [], []
    for c in clients:
        tid = c.sub["task_id"]
        got, row, want = c.answer, rows.get(tid), baseline.get(tid)
        rec = {"task_id": tid, "case": c.sub["case"], "outcome": got and got.get("outcome"),
               "baseline_outcome": want and want.get("outcome"), "client_retries": c.retries,
               "latency_s": c.latency_s and round(c.latency_s, 2), "completions": row and row["completions"]}
        records.append(rec)
        if got is None or row is None or row["state"] != 2:
            lost.append(tid)
            continue
        if row["completions"] != 1 or row["result"].get("completed_at") != got.get("completed_at"):
            duplicated.append(tid)
        if got.get("error_code") == "SYSTEM_ERROR":
            infra.append(tid)
        if want is None or got.get("outcome") != want.get("outcome"):
            mismatched.append(tid)
    summary = {"submissions": len(clients), "kills": kills, "lost": len(lost), "duplicated": len(duplicated),
               "failed_by_infrastructure": len(infra), "verdict_mismatches": len(mismatched),
               "chaos_wall_s": round(chaos_s, 1), "baseline_wall_s": round(baseline_s, 1), **recovered,
               "client_retried": sum(1 for c in clients if c.retries > 0),
               "sigterm_stops": sum(1 for e in events if e["signal"] == "SIGTERM"),
               "sigterm_not_ended_within_drain_plus_5s": sum(1 for e in events if not e["ended_by_itself"]),
               "sigterm_stop_s_max": max([e["stop_s"] for e in events if e["signal"] == "SIGTERM"], default=None),
               "outcomes": {o: sum(1 for r in records if r["outcome"] == o) for o in
                            sorted({str(r["outcome"]) for r in records})}}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {"bench": "chaos", "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
              "commit": commit, "date": started.isoformat(timespec="seconds"),
              "machine": {"host": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release(),
                          "load_avg_at_end": os.getloadavg()},
              "settings": {"duration_s": a.duration, "rate_per_s": a.rate, "seed": a.seed, "workers": 2,
                           "cpu_slots_per_worker": 2, "lease_s": 3, "kill_every_s": [4, 10], "down_s": [0.5, 3.0],
                           "signals": a.signals, "drain_timeout_s": DRAIN_S,
                           "redis_persistence": "none"},
              "summary": summary, "lost": lost, "duplicated": duplicated, "failed_by_infrastructure": infra,
              "verdict_mismatches": mismatched, "kill_events": events, "records": records}
    print("| submissions | kills server/worker/redis (of which SIGTERM) | lost | duplicated | failed by infrastructure | "
          "verdict mismatches | SIGTERM'd nodes not ended in drain + 5 s |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {summary['submissions']} | {kills['server']}/{kills['worker']}/{kills['redis']} "
          f"({kills['sigterm_server']}/{kills['sigterm_worker']}/0) | {summary['lost']} | "
          f"{summary['duplicated']} | {summary['failed_by_infrastructure']} | {summary['verdict_mismatches']} | "
          f"{summary['sigterm_not_ended_within_drain_plus_5s']} |")
    out = a.out or os.path.join(ROOT, "bench", "results", f"chaos-cpu-{started.date().isoformat()}.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print("raw results:", out, "(logs in", work + ")")
    bad = (summary["lost"] + summary["duplicated"] + summary["failed_by_infrastructure"] + summary["verdict_mismatches"] +
           summary["sigterm_not_ended_within_drain_plus_5s"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
