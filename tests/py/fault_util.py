"""Helpers for the fault-point tests (src/fault/fault_points.h): a real `kgym serve` on the CPU with one fault armed
through KGYM_FAULTS, two evaluations run side by side (the one the fault meets and its neighbour), the markers of the
faults that fired, and the store's rows read from the SQLite file itself."""
import json
import os
import sqlite3
import time

from server_util import KERNEL_OK, Server, drkernel_payload

# Large enough that tensors travel as memfds (>= 64 KiB) and outputs come back in lent buffers (>= 1 MiB).
BIG_REF = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(512, 1024)]
def get_init_inputs():
    return []
"""

SMALL_REF = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x)
def get_inputs():
    return [torch.randn(64, 64)]
def get_init_inputs():
    return []
"""
SMALL_WRONG = """import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 0.5
"""

# The two evaluations of every case and their verdicts in a fault-free run.
FAULTED, NEIGHBOUR = "big-correct", "small-wrong"
EXPECTED = {FAULTED: "correct", NEIGHBOUR: "incorrect"}


def payload(task_id, ref, code):
    p = drkernel_payload(task_id, code, ref)
    p.update({"num_correct_trials": 2, "num_perf_trials": 5, "timeout": 120})
    return p


JOBS = {FAULTED: payload(FAULTED, BIG_REF, KERNEL_OK), NEIGHBOUR: payload(NEIGHBOUR, SMALL_REF, SMALL_WRONG)}


class FaultCase:
    """`kgym serve --gpus none` with KGYM_FAULTS=spec. No spare workers and no reference look-ahead: every worker
    belongs to an evaluation (a look-ahead's failure is not its evaluation's: that one computes the reference again)."""

    def __init__(self, tmp_path, spec, *args):
        self.dir = tmp_path / "faults"
        self.dir.mkdir(exist_ok=True)
        env = dict(os.environ, KGYM_FAULTS=spec, KGYM_FAULTS_DIR=str(self.dir))
        self.server = Server(tmp_path, "--gpus", "none", "--cpu-slots", "2", "--spare-workers", "0",
                             "--reference-lookahead", "0", "--retry-backoff", "0.2", *args, env=env)

    def submit(self, jobs):
        for body in jobs.values():
            r = self.server.post("/v1/evaluations", body)
            assert r.status == 202, (r.status, r.body)

    def wait(self, ids, timeout=300):
        out = {}
        deadline = time.time() + timeout
        for i in ids:
            while True:
                j = self.server.get(f"/v1/evaluations/{i}?wait=30", timeout=60).json()
                if j["state"] == "done" or time.time() > deadline:
                    break
            assert j["state"] == "done", (i, j)
            out[i] = j
        return out

    def run(self, jobs=None):
        jobs = jobs or JOBS
        self.submit(jobs)
        return self.wait(list(jobs))

    def fired(self):
        return sorted(os.listdir(self.dir))

    def rows(self):
        """The store's rows: id -> (state, generation, completions, outcome label, attempts)."""
        with sqlite3.connect(f"file:{self.server.store}?mode=ro", uri=True) as db:
            return {r[0]: tuple(r[1:]) for r in
                    db.execute("SELECT id, state, generation, completions, outcome, attempts FROM jobs")}

    def log(self):
        self.server.log.flush()
        self.server.log.seek(0)
        return self.server.log.read()

    def close(self):
        self.server.kill()


def outcome(job):
    return job["result"]["outcome"] if job.get("result") else None


def check_verdicts_and_store(case, jobs):
    """Every job ended with its fault-free verdict, each stored done once, and the service answers."""
    for i, j in jobs.items():
        assert outcome(j) == EXPECTED[i], (i, json.dumps(j["result"])[:2000], case.log()[-3000:])
    rows = case.rows()
    for i in jobs:
        state, generation, completions, label, _ = rows[i]
        assert (state, generation, completions, label) == (2, 1, 1, EXPECTED[i]), (i, rows[i])
    assert case.server.get("/health").status == 200


def retried(job):
    """Whether the evaluation ran again after a failure that was not the candidate's: a retry of the job (a system
    error, attempt 2) or the candidate run again after its channel broke (metadata.candidate_rerun)."""
    return job["attempts"] >= 2 or "candidate_rerun" in (job["result"].get("metadata") or {})
