#!/usr/bin/env python3
"""What holds the supervisor's memory: `kgym serve --gpus none` evaluates a correct ReLU of R x C fp32 (3 correctness
+ P timed trials, the issue-39 task at a smaller size), and at each phase the supervisor's /proc/PID/status (RssAnon,
RssFile, RssShmem) is read beside what memory admission counts (/v1/metrics: reserved, resident) and what the result
says it measured (metadata.host_memory, memory_admission). Prints one table; raw numbers to bench/results/.

Usage: bench/memory/supervisor_rss.py [--rows 2048 --cols 4096 --perf-trials 200 --jobs 2 --mem-budget 4]"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL = ("import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "    def forward(self, x):\n        return torch.clamp(x, min=0.0)\n")


def ref(rows, cols):
    return ("import torch\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "    def forward(self, x):\n        return torch.relu(x)\n"
            f"def get_inputs():\n    return [torch.randn({rows}, {cols})]\ndef get_init_inputs():\n    return []\n")


def rss(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[k] = int(v.split()[0]) * 1024
    return out


def get(url, path):
    with urllib.request.urlopen(url + path, timeout=60) as f:
        return f.read().decode()


def admission(url):
    prom = get(url, "/v1/metrics")
    val = lambda n: int(float(re.search(rf"^{n} ([\d.e+]+)$", prom, re.M).group(1)))  # noqa: E731
    return {"reserved": val("kgym_memory_reserved_bytes"), "resident": val("kgym_memory_resident_bytes"),
            "budget": val("kgym_memory_budget_bytes")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--perf-trials", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--mem-budget", default="4")
    ap.add_argument("--kgym", default=os.path.join(ROOT, "build", "src", "cli", "kgym"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    work = f"/tmp/kgym-rss-{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    log = open(os.path.join(work, "serve.log"), "w")
    p = subprocess.Popen([a.kgym, "serve", "--port", "0", "--store", os.path.join(work, "s.sqlite"), "--gpus", "none",
                          "--cpu-slots", "2", "--mem-budget", a.mem_budget], stdout=subprocess.PIPE, stderr=log,
                         text=True)
    url = re.search(r"http://[\d.:]+", p.stdout.readline()).group(0)
    samples = [{"at": "idle", **rss(p.pid), **admission(url)}]
    body = {"reference_code": ref(a.rows, a.cols), "kernel_code": KERNEL, "backend": "triton",
            "num_correct_trials": 3, "num_perf_trials": a.perf_trials, "timeout": 3000, "enable_profiling": False}
    ids = [f"rss-{i}" for i in range(a.jobs)]
    for i in ids:
        req = urllib.request.Request(url + "/v1/evaluations", data=json.dumps(body | {"task_id": i}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(req, timeout=60).read()
    peak = dict(samples[0])
    results = {}
    while len(results) < len(ids):
        s = {**rss(p.pid), **admission(url)}
        if s["VmRSS"] > peak.get("VmRSS", 0):
            peak = {"at": "peak (in flight)", **s}
        for i in ids:
            if i not in results:
                j = json.loads(get(url, f"/v1/evaluations/{i}"))
                if j.get("state") == "done":
                    results[i] = j["result"]
        time.sleep(0.2)
    samples += [peak, {"at": "after (reference cached)", **rss(p.pid), **admission(url)}]
    p.terminate()
    p.wait(60)
    md = results[ids[0]]["metadata"]
    tensor = a.rows * a.cols * 4
    print(f"ReLU {a.rows}x{a.cols} fp32 ({tensor / 1e6:.0f} MB a tensor), 3 + {a.perf_trials} trials, {a.jobs} jobs:")
    print("| when | VmRSS | RssAnon | RssShmem | admission reserved | of which resident (cache) |")
    print("|---|---|---|---|---|---|")
    for s in samples:
        print(f"| {s['at']} | {s['VmRSS'] / 1e6:.0f} MB | {s['RssAnon'] / 1e6:.0f} MB | {s['RssShmem'] / 1e6:.0f} MB | "
              f"{s['reserved'] / 1e6:.0f} MB | {s['resident'] / 1e6:.0f} MB |")
    hm = md.get("host_memory", {})
    print("host_memory:", json.dumps(hm), "\nmemory_admission:", json.dumps(md.get("memory_admission")))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = a.out or os.path.join(ROOT, "bench", "results", f"supervisor_rss-cpu-{datetime.date.today()}.json")
    with open(out, "w") as f:
        json.dump({"bench": "supervisor_rss", "command": " ".join(sys.argv), "commit": commit,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "machine": {"host": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release()},
                   "tensor_bytes": tensor, "samples": samples, "host_memory": hm,
                   "memory_admission": md.get("memory_admission"),
                   "outcomes": {i: r.get("outcome") for i, r in results.items()}}, f, indent=1)
    print("raw results:", out)


if __name__ == "__main__":
    sys.exit(main())
