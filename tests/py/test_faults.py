"""Faults on the trusted side of `kgym serve` (src/fault/fault_points.h), one test per fault point, each on a real
server evaluating on the CPU: the fault is armed through KGYM_FAULTS, meets one of two evaluations run side by side,
and the test checks that it fired (its marker in KGYM_FAULTS_DIR), how the evaluation it met ended, that both verdicts
are those of a fault-free run, that the store holds each job done exactly once with that verdict, and that the
service still answers. The Redis points are in test_faults_redis.py, the trainer's in test_faults_train.py."""
import os

import pytest

from fault_util import EXPECTED, FAULTED, JOBS, NEIGHBOUR, FaultCase, check_verdicts_and_store, retried
from server_util import KGYM_BIN

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")


@pytest.fixture
def case(tmp_path):
    made = []

    def make(spec, *args):
        c = FaultCase(tmp_path, spec, *args)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def faulted(case):
    """Runs the two evaluations under `spec` and checks what every case must show: the fault fired, both verdicts
    are the fault-free run's, the store holds each done once, the service answers. Returns (case, jobs)."""

    def run(spec, *args):
        c = case(spec, *args)
        jobs = c.run()
        entry = spec.split(":")[0].split("*")[0].replace("/", ".")
        assert c.fired() == [entry if "@" in entry else entry + "@1"], c.log()[-3000:]
        check_verdicts_and_store(c, jobs)
        return c, jobs

    return run


def one_retried(jobs):
    """Exactly one of the two was met by the fault and ran again; the other ran once, untouched."""
    hit = [i for i, j in jobs.items() if retried(j)]
    assert len(hit) == 1, {i: (j["attempts"], j["result"].get("metadata", {}).get("candidate_rerun")) for i, j in
                           jobs.items()}
    return hit[0]


def test_bad_spec_is_refused_before_anything_runs(tmp_path):
    import subprocess
    env = dict(os.environ, KGYM_FAULTS="store.insret@1")
    p = subprocess.run([KGYM_BIN, "serve", "--port", "0", "--store", str(tmp_path / "s.sqlite")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "unknown fault point 'store.insret'" in p.stderr


@pytest.mark.parametrize("mode", ["refuse", "die"])
def test_zygote_fork(faulted, mode):
    c, jobs = faulted(f"zygote.fork@1:{mode}")
    if mode == "refuse":
        one_retried(jobs)  # the worker the zygote refused: a system error, retried
    else:
        # The zygote's death takes every worker it forked with it: whatever ran then is retried, none is blamed.
        assert any(j["attempts"] >= 2 for j in jobs.values())
    # A new zygote serves what comes next.
    more = c.run({"after": dict(JOBS[FAULTED], task_id="after")})
    assert more["after"]["result"]["outcome"] == "correct" and more["after"]["attempts"] == 1


def test_worker_spawn(faulted):
    c, jobs = faulted("worker.spawn@1")
    hit = one_retried(jobs)
    assert jobs[hit]["attempts"] == 2


def test_memfd_map(faulted):
    """Only the large task's tensors travel as memfds: the mapping that fails is in its evaluation."""
    c, jobs = faulted("memfd.map@1")
    assert jobs[FAULTED]["attempts"] == 2 and jobs[NEIGHBOUR]["attempts"] == 1


@pytest.mark.parametrize("point", ["memfd.create", "memfd.seal", "lent.register"])
def test_lent_buffer_cannot_be_made(faulted, point):
    """No buffer to lend the large task's candidate: its outputs come in memfds of the worker's own, and that is no
    failure of the evaluation."""
    c, jobs = faulted(f"{point}@1")
    assert all(j["attempts"] == 1 for j in jobs.values())
    lent = jobs[FAULTED]["result"]["metadata"]["lent_buffers"]
    assert lent["made"] == 0 and lent["used"] == 0, lent


@pytest.mark.parametrize("mode", ["short", "garbage", "eof"])
@pytest.mark.parametrize("scope", ["hello", "reference", "candidate"])
def test_channel_read(faulted, scope, mode):
    """A frame the supervisor reads (the first worker's hello, or the second frame of a reference's or a candidate's
    run) is cut short, has a garbage length or ends inside its prefix. In a hello or a reference's run: a system
    error, retried (a reference is never kept as broken for it). In a candidate's run: what tampering looks like, so
    the candidate runs once more on a fresh worker and that run decides (metadata.candidate_rerun). Either way both
    verdicts stand."""
    c, jobs = faulted(f"channel.read/{scope}@{1 if scope == 'hello' else 2}:{mode}")
    hit = one_retried(jobs)
    rerun = jobs[hit]["result"]["metadata"].get("candidate_rerun")
    if scope == "candidate":
        assert jobs[hit]["attempts"] == 1
        assert "hacked (result channel tampering)" in rerun["outcome_detail"], rerun
    else:
        assert jobs[hit]["attempts"] == 2 and rerun is None
        assert ("could not start the reference worker" if scope == "hello" else
                "the reference's worker broke its channel") in c.log()


@pytest.mark.parametrize("mode", ["full", "busy"])
def test_store_insert(case, mode):
    """A submission the store cannot take is refused with 503 and Retry-After, and nothing is stored; sent again,
    it is accepted."""
    c = case(f"store.insert@1:{mode}")
    r = c.server.post("/v1/evaluations", JOBS[FAULTED])
    assert r.status == 503 and r.headers.get("Retry-After"), (r.status, r.body)
    assert "not accepted" in r.body
    assert c.rows() == {}
    assert c.server.get(f"/v1/evaluations/{FAULTED}").status == 404
    jobs = c.run()
    assert c.fired() == ["store.insert@1"]
    check_verdicts_and_store(c, jobs)


def test_store_update(faulted):
    """A job's state change is lost: it runs on and its result is stored as usual."""
    c, jobs = faulted("store.update@1:ioerr")
    assert "disk I/O error" in c.log()


@pytest.mark.parametrize("mode", ["full", "ioerr", "busy"])
def test_store_commit(faulted, mode):
    """A result the store does not take is kept and written again; the client waiting gets it then, once."""
    c, jobs = faulted(f"store.commit@1*3:{mode}")
    assert "kept; writing it again" in c.log()
    metrics = c.server.get("/v1/metrics").body
    assert "kgym_store_write_failures_total 3" in metrics


def test_reference_cache_insert(faulted):
    """The first reference cannot be kept for want of memory: its evaluation goes on with it, and the next
    evaluation of the task computes it again."""
    c, jobs = faulted("refcache.insert@1:oom")
    assert all(j["attempts"] == 1 for j in jobs.values())
    first = {i: j["result"]["metadata"]["reference_timing_lock"]["first_at"] for i, j in jobs.items()}
    again = c.run({f"{i}-again": dict(JOBS[i], task_id=f"{i}-again") for i in JOBS})
    for i in JOBS:
        r = again[f"{i}-again"]["result"]
        assert r["outcome"] == EXPECTED[i], (i, r["outcome_detail"])
        kept = again[f"{i}-again"]["result"]["metadata"]["reference_timing_lock"]["first_at"] == first[i]
        hit_first = i == min(first, key=first.get)  # the reference made first met the fault
        assert kept != hit_first, (i, first, kept)


def test_timing_lock_holder_death(faulted):
    """The first worker to hold the device's timing lock is killed from outside while it holds it (a reference:
    references are timed before their candidates). The lock is released, the neighbour goes on, and the reference's
    death is a system error, retried, never kept as a broken reference."""
    c, jobs = faulted("timing_lock.holder@1")
    hit = one_retried(jobs)
    assert jobs[hit]["attempts"] == 2
