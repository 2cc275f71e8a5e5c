"""The account of an evaluation (src/eval/account.h, issue 40) through `kgym serve --gpus none`: its wall parts add up to
the evaluation's time from acceptance to result, and a problem's reference is made once per server however many
evaluations of it run at once."""
import concurrent.futures
import os

import pytest

from server_util import KGYM_BIN, Server, small_payload

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")


def body(task_id):
    return small_payload(task_id, kgym_result=True)


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path, "--gpus", "none", "--cpu-slots", "2")
    yield s
    s.kill()


def test_the_account_adds_up_and_the_reference_is_made_once(server):
    ids = ["acct-%d" % i for i in range(4)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: server.post("/evaluate", body(i), timeout=300).json(), ids))
    for r in results:
        assert r["outcome"] == "correct", r.get("outcome_detail")
        md = r["metadata"]
        a = md["account"]
        # Every part of the evaluation's time, from its acceptance (the queue: 4 jobs on 2 slots) to its result.
        assert {"queue", "setup", "reference", "worker_start", "load", "correctness", "lock_wait", "freeze", "hold",
                "kept_fetch", "timing_other"} <= set(a["wall"]), a["wall"]
        assert all(v >= 0 for v in a["wall"].values())
        assert sum(a["wall"].values()) == pytest.approx(a["wall_s"])
        before = a["wall"].get("queue", 0) + a["wall"].get("memory", 0)
        assert a["wall_s"] - before == pytest.approx(md["evaluation_s"], rel=0.01, abs=0.01)
        assert a["wall"]["hold"] > 0 and a["hold_parts"]["calls_s"] > 0
        assert a["gpu"] == {"known": False}  # no kernel recorder on the CPU: device work is not guessed
    # One reference computation for the four: one evaluation made it (or the look-ahead did, before any asked), every
    # result carries the same timing of it.
    made = [r["metadata"]["reference_made_here"] for r in results]
    by_lookahead = results[0]["metadata"].get("reference_prepared_by") == "look-ahead"
    assert sum(made) == (0 if by_lookahead else 1), made
    assert len({r["metadata"]["reference_cache_key"] for r in results}) == 1
    assert len({r["metadata"]["reference_timing_lock"]["first_at"] for r in results}) == 1


def test_64_concurrent_small_tasks_pay_their_shared_work_once(server):
    """Dr.Kernel's reward client sends a step's tasks at once (issue 40: 64 small tasks served in 22 s where an older
    tree took 8.4 s). Time is not asserted here (bench/load/cpu_serving.py measures it); the work that made such a batch
    slow is: one reference computation for the batch, each evaluation timed in one attempt, and no evaluation waiting for
    memory or a worker beyond what its account shows."""
    ids = ["batch-%d" % i for i in range(64)]
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        results = list(pool.map(lambda i: server.post("/evaluate", body(i), timeout=600).json(), ids))
    assert [r["outcome"] for r in results] == ["correct"] * 64
    mds = [r["metadata"] for r in results]
    by_lookahead = any(md.get("reference_prepared_by") == "look-ahead" for md in mds)
    assert sum(md["reference_made_here"] for md in mds) == (0 if by_lookahead else 1)
    assert all(md["timing_lock"]["acquisitions"] == 1 for md in mds)
    for md in mds:
        a = md["account"]
        assert sum(a["wall"].values()) == pytest.approx(a["wall_s"])
        assert a["wall"].get("memory", 0) == pytest.approx(0, abs=0.5)
