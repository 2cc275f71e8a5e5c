"""The worker's kept outputs (timing._Kept): copies of fetched timed calls' outputs held within a byte budget until
the supervisor asks for them outside the timing lock (src/eval/timed_calls.h, FetchKeptOutputs)."""
import pytest

torch = pytest.importorskip("torch")

from kgym_harness.runner import Reported  # noqa: E402
from kgym_harness.timing import _Kept  # noqa: E402


def test_a_kept_output_is_a_copy_the_model_cannot_change_afterwards():
    kept = _Kept(1)
    out = torch.arange(16, dtype=torch.float32)
    assert kept.take(3, out)
    out.zero_()  # the model reuses its output buffer on the next call
    (back,) = kept.give(3)
    assert torch.equal(back, torch.arange(16, dtype=torch.float32))
    assert kept.used == 0


def test_past_the_budget_the_outputs_are_sent_at_once():
    kept = _Kept(1)  # 1 MiB
    assert kept.take(0, torch.zeros(1 << 17))  # 512 KiB
    assert not kept.take(1, torch.zeros(1 << 17 | 1))  # would pass 1 MiB
    assert kept.take(2, [torch.zeros(1 << 16), torch.zeros(1 << 16)])  # exactly the rest
    assert not _Kept(0).take(0, torch.zeros(1))


def test_subclasses_and_plain_values_are_never_kept():
    class Sub(torch.Tensor):
        pass

    kept = _Kept(1)
    assert not kept.take(0, torch.zeros(4).as_subclass(Sub))
    assert not kept.take(1, [torch.zeros(4), 3])
    assert kept.held == {}


def test_a_call_kept_once_is_given_once():
    kept = _Kept(1)
    assert kept.take(5, torch.ones(2))
    assert not kept.take(5, torch.ones(2))  # the same call id again
    kept.give(5)
    with pytest.raises(Reported):
        kept.give(5)
    with pytest.raises(Reported):
        kept.give(6)


class _Device:
    """A stand-in for a GPU's memory: (free, total) bytes."""

    def __init__(self, free, total):
        self.free, self.total = free, total

    def info(self, device):
        assert device.type == "cuda"
        return self.free, self.total


def test_on_a_gpu_outputs_are_kept_only_while_the_device_keeps_its_free_share(monkeypatch):
    dev = _Device(free=10 << 20, total=16 << 20)  # 10 MiB free of 16
    kept = _Kept(64, keep_free=0.25, mem_info=dev.info)  # at least 4 MiB must stay free
    out = torch.zeros(1 << 20)  # 4 MiB
    monkeypatch.setattr(kept, "_devices", lambda values: {torch.device("cuda", 0)})
    assert kept.take(0, out)  # 10 - 4 = 6 MiB left >= 4
    dev.free = 7 << 20
    assert not kept.take(1, out)  # 7 - 4 = 3 MiB < 4: sent at once
    kept.keep_free = 0.0
    assert kept.take(2, out)  # no share asked: the byte budget alone decides
    monkeypatch.setattr(kept, "_devices", lambda values: set())
    kept.keep_free, dev.free = 0.25, 0
    assert kept.take(3, out)  # outputs in host memory: the device's memory does not matter


def test_the_refill_waits_for_the_device_without_spinning(monkeypatch):
    """Between timed calls the supervisor reads the worker's CPU time (deferred work, src/eval/hack_rules.h): the
    refill's wait for the device must sleep, not spin, or its CPU grows with whatever else shares the GPU (issue 32:
    an honest candidate beside a GPU-heavy neighbour read 4.6 ms 'between calls'). It waits on one blocking event."""
    from kgym_harness import runner

    made = []

    class Event:
        def __init__(self, blocking=False, **kw):
            self.blocking, self.waits = blocking, 0
            made.append(self)

        def record(self):
            pass

        def synchronize(self):
            self.waits += 1

    monkeypatch.setattr(runner, "_CudaEvent", Event)
    monkeypatch.setattr(runner, "_cuda_sync", lambda: (_ for _ in ()).throw(AssertionError("a spinning sync")))
    r = runner.Runner("candidate", {})
    r.device = "cuda:0"
    r.pool = [[torch.ones(4)], [torch.zeros(4)]]
    r.live = [torch.empty(4)]
    r.refill(1)
    r.refill(0)
    assert len(made) == 1 and made[0].blocking and made[0].waits == 2
    assert torch.equal(r.live[0], torch.ones(4))


def test_a_kept_copy_leaves_the_next_calls_output_on_touched_pages():
    """A CPU copy kept on the allocator's heap took its next block, so the following call's output landed on fresh
    pages: 512 page faults inside the bracket of every call after a kept one (2 MiB outputs). Counted, not timed."""
    resource = pytest.importorskip("resource")
    x = torch.randn(512, 1024)  # 2 MiB
    kept = _Kept(64)
    faults, last = [], None
    for call in range(24):
        last = None  # as _timed_call: the last outputs go before the call
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        last = torch.relu(x)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        if call % 2 == 0:
            assert kept.take(call, last)
    assert max(faults[2:]) < 64, faults  # a page or two of bookkeeping at most, never the output's 512
    (back,) = kept.give(0)
    assert torch.equal(back, torch.relu(x))
