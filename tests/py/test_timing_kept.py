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
