"""Many-node mode: `kgym serve --redis` as the API node and two `kgym worker` processes on a private
redis-server; one worker is killed with SIGKILL mid-job and its job completes on the other after the lease
expires."""
import os
import signal
import subprocess
import time

import pytest

from server_util import KGYM_BIN, Server, drkernel_payload, sim_kernel

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")


def start_worker(redis_url, name, journal, log):
    return subprocess.Popen([KGYM_BIN, "worker", "--redis", redis_url, "--worker-id", name, "--gpus", "none",
                             "--cpu-slots", "1", "--lease", "1", "--evaluator", "simulated", "--sim-journal", journal],
                            stdout=log, stderr=log)


def test_job_of_a_killed_worker_completes_on_the_other(tmp_path, redis):
    api = Server(tmp_path, "--redis", redis.url)
    log = open(tmp_path / "workers.log", "w")
    ja, jb = str(tmp_path / "a.journal"), str(tmp_path / "b.journal")
    wa = start_worker(redis.url, "worker-a", ja, log)
    wb = start_worker(redis.url, "worker-b", jb, log)
    try:
        r = api.post("/v1/evaluations", drkernel_payload("long-job", sim_kernel("# sim: sleep=3")))
        assert r.status == 202
        victim = None
        for _ in range(200):
            for proc, journal in ((wa, ja), (wb, jb)):
                if os.path.exists(journal) and "start long-job" in open(journal).read():
                    victim = (proc, journal)
            if victim:
                break
            time.sleep(0.025)
        assert victim, "no worker started the job"
        victim[0].send_signal(signal.SIGKILL)
        victim[0].wait(10)
        got = api.get("/v1/evaluations/long-job?wait=30").json()
        assert got["state"] == "done", got
        assert got["result"]["correctness"] is True
        survivor_journal = jb if victim[1] == ja else ja
        assert "end long-job" in open(survivor_journal).read()
        assert "end long-job" not in open(victim[1]).read()
        # The KernelGYM path works the same through Redis, and more jobs spread over the survivor.
        for i in range(3):
            res = api.post("/evaluate", drkernel_payload(f"short-{i}", sim_kernel("# sim: sleep=0.05")), timeout=30)
            assert res.status == 200 and res.json()["status"] == "completed"
        assert api.poll_status("short-2") == "completed"
    finally:
        for p in (wa, wb):
            if p.poll() is None:
                p.kill()
                p.wait(10)
        api.kill()


def test_cancel_through_redis_stops_the_worker(tmp_path, redis):
    api = Server(tmp_path, "--redis", redis.url)
    log = open(tmp_path / "workers.log", "w")
    w = start_worker(redis.url, "worker-c", str(tmp_path / "c.journal"), log)
    try:
        assert api.post("/v1/evaluations", drkernel_payload("to-cancel", sim_kernel("# sim: sleep=60"))).status == 202
        assert api.post("/v1/evaluations", drkernel_payload("queued", sim_kernel("# sim: sleep=60"))).status == 202
        for _ in range(200):
            if "start to-cancel" in open(tmp_path / "c.journal").read() if (tmp_path / "c.journal").exists() else False:
                break
            time.sleep(0.025)
        assert api.delete("/tasks/queued").status == 200
        assert api.delete("/tasks/to-cancel").status == 200
        assert api.poll_status("queued", timeout=10) == "failed"  # KernelGYM's status of a cancelled task
        assert api.poll_status("to-cancel", timeout=15) == "failed"
        for tid in ("queued", "to-cancel"):
            assert api.get("/v1/evaluations/" + tid).json()["status"] == "cancelled"
        # SIGTERM: the worker drains and exits cleanly.
        w.send_signal(signal.SIGTERM)
        assert w.wait(20) == 0
    finally:
        if w.poll() is None:
            w.kill()
        api.kill()


def test_sigterm_of_a_worker_ends_within_its_drain_timeout_and_gives_its_job_back(tmp_path, redis):
    """`kgym worker --drain-timeout 1` with a job that needs 8 s: SIGTERM ends the worker within the drain timeout (+5 s
    to stop), its job goes back to the queue at once (not a 30 s lease later), and another worker finishes it, once."""
    api = Server(tmp_path, "--redis", redis.url)
    log = open(tmp_path / "workers.log", "w")
    ja, jb = str(tmp_path / "a.journal"), str(tmp_path / "b.journal")

    def worker(name, journal):
        return subprocess.Popen([KGYM_BIN, "worker", "--redis", redis.url, "--worker-id", name, "--gpus", "none",
                                 "--cpu-slots", "1", "--lease", "30", "--drain-timeout", "1", "--evaluator",
                                 "simulated", "--sim-journal", journal], stdout=log, stderr=log)

    wa = worker("worker-a", ja)
    wb = None
    try:
        assert api.post("/v1/evaluations", drkernel_payload("drained", sim_kernel("# sim: sleep=8"))).status == 202
        for _ in range(400):
            if os.path.exists(ja) and "start drained" in open(ja).read():
                break
            time.sleep(0.025)
        t0 = time.time()
        wa.send_signal(signal.SIGTERM)
        assert wa.wait(1 + 5 + 5) == 0
        assert time.time() - t0 <= 1 + 5 + 5
        wb = worker("worker-b", jb)
        got = api.get("/v1/evaluations/drained?wait=25", timeout=40).json()
        assert got["state"] == "done" and got["result"]["correctness"] is True, got
        assert open(jb).read() == "start drained\nend drained\n"  # the other worker ran it (a stopped run ends too)
        log.flush()
        text = open(tmp_path / "workers.log").read()
        assert "stopping 1 evaluation(s) still running" in text and "1 job(s) back in the queue" in text, text
        import sqlite3
        with sqlite3.connect(f"file:{api.store}?mode=ro", uri=True) as db:
            assert db.execute("SELECT completions FROM jobs WHERE id = 'drained'").fetchone() == (1,)
    finally:
        for p in (wa, wb):
            if p and p.poll() is None:
                p.kill()
                p.wait(10)
        api.kill()
