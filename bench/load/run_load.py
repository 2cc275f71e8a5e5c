#!/usr/bin/python3
"""Load benchmark of `kgym serve` over loopback (127.0.0.1 only), bounded in count and time.

Phase A (burst + crash): N submissions in a burst through POST /v1/evaluations from C client threads; while the
burst is under way the server is killed with SIGKILL and restarted on the same store. Clients retry a refused
submission with the same id (as the Dr.Kernel client does). At the end every job must be done, with exactly one
stored result (SQLite `completions == 1`); the simulated evaluator's journal shows how many evaluations were
re-run because they were in flight at the kill.
Phase B (added latency): C clients in a closed loop on the blocking POST /evaluate with a fixed simulated
evaluation time and enough slots that nothing queues; added latency = round trip - evaluation time.

The evaluator is the simulated one: this measures the serving path (HTTP, validation, store, scheduler), not
GPU work. Prints one table; writes raw numbers to bench/results/load-<host>.json.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REF = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


def kernel(sleep):
    return f"import torch\nclass ModelNew(torch.nn.Module):\n    pass\n# sim: sleep={sleep}\n"


def payload(task_id, sleep):
    return {"task_id": task_id, "reference_code": REF, "kernel_code": kernel(sleep), "backend": "triton",
            "num_correct_trials": 5, "num_perf_trials": 100, "timeout": 300, "priority": "normal",
            "entry_point": "Model", "is_valid": False, "verbose_errors": True, "enable_profiling": True,
            "detect_decoy_kernel": True, "reference_backend": None}


class ServerProc:
    def __init__(self, binary, store, journal, slots, sleep, log):
        args = [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--store", store, "--evaluator", "simulated",
                "--gpus", "none", "--cpu-slots", str(slots), "--sim-sleep", str(sleep), "--sim-journal", journal,
                "--http-threads", "256"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            raise RuntimeError("server did not start: " + line)
        self.port = int(m.group(1))

    def rss_kb(self):
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
        return out


class Client:
    """One keep-alive connection; reconnects (and reports) when the server goes away."""

    def __init__(self, port_ref):
        self.port_ref = port_ref
        self.conn = None

    def call(self, method, path, body=None, timeout=120):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port_ref[0], timeout=timeout)
        try:
            data = None if body is None else json.dumps(body)
            self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = self.conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            return None, b""


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def phase_a(args, tmp, log):
    store, journal = os.path.join(tmp, "a.sqlite"), os.path.join(tmp, "a.journal")
    srv = ServerProc(args.bin, store, journal, args.slots, args.sim_sleep, log)
    port = [srv.port]
    ids = [f"load-{i:05d}" for i in range(args.n)]
    ack_ms, refused = [], [0]
    submitted = [0]
    lock = threading.Lock()
    deadline = time.time() + args.max_seconds

    def submitter(k):
        c = Client(port)
        for i in range(k, args.n, args.clients):
            while time.time() < deadline:
                t0 = time.perf_counter()
                st, _ = c.call("POST", "/v1/evaluations", payload(ids[i], args.sim_sleep))
                if st == 202:
                    with lock:
                        ack_ms.append((time.perf_counter() - t0) * 1000)
                        submitted[0] += 1
                    break
                with lock:
                    refused[0] += 1
                time.sleep(0.05)

    threads = [threading.Thread(target=submitter, args=(k,)) for k in range(args.clients)]
    t_start = time.time()
    for t in threads:
        t.start()
    while submitted[0] < args.n * args.kill_at and time.time() < deadline:
        time.sleep(0.01)
    killed_at = submitted[0]
    srv.proc.kill()
    srv.proc.wait()
    time.sleep(0.5)
    srv = ServerProc(args.bin, store, journal, args.slots, args.sim_sleep, log)
    port[0] = srv.port
    for t in threads:
        t.join()
    t_submitted = time.time()
    done = [0]

    def waiter(k):
        c = Client(port)
        for i in range(k, args.n, args.clients):
            while time.time() < deadline:
                st, body = c.call("GET", f"/v1/evaluations/{ids[i]}?wait=60")
                if st == 200 and json.loads(body)["state"] == "done":
                    with lock:
                        done[0] += 1
                    break

    threads = [threading.Thread(target=waiter, args=(k,)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_end = time.time()
    rss = srv.rss_kb()
    srv.proc.send_signal(signal.SIGTERM)
    srv.proc.wait(60)
    db = sqlite3.connect(store)
    rows = db.execute("SELECT COUNT(*), SUM(state = 2), SUM(completions = 1), SUM(completions > 1) FROM jobs").fetchone()
    bad_results = 0
    for job_id, result in db.execute("SELECT id, result FROM jobs"):
        r = json.loads(result) if result else {}
        if r.get("task_id") != job_id or r.get("outcome") != "correct":
            bad_results += 1
    db.close()
    ends, starts = {}, {}
    with open(journal) as f:
        for line in f:
            what, jid = line.split()
            table = ends if what == "end" else starts
            table[jid] = table.get(jid, 0) + 1
    return {
        "n": args.n, "clients": args.clients, "slots": args.slots, "sim_sleep_s": args.sim_sleep,
        "killed_after_submitted": killed_at, "refused_submissions_during_restart": refused[0],
        "jobs_in_store": rows[0], "jobs_done": rows[1], "completed_exactly_once": rows[2],
        "completed_more_than_once": rows[3], "wrong_or_missing_results": bad_results,
        "observed_done_by_clients": done[0],
        "evaluations_run": sum(ends.values()), "evaluated_twice_due_to_kill": sum(1 for v in ends.values() if v > 1),
        "started_more_than_once": sum(1 for v in starts.values() if v > 1),
        "ack_latency_ms": {"p50": pct(ack_ms, 50), "p99": pct(ack_ms, 99), "max": max(ack_ms) if ack_ms else None},
        "burst_seconds": t_submitted - t_start, "total_seconds": t_end - t_start,
        "server_rss_kb_after": rss.get("VmRSS"), "server_peak_rss_kb": rss.get("VmHWM"),
    }


def phase_b(args, tmp, log):
    store, journal = os.path.join(tmp, "b.sqlite"), os.path.join(tmp, "b.journal")
    srv = ServerProc(args.bin, store, journal, max(args.clients, args.slots), args.latency_sleep, log)
    port = [srv.port]
    added_ms = []
    lock = threading.Lock()
    per_client = max(1, args.latency_n // args.clients)

    def client(k):
        c = Client(port)
        for j in range(per_client):
            t0 = time.perf_counter()
            st, _ = c.call("POST", "/evaluate", payload(f"lat-{k}-{j}", args.latency_sleep))
            rtt = (time.perf_counter() - t0) * 1000
            if st == 200:
                with lock:
                    added_ms.append(rtt - args.latency_sleep * 1000)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rss = srv.rss_kb()
    srv.proc.send_signal(signal.SIGTERM)
    srv.proc.wait(60)
    return {"requests": len(added_ms), "clients": args.clients, "sim_eval_s": args.latency_sleep,
            "added_latency_ms": {"p50": pct(added_ms, 50), "p90": pct(added_ms, 90), "p99": pct(added_ms, 99),
                                 "mean": statistics.mean(added_ms) if added_ms else None},
            "server_peak_rss_kb": rss.get("VmHWM")}


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return {"uname": " ".join(platform.uname()), "cpu": cpu, "cores": os.cpu_count()}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("KGYM_BIN", os.path.join(root, "build/src/cli/kgym")))
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--sim-sleep", type=float, default=0.002)
    ap.add_argument("--kill-at", type=float, default=0.5, help="fraction of submissions before the SIGKILL")
    ap.add_argument("--latency-n", type=int, default=2000)
    ap.add_argument("--latency-sleep", type=float, default=0.02)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.n = min(args.n, 20000)  # bounded
    with tempfile.TemporaryDirectory(prefix="kgym-load-") as tmp, open(os.path.join(tmp, "serve.log"), "w") as log:
        a = phase_a(args, tmp, log)
        b = phase_b(args, tmp, log)
    commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"benchmark": "load", "command": " ".join(sys.argv), "git_commit": commit, "machine": machine(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "burst_and_crash": a,
           "added_latency": b}
    path = args.out or os.path.join(root, "bench/results", f"load-{socket.gethostname()}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"{'metric':<52} {'value':>14}")
    rows = [
        ("submissions (burst, SIGKILL + restart mid-run)", a["n"]),
        ("submitted before SIGKILL", a["killed_after_submitted"]),
        ("refused while restarting (retried, same id)", a["refused_submissions_during_restart"]),
        ("jobs done in store", a["jobs_done"]),
        ("completed exactly once", a["completed_exactly_once"]),
        ("completed more than once", a["completed_more_than_once"]),
        ("wrong or missing results", a["wrong_or_missing_results"]),
        ("evaluations restarted (in flight at the kill)", a["started_more_than_once"]),
        ("evaluations finished twice", a["evaluated_twice_due_to_kill"]),
        ("submit ack p50 / p99 (ms)", f"{a['ack_latency_ms']['p50']:.2f} / {a['ack_latency_ms']['p99']:.2f}"),
        ("burst + drain wall time (s)", f"{a['total_seconds']:.1f}"),
        ("server RSS after / peak (MiB)", f"{a['server_rss_kb_after']/1024:.0f} / {a['server_peak_rss_kb']/1024:.0f}"),
        (f"POST /evaluate added latency p50 / p99 (ms, {b['clients']} clients)",
         f"{b['added_latency_ms']['p50']:.2f} / {b['added_latency_ms']['p99']:.2f}"),
    ]
    for k, v in rows:
        print(f"{k:<52} {v!s:>14}")
    print(f"raw numbers: {path}")
    ok = a["completed_exactly_once"] == a["n"] and a["wrong_or_missing_results"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
