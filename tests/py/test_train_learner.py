"""The learner's math and state on the CPU (torch 1.13 on CI): the PPO dual-clip loss and its gradient and the
SFT loss and its gradient against hand computations, chat rendering masks, SFT data loading (JSONL and parquet),
and bit-identical resume from a checkpoint."""
import json
import math
import os
import shutil
import subprocess

import numpy as np
import pytest
import torch

from train_util import ROOT, TINY, env, need_learner_packages, python, resolved_config

need_learner_packages()

from kgym_train import losses  # noqa: E402
from kgym_train.chat import ChatRenderer  # noqa: E402
from kgym_train.data import SftData, load_conversations  # noqa: E402
from kgym_train.tokenizer import train_tokenizer  # noqa: E402


class LogitPolicy:
    """A 'model' whose logits are a free parameter, so gradients can be checked by hand."""

    def __init__(self, b, t, v, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.param = torch.randn(b, t, v, generator=g, dtype=torch.float64).float().requires_grad_(True)
        self.device = torch.device("cpu")

    def packed_hidden(self, pack, select):
        """The logits of packed position k are param[row, position] of the row it belongs to; identity head."""
        rows, cols = [], []
        for i, (a, b) in enumerate(zip(pack.offsets[:-1], pack.offsets[1:])):
            rows += [i] * (b - a)
            cols += list(range(b - a))
        return self.param[rows, cols][select], lambda h: h


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_policy_loss_and_gradient_equal_the_hand_computation():
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    responses = [[3, 1, 4, 1], [5, 9], [2, 6, 5]]
    adv = [1.5, -2.0, 0.7]
    width = max(len(p) + len(r) for p, r in zip(prompts, responses))
    pol = LogitPolicy(3, width, 11)
    logp, _, valid = losses.response_logprobs(pol, prompts, responses)
    # old log-probs chosen so every branch is hit: unclipped, upper clip, lower clip, dual clip.
    shifts = [[0.0, -0.4, 0.1, 0.0], [0.5, -1.5], [0.3, 0.0, -0.05]]
    old = torch.zeros_like(logp)
    mask = torch.zeros_like(valid)
    tok_mask = [[1, 1, 1, 0], [1, 1], [1, 1, 1]]
    for i, r in enumerate(responses):
        old[i, :len(r)] = logp[i, :len(r)].detach() + torch.tensor(shifts[i])
        mask[i, :len(r)] = torch.tensor(tok_mask[i], dtype=torch.bool)
    a = torch.tensor(adv)
    tl, _ = losses.dual_clip_token_loss(logp, old, a, mask, 0.2, 0.28, 3.0)
    norm = losses.aggregate_norm(tok_mask, "seq-mean-token-sum")
    loss = losses.aggregate(tl, mask, "seq-mean-token-sum", norm, 1000.0)
    loss.backward()

    # By hand, in float64 numpy.
    L = pol.param.detach().double().numpy()
    want_loss, want_grad = 0.0, np.zeros_like(L)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        for j, tok in enumerate(r):
            if not tok_mask[i][j]:
                continue
            pos = len(p) - 1 + j
            lp = math.log(_softmax(L[i, pos])[tok])
            ratio = math.exp(-shifts[i][j])
            A = adv[i]
            l1, l2 = -A * ratio, -A * min(max(ratio, 0.8), 1.28)
            val, d = (l1, -A * ratio) if l1 >= l2 else (l2, 0.0)  # d = dL/dlogp
            if A < 0 and -A * 3.0 < val:
                val, d = -A * 3.0, 0.0
            want_loss += val
            onehot = np.eye(L.shape[-1])[tok]
            want_grad[i, pos] += d * (onehot - _softmax(L[i, pos]))
    rows = sum(1 for m in tok_mask if any(m))
    want_loss /= rows * 1000.0
    want_grad /= rows * 1000.0
    assert abs(float(loss) - want_loss) < 1e-7
    np.testing.assert_allclose(pol.param.grad.double().numpy(), want_grad, atol=1e-9)
    # Some tokens are clipped (no gradient) and some are not: the check above covered both.
    assert np.count_nonzero(np.abs(want_grad).sum(-1)) == 5

    # The C++ reference (kgym_rl) agrees on the value.
    kgym_rl = pytest.importorskip("kgym_rl")
    flat_lp, flat_old, offsets, flat_mask = [], [], [0], []
    for i, r in enumerate(responses):
        flat_lp += logp[i, :len(r)].tolist()
        flat_old += old[i, :len(r)].tolist()
        flat_mask += tok_mask[i]
        offsets.append(offsets[-1] + len(r))
    ref = kgym_rl.dual_clip_policy_loss(np.array(offsets, np.int64), np.array(flat_lp), np.array(flat_old),
                                        np.array(adv), token_mask=np.array(flat_mask, np.uint8))
    assert abs(ref["loss"] - float(loss)) < 1e-7


def test_sft_loss_and_gradient_equal_the_hand_computation():
    seqs = [[1, 2, 3, 4, 5], [6, 7, 8]]
    masks = [[0, 0, 1, 1, 1], [0, 1, 0]]  # targets learned: positions 2,3,4 of row 0 and 1 of row 1
    pol = LogitPolicy(2, 5, 9, seed=3)
    s, n = losses.sft_token_losses(pol, seqs, masks)
    (s / n).backward()
    L = pol.param.detach().double().numpy()
    want, grad, count = 0.0, np.zeros_like(L), 0
    for i, (seq, m) in enumerate(zip(seqs, masks)):
        for j in range(1, len(seq)):
            if m[j]:
                p = _softmax(L[i, j - 1])
                want -= math.log(p[seq[j]])
                grad[i, j - 1] += p - np.eye(L.shape[-1])[seq[j]]
                count += 1
    assert n == count == 4
    assert abs(float(s) - want) < 1e-5
    np.testing.assert_allclose(pol.param.grad.double().numpy(), grad / count, atol=1e-7)


def test_other_aggregations_and_bad_input():
    tl = torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    assert float(losses.aggregate(tl, mask, "token-mean", 3, 1.0)) == pytest.approx(2.0)
    assert float(losses.aggregate(tl, mask, "seq-mean-token-mean", 2, 1.0)) == pytest.approx((1.5 + 3.0) / 2)
    with pytest.raises(ValueError):
        losses.aggregate(tl, mask, "sum", 1, 1.0)
    with pytest.raises(ValueError):
        losses.dual_clip_token_loss(tl, tl, torch.ones(2), mask, 0.2, 0.28, 1.0)


def test_micro_batches_cover_every_row_within_the_budget():
    lengths = [5, 100, 7, 30, 30, 2, 64]
    mbs = losses.micro_batches(lengths, token_budget=64)
    assert sorted(i for mb in mbs for i in mb) == list(range(len(lengths)))
    for mb in mbs:
        assert len(mb) == 1 or sum(lengths[i] for i in mb) <= 64  # packed: the sum of lengths, not rows x longest


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    d = tmp_path_factory.mktemp("tok")
    return train_tokenizer([os.path.join(ROOT, "tasks", "level1"), os.path.join(ROOT, "src", "agent", "templates")],
                           600, str(d))


def test_chat_masks_cover_assistant_turns_only(tokenizer):
    r = ChatRenderer(tokenizer)
    msgs = [{"role": "user", "content": "Optimize relu."}, {"role": "assistant", "content": "def f(x): return x"},
            {"role": "user", "content": "feedback {\"speedup\": 1.2}"}, {"role": "assistant", "content": "done"}]
    ids, mask = r.training_ids(msgs)
    assert len(ids) == len(mask)
    learned = tokenizer.decode([t for t, m in zip(ids, mask) if m], skip_special_tokens=False)
    assert learned == "def f(x): return x<|im_end|>done<|im_end|>"
    prompt = r.prompt_ids(msgs[:1])
    assert ids[:len(prompt)] == prompt  # what the engine saw is what training conditions on
    assert sum(mask[:len(prompt)]) == 0
    with pytest.raises(ValueError):
        r.training_ids([{"role": "robot", "content": "x"}])


def test_sft_data_from_jsonl_and_parquet(tmp_path, tokenizer):
    rows = [{"messages": [{"role": "user", "content": f"task {i}"}, {"role": "assistant", "content": f"answer {i}"}],
             "uuid": str(i)} for i in range(6)]
    jl = tmp_path / "a.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in rows[:3]) + "\n\n")
    files = [str(jl)]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        # Parquet exports sometimes hold the message list as a JSON string: both shapes are read.
        pq.write_table(pa.Table.from_pylist([dict(r, messages=json.dumps(r["messages"])) for r in rows[3:]]),
                       str(tmp_path / "b.parquet"))
        files.append(str(tmp_path / "b.parquet"))
    except ImportError:
        pass
    convs = load_conversations(files)
    assert [c[1]["content"] for c in convs] == [f"answer {i}" for i in range(len(convs))]
    data = SftData(convs, ChatRenderer(tokenizer), max_length=8, truncation="left", batch_size=2, seed=1)
    assert data.truncated == len(convs) and all(len(ids) == 8 for ids, _ in data.examples)
    per = data.steps_per_epoch()
    dealt = sum((data.batch(0, k) for k in range(per)), [])
    assert len(set(dealt)) == len(dealt) == per * 2  # an epoch deals every example at most once
    assert data.batch(3, 1) == SftData(convs, ChatRenderer(tokenizer), 8, "left", 2, 1).batch(3, 1)
    with pytest.raises(ValueError, match="row 1.*assistant"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps({"messages": [{"role": "user", "content": "x"}]}) + "\n")
        load_conversations([str(bad)])
    with pytest.raises(ValueError, match="not JSON"):
        bad.write_text("{oops\n")
        load_conversations([str(bad)])
    with pytest.raises(ValueError, match="data.max_length"):
        SftData(convs, ChatRenderer(tokenizer), 8, "error", 2, 1)


def test_checkpoint_resume_gives_bit_identical_next_step_loss(kgym, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"messages": [
        {"role": "user", "content": f"Write kernel {i}: def f{i}(x): return x*{i}"},
        {"role": "assistant", "content": f"```python\ndef f{i}(x):\n    return x * {i}\n```"}]}) + "\n"
        for i in range(8)))
    out = tmp_path / "run"
    cfg = str(tmp_path / "cfg.json")
    resolved_config(kgym, "sft", cfg, TINY + [f"data.train_files=[{data}]", f"trainer.out_dir={out}",
                                              "data.train_batch_size=4", "trainer.total_training_steps=6",
                                              "trainer.save_freq=3", "optim.lr=1e-3", "data.max_length=256",
                                              "tokenizer.corpus=[tasks/level1]"])

    def sft():
        p = subprocess.run([python(), "-m", "kgym_train", "sft", "--config", cfg], capture_output=True, text=True,
                           env=env(), cwd=ROOT, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        return [json.loads(line) for line in open(out / "metrics.jsonl")]

    full = sft()
    assert [m["step"] for m in full] == [1, 2, 3, 4, 5, 6]
    assert full[-1]["train/loss"] < full[0]["train/loss"]
    shutil.rmtree(out / "checkpoints" / "step_6")
    os.remove(out / "metrics.jsonl")
    resumed = sft()
    assert [m["step"] for m in resumed] == [4, 5, 6]
    for a, b in zip(full[3:], resumed):
        assert a["train/loss"] == b["train/loss"]  # bit for bit
        assert a["train/grad_norm"] == b["train/grad_norm"]
    for f in ("model/model.safetensors", "model/config.json", "model/tokenizer.json", "optimizer.pt", "rng.pt",
              "trainer_state.json"):
        assert (out / "checkpoints" / "step_6" / f).exists(), f
    assert (out / "final" / "model.safetensors").exists()


def test_extreme_risk_tokens_are_those_of_negative_rows_below_the_threshold():
    old = torch.log(torch.tensor([[0.5, 0.001, 0.2], [0.001, 0.9, 0.02]]))
    adv = torch.tensor([-1.0, 2.0])
    risky = losses.risky_tokens(old, adv, 0.05)
    assert risky.tolist() == [[False, True, False], [False, False, False]]  # positive rows are never masked
    assert not losses.risky_tokens(old, adv, None).any()
    assert not losses.risky_tokens(old, adv, 0.0).any()


def test_optimizer_choice_sgd_steps_by_lr_times_gradient_adamw_by_about_lr():
    from kgym_train.learner import make_optimizer
    grad = torch.tensor([1e-6, 1e-2, 1.0])
    steps = {}
    for name in ("sgd", "adamw"):
        w = torch.zeros(3, requires_grad=True)
        opt = make_optimizer([w], {"name": name, "lr": 0.1, "weight_decay": 0.0, "momentum": 0.0})
        w.grad = grad.clone()
        opt.step()
        steps[name] = (-w.detach()).tolist()
    assert steps["sgd"] == pytest.approx((0.1 * grad).tolist(), rel=1e-6)
    # AdamW's first step is lr * g / (|g| + eps): about lr for every weight whose gradient is above eps
    assert steps["adamw"][1] == pytest.approx(0.1, rel=1e-4) and steps["adamw"][2] == pytest.approx(0.1, rel=1e-6)
    with pytest.raises(ValueError, match="optim.name"):
        make_optimizer([torch.zeros(1, requires_grad=True)], {"name": "lion", "lr": 0.1, "weight_decay": 0.0})


_BUSY_AT_EXIT = """
import sys, threading, time, torch
from kgym_train.distributed import exit_process
def busy():
    a = torch.randn(100000)
    while True:
        a + a  # inside torch, the GIL released, when the main thread ends
threading.Thread(target=busy, daemon=True).start()
time.sleep(0.2)
print("printed, not flushed")
if sys.argv[1] == "plain":
    sys.exit(3)
exit_process(3)
"""


def test_learner_exit_survives_a_thread_busy_in_torch():
    """kgym_train's processes end through exit_process: with a daemon thread inside torch at exit, Python's own
    finalization aborts (torch 1.13 on Python 3.11: 'terminate called without an active exception', -6); the learner
    exits with its own code and its output flushed."""
    def run(how):
        return subprocess.run([python(), "-c", _BUSY_AT_EXIT, how], capture_output=True, text=True, env=env(),
                              cwd=ROOT, timeout=120)
    p = run("exit_process")
    assert (p.returncode, p.stdout) == (3, "printed, not flushed\n"), p.stderr[-2000:]
    plain = run("plain")  # what exit_process avoids, where this torch and Python show it (not asserted: newer ones may not)
    print("plain sys.exit:", plain.returncode, plain.stderr.strip()[-200:])
