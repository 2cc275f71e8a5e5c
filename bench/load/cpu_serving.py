#!/usr/bin/python3
"""CPU serving time of many small concurrent evaluations (issue 40's "CPU serving slowdown"): N correct ReLU
candidates posted at once through KernelGYM's POST /evaluate to `kgym serve --gpus none`, as Dr.Kernel's reward client
sends a batch, under each server setting given; the wall from the first post to the last answer, and where the
evaluations' time went (metadata.account, summed).

  bench/load/cpu_serving.py --bin build/src/cli/kgym --tasks 64 --settings "default;--no-freeze-neighbours"

Writes raw numbers (command, commit, machine, date, every account) to --out; prints one table.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(256, 512)]
def get_init_inputs():
    return []
"""
KERNEL = REF.replace("class Model(", "class ModelNew(").replace("torch.relu(x)", "torch.clamp(x, min=0.0)")


def post(url, body, timeout=600):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def run(args, setting, tmp, n):
    extra = [] if setting == "default" else shlex.split(setting)
    env = dict(os.environ)
    if "KGYM_FREEZER=" in setting:  # an environment setting, not a flag
        extra = [x for x in extra if not x.startswith("KGYM_FREEZER=")]
        env["KGYM_FREEZER"] = re.search(r"KGYM_FREEZER=(\S+)", setting).group(1)
    cmd = [args.bin, "serve", "--port", "0", "--store", os.path.join(tmp, "s%d.sqlite" % n), "--gpus", "none",
           "--cpu-slots", str(args.slots), "--drain-timeout", "5", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    url = re.search(r"listening on (http://[\d.]+:\d+)", proc.stdout.readline()).group(1)
    bodies = [{"task_id": "t%d-%d" % (n, i), "reference_code": REF, "kernel_code": KERNEL, "backend": "triton",
               "num_correct_trials": 5, "num_perf_trials": 100, "timeout": 300, "kgym_result": True}
              for i in range(args.tasks)]
    t0 = time.time()
    lat = []

    def one(b):
        s = time.time()
        r = post(url + "/evaluate", b)
        lat.append(time.time() - s)
        return r

    with concurrent.futures.ThreadPoolExecutor(args.clients or args.tasks) as pool:
        results = list(pool.map(one, bodies))
    wall = time.time() - t0
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    parts = {}
    for r in results:
        for k, v in ((r.get("metadata") or {}).get("account") or {}).get("wall", {}).items():
            parts[k] = parts.get(k, 0.0) + v
    return {"setting": setting, "command": " ".join(cmd), "wall_s": wall, "latency_median_s": sorted(lat)[len(lat) // 2],
            "outcomes": {o: sum(r.get("outcome") == o for r in results) for o in {r.get("outcome") for r in results}},
            "account_wall_s": parts,
            "frozen_s": sum(((r.get("metadata") or {}).get("account") or {}).get("frozen_s", 0) for r in results)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/src/cli/kgym"))
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--clients", type=int, default=0, help="concurrent clients (0 = one per task; Dr.Kernel's rate "
                                                          "limit of the compat bench is 8)")
    ap.add_argument("--settings", default="default;--no-freeze-neighbours",
                    help="';'-separated server settings: extra flags, or KGYM_FREEZER=...")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "cpu_serving-vm.json"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kgym-cpu-serving-")
    runs = [run(args, s.strip(), tmp, n) for n, s in enumerate(args.settings.split(";")) if s.strip()]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"benchmark": "cpu_serving", "command": " ".join(sys.argv), "git_commit": commit,
           "machine": {"uname": " ".join(platform.uname()), "cores": os.cpu_count()},
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "tasks": args.tasks,
           "slots": args.slots, "clients": args.clients, "runs": runs}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    json.dump(out, open(args.out, "w"), indent=1)
    print("| setting | wall s | median latency s | outcomes | frozen s | account (s, summed over tasks) |\n"
          "|---|---|---|---|---|---|")
    for r in runs:
        parts = ", ".join("%s %.1f" % kv for kv in sorted(r["account_wall_s"].items(), key=lambda kv: -kv[1])[:7])
        print("| %s | %.1f | %.2f | %s | %.1f | %s |" % (r["setting"], r["wall_s"], r["latency_median_s"], r["outcomes"],
                                                      r["frozen_s"], parts))
    print("raw numbers: %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
