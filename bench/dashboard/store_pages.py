#!/usr/bin/python3
"""How long the dashboard's routes take with many jobs in the store (over loopback, 127.0.0.1 only).

Fills a fresh store with N finished jobs (results of realistic size: 100 timing samples, 2 kB of code), starts
`kgym serve --evaluator simulated` on it, and times each route the page polls (median and max of R requests):
the first and the last page of the job list, a search by task id, a filter by outcome, the summary and the
timeline. Prints one table; writes raw numbers to bench/results/dashboard_store-<host>.json.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
sys.path.insert(0, os.path.join(ROOT, "tests", "py"))
from run_folders import fill_store  # noqa: E402
from server_util import Server  # noqa: E402


class Tmp:
    def __init__(self, path):
        self.path = path

    def __truediv__(self, name):
        return os.path.join(self.path, name)


def time_route(url, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as r:
            r.read()
        times.append(1000 * (time.perf_counter() - t0))
    return {"median_ms": round(statistics.median(times), 2), "max_ms": round(max(times), 2), "n": repeats}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Tmp(d)
        first = Server(tmp, "--evaluator", "simulated", "--gpus", "none")
        first.stop()
        fill_store(first.store, args.jobs)
        s = Server(tmp, "--evaluator", "simulated", "--gpus", "none", store=first.store)
        try:
            routes = {"first page": "/v1/jobs?limit=50",
                      "last page": f"/v1/jobs?limit=50&offset={args.jobs - 50}",
                      "search by task id": "/v1/jobs?q=bulk-0999",
                      "filter by outcome": "/v1/jobs?outcome=hacked&limit=50",
                      "summary": "/v1/dashboard/summary",
                      "timeline (1 h)": "/v1/dashboard/timeline?window_s=3600&bucket_s=60"}
            results = {name: time_route(s.url + path, args.repeats) for name, path in routes.items()}
        finally:
            s.kill()
    print(f"{'route':<22}{'median ms':>12}{'max ms':>10}   ({args.jobs} jobs)")
    for name, r in results.items():
        print(f"{name:<22}{r['median_ms']:>12}{r['max_ms']:>10}")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"benchmark": "dashboard_store_pages", "command": " ".join(sys.argv), "git_commit": commit,
           "machine": {"host": platform.node(), "cpus": os.cpu_count()},
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "jobs": args.jobs, "routes": results}
    path = os.path.join(ROOT, "bench", "results", "dashboard_store-vm.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print("wrote", path)


if __name__ == "__main__":
    main()
