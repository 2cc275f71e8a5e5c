"""The learner's rollout engine (kgym_train/rollout.py) and packed training forwards on the CPU tiny model:
greedy equality with the reference generation loop, seeded sampling reproducible whatever the batch, stop strings,
continuous batching refills, shared-prefix prefill equal to separate prefills, the top-k/top-p filters, and the
packed (variable-length) attention equal to the dense one, gradients included."""
import math
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "python"))

from kgym_train import attention, losses  # noqa: E402
from kgym_train.models import Policy  # noqa: E402
from kgym_train.rollout import Request, RolloutEngine  # noqa: E402

VOCAB, STOP = 300, 299


@pytest.fixture(scope="module")
def policy():
    """A tiny policy with large weights: its logits are peaked, so greedy choices are not near-ties."""
    init = dict(arch="tiny", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=512, seed=3)
    pol = Policy.create(init, VOCAB, 0, "cpu")
    with torch.no_grad():
        for p in pol.model.parameters():
            p.mul_(8.0)
    return pol


PROMPTS = [[5, 6, 7, 8, 9][:k] + [11 * k % VOCAB, 3] for k in range(1, 8)]


def engine(policy, slots=4, chunk=5, decode=None, kv_tokens=None, page_size=4):
    return RolloutEngine(policy, slots=slots, max_len=128, stop_ids=[STOP], chunk=chunk, decode=decode,
                         kv_tokens=kv_tokens, page_size=page_size)


def all_pages_free(eng):
    return eng.kv.free_pages() == eng.kv.num_pages - 1 and not eng.prefixes and not eng.pending


def test_greedy_equals_the_reference_generation(policy):
    ref = policy.generate(PROMPTS, 24, [STOP], 0, temperature=0)
    reqs = [Request(p, 24, temperature=0) for p in PROMPTS]
    engine(policy).generate(reqs)
    for (ids, lps, reason), r in zip(ref, reqs):
        assert r.tokens == ids
        assert r.finish_reason == reason
        assert max(abs(a - b) for a, b in zip(lps, r.logprobs)) < 1e-4


def test_continuous_batching_refills_slots_and_matches_one_at_a_time(policy):
    """7 prompts through 2 slots with different lengths: every slot is reused, outputs as if each ran alone."""
    reqs = [Request(p, 6 + 5 * (i % 3), temperature=0) for i, p in enumerate(PROMPTS)]
    eng = engine(policy, slots=2, chunk=3)
    eng.generate(reqs)
    assert eng.stats["admitted"] == len(PROMPTS) and eng.stats["finished"] == len(PROMPTS)
    for i, r in enumerate(reqs):
        alone = Request(PROMPTS[i], r.max_tokens, temperature=0)
        engine(policy, slots=1, chunk=7).generate([alone])
        assert r.tokens == alone.tokens
        assert len(r.tokens) == r.max_tokens and r.finish_reason == "length"


def test_seeded_sampling_depends_on_the_seed_only(policy):
    a = Request(PROMPTS[0], 20, temperature=1.0, seed=42)
    engine(policy, slots=4, chunk=3).generate([a])
    crowd = [Request(p, 20, temperature=1.0, seed=s) for s, p in enumerate(PROMPTS)]
    b = Request(PROMPTS[0], 20, temperature=1.0, seed=42)
    engine(policy, slots=3, chunk=7).generate(crowd + [b])  # another batch, slot and admission time
    assert a.tokens == b.tokens and a.logprobs == pytest.approx(b.logprobs, abs=1e-3)  # batch-size rounding
    other = Request(PROMPTS[0], 20, temperature=1.0, seed=43)
    engine(policy).generate([other])
    assert other.tokens != a.tokens
    greedy = Request(PROMPTS[0], 20, temperature=0)
    engine(policy).generate([greedy])
    assert a.tokens != greedy.tokens  # temperature 1 does sample


def test_shared_prefix_prefill_gives_the_tokens_of_separate_prefills(policy):
    group = [Request(PROMPTS[2], 16, temperature=1.0, seed=100 + k) for k in range(5)]
    eng = engine(policy, slots=8)
    eng.generate(group)
    assert eng.stats["prefill_tokens"] == len(PROMPTS[2])  # the prompt went through the model once
    for k, r in enumerate(group):
        alone = Request(PROMPTS[2], 16, temperature=1.0, seed=100 + k)
        engine(policy, slots=1).generate([alone])
        assert r.tokens == alone.tokens
    assert len({tuple(r.tokens) for r in group}) > 1


def test_shared_pages_give_the_tokens_of_unshared_ones(policy):
    """Samples of one prompt whose full pages are shared (prompt of 7 tokens over pages of 2: three shared pages and
    a copied partial one) against the same samples with pages of 128 (nothing shared but a copy) and alone."""
    prompt = PROMPTS[4] + [17, 19]
    assert len(prompt) % 2 == 1
    mk = lambda: [Request(prompt, 20, temperature=1.0, seed=7 + k) for k in range(6)]  # noqa: E731
    shared, unshared = mk(), mk()
    eng = engine(policy, slots=6, chunk=3, page_size=2)
    eng.generate(shared)
    engine(policy, slots=6, chunk=3, page_size=128).generate(unshared)
    for a, b in zip(shared, unshared):
        assert a.tokens == b.tokens
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    alone = Request(prompt, 20, temperature=1.0, seed=9)
    engine(policy, slots=1).generate([alone])
    assert alone.tokens == shared[2].tokens
    assert all_pages_free(eng)


def test_a_prompt_is_prefilled_once_however_its_samples_enter(policy):
    """3 prompts x 5 samples through 4 slots: no group enters together, yet each prompt is prefilled once; the
    later samples share its pages and its kept logits, and give the tokens they give alone."""
    prompts = [PROMPTS[6], PROMPTS[3], PROMPTS[5]]
    reqs = [Request(p, 8 + 3 * k, temperature=1.0, seed=31 * i + k) for i, p in enumerate(prompts) for k in range(5)]
    eng = engine(policy, slots=4, chunk=2)
    eng.generate(reqs)
    assert eng.stats["admitted"] == 15 and eng.stats["prefills"] == 3
    assert eng.stats["prefill_tokens"] == sum(len(p) for p in prompts)
    assert eng.stats.get("recompute_tokens", 0) == 0
    for r in reqs[::4]:
        alone = Request(r.prompt, r.max_tokens, temperature=1.0, seed=r.seed)
        engine(policy, slots=1).generate([alone])
        assert r.tokens == alone.tokens
    assert all_pages_free(eng)


def test_memory_is_held_by_used_length(policy):
    """A pool of 128 tokens, one sequence of the static layout (max_len 128), runs 8 short sequences at
    once (7-token prompts + 10 tokens each, in pages of 4)."""
    reqs = [Request(p, 10, temperature=0) for p in PROMPTS] + [Request(PROMPTS[0] + [1], 10, temperature=0)]
    eng = engine(policy, slots=8, chunk=2, kv_tokens=128)
    eng.generate(reqs)
    assert eng.stats["live_peak"] == 8
    assert all(len(r.tokens) == 10 for r in reqs)
    assert all_pages_free(eng)


def test_a_dry_pool_evicts_the_youngest_and_resumes_it_to_the_same_tokens(policy):
    """Long sequences in a pool that cannot hold them all to their end: the most recently admitted are evicted,
    recomputed when pages free up, and finish with the tokens and log-probs they have with room to spare."""
    mk = lambda: [Request(p, 40, temperature=1.0, seed=50 + i) for i, p in enumerate(PROMPTS[:6])]  # noqa: E731
    tight, roomy = mk(), mk()
    eng = engine(policy, slots=6, chunk=4, kv_tokens=140)
    eng.generate(tight)
    engine(policy, slots=6, chunk=4).generate(roomy)
    assert eng.stats["evicted"] > 0 and eng.stats["recompute_tokens"] > 0
    for a, b in zip(tight, roomy):
        assert a.tokens == b.tokens and a.finish_reason == b.finish_reason
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert all_pages_free(eng)


def test_slots_refill_through_the_tail(policy):
    """Sequences of very different lengths: every finished sequence's slot is taken by a waiting one at the next
    chunk boundary, so the live count stays at the slot count while requests wait."""
    reqs = [Request(PROMPTS[i % 7], 3 if i % 4 else 30, temperature=0) for i in range(16)]
    eng = engine(policy, slots=4, chunk=2)
    lives = []
    eng.submit(reqs)
    while eng.busy():
        eng.step()
        with eng.lock:
            waiting = len(eng.waiting)
        lives.append((len(eng.live) + len(eng.finished), waiting))
    assert all(n == 4 for n, waiting in lives if waiting)
    assert all(len(r.tokens) == r.max_tokens for r in reqs)


def test_too_small_a_pool_is_refused_not_hung(policy):
    eng = engine(policy, slots=2, kv_tokens=128)
    eng.kv.take(eng.kv.free_pages() - 1)  # someone else holds nearly every page
    with pytest.raises(RuntimeError, match="cannot hold"):
        eng.generate([Request(PROMPTS[3], 10, temperature=0)])


def test_filters_top_k_one_and_tiny_top_p_are_greedy(policy):
    greedy = Request(PROMPTS[1], 12, temperature=0)
    k1 = Request(PROMPTS[1], 12, temperature=1.5, top_k=1, seed=5)
    p0 = Request(PROMPTS[1], 12, temperature=1.5, top_p=1e-6, seed=6)
    engine(policy).generate([greedy, k1, p0])
    assert k1.tokens == greedy.tokens == p0.tokens
    # the logprobs are the unmodified policy's, whatever the filters
    assert k1.logprobs == pytest.approx(greedy.logprobs, abs=1e-5)


class _Chars:
    """A decoder for stop strings: token t is the character chr(65 + t % 26)."""

    def __call__(self, ids):
        return "".join(chr(65 + t % 26) for t in ids)


def test_stop_strings_end_the_sequence_where_the_string_completes(policy):
    probe = Request(PROMPTS[3], 30, temperature=0)
    engine(policy).generate([probe])
    text = _Chars()(probe.tokens)
    stop = text[9:12]  # three characters produced by tokens 9..11
    first = text.find(stop)
    r = Request(PROMPTS[3], 30, temperature=0, stop=[stop, "never-there"])
    engine(policy, chunk=4, decode=_Chars()).generate([r])
    assert r.finish_reason == "stop"
    assert r.tokens == probe.tokens[:first + 3]  # through the token that completed the stop string
    assert r.text_end == first
    assert len(r.logprobs) == len(r.tokens)


def test_stop_token_ends_the_sequence(policy):
    probe = Request(PROMPTS[4], 20, temperature=0)
    engine(policy).generate([probe])
    tok = probe.tokens[6]
    eng = RolloutEngine(policy, slots=2, max_len=128, stop_ids=[tok], chunk=4)
    r = Request(PROMPTS[4], 20, temperature=0)
    eng.generate([r])
    assert r.finish_reason == "stop" and r.tokens == probe.tokens[:probe.tokens.index(tok) + 1]


def test_a_prompt_longer_than_the_engine_is_refused(policy):
    with pytest.raises(ValueError, match="does not fit"):
        engine(policy).submit([Request(list(range(1, 200)), 5)])


def test_packed_logprobs_equal_the_dense_forward(policy):
    prompts, responses = PROMPTS[:4], [[7, 8, 9], [1], [4, 4, 4, 4], [2, 3]]
    logp, _, valid = losses.response_logprobs(policy, prompts, responses)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        ids = torch.tensor([p + r])
        dense = policy.model(ids, torch.ones_like(ids))[0].float().log_softmax(-1)
        want = torch.stack([dense[len(p) - 1 + j, t] for j, t in enumerate(r)])
        assert torch.allclose(logp[i, :len(r)].detach(), want, atol=1e-5)
        assert int(valid[i].sum()) == len(r)


@pytest.mark.parametrize("t", [5, 256, 700])
def test_block_causal_attention_and_its_gradient_equal_the_dense_one(t):
    g = torch.Generator().manual_seed(t)
    q, k, v = (torch.randn(2, 3, t, 16, generator=g, requires_grad=True) for _ in range(3))
    out = attention.BlockCausal.apply(q, k, v, 0.25)
    att = ((q @ k.transpose(-1, -2)) * 0.25).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1),
                                                          float("-inf"))
    ref = att.softmax(-1) @ v
    up = torch.randn(out.shape, generator=g)
    got = torch.autograd.grad(out, (q, k, v), up)
    want = torch.autograd.grad(ref, (q, k, v), up)
    assert torch.allclose(out, ref, atol=1e-5)
    for a, b in zip(got, want):
        assert torch.allclose(a, b, atol=1e-4)


def test_packed_attention_keeps_sequences_apart():
    """Two sequences packed in one row attend as if each were alone."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(9, 4, 8, generator=g) for _ in range(3))
    cu = torch.tensor([0, 4, 9], dtype=torch.int32)
    out = attention.packed_causal(q, k, v, cu, 5)
    for a, b in ((0, 4), (4, 9)):
        alone = attention.padded_causal(q[a:b].transpose(0, 1)[None], k[a:b].transpose(0, 1)[None],
                                        v[a:b].transpose(0, 1)[None])[0].transpose(0, 1)
        assert torch.allclose(out[a:b], alone, atol=1e-6)
    assert math.isfinite(float(out.sum()))


def test_served_chat_samples_n_seeded_sequences_and_honours_stop(kgym, tmp_path):
    """The learner's HTTP chat (one process: the engine loop): n samples of one request are distinct and each is
    reproduced by its seed alone; a stop string cuts the text where it begins."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from train_util import TINY, Server, need_learner_packages, resolved_config
    need_learner_packages()
    cfg = str(tmp_path / "cfg.json")
    resolved_config(kgym, "train", cfg, TINY + [f"trainer.out_dir={tmp_path}/run", "rollout.kv_cache_gb=0.05"])
    srv = Server(cfg)
    try:
        msgs = [{"role": "user", "content": "def kernel(x): return x"}]
        body = {"messages": msgs, "max_tokens": 12, "temperature": 1.0, "seed": 9, "return_token_ids": True}
        three = srv.post("/v1/chat/completions", dict(body, n=3))["choices"]
        again = srv.post("/v1/chat/completions", dict(body, n=3))["choices"]
        assert [c["token_ids"] for c in three] == [c["token_ids"] for c in again]
        assert len({tuple(c["token_ids"]) for c in three}) == 3
        text = three[1]["message"]["content"]
        cut = next((k for k in range(2, len(text)) if text[k:k + 2].strip() and text.find(text[k:k + 2]) == k), None)
        assert cut is not None, text  # a stop string that first occurs at `cut` in sample 1's text
        stopped = srv.post("/v1/chat/completions", dict(body, n=3, stop=[text[cut:cut + 2]]))["choices"]
        assert stopped[1]["message"]["content"] == text[:cut]
        assert stopped[1]["finish_reason"] == "stop"
        bad = srv.post("/v1/chat/completions", dict(body, stop=[1, 2]))
        assert bad.get("http_status") == 400
        # A trainer's batch arrives at once: 64 simultaneous connections are all answered (no reset backlog).
        import threading
        got = [None] * 64

        def one(i):
            try:
                got[i] = srv.post("/v1/chat/completions", dict(body, seed=i, max_tokens=4))["choices"][0]
            except OSError as e:
                got[i] = e
        threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(isinstance(c, dict) and c["token_ids"] for c in got), [c for c in got if not isinstance(c, dict)]
    finally:
        srv.close()


def test_a_vocabulary_padded_past_the_tokenizer_is_never_sampled(policy):
    reqs = [Request(p, 30, temperature=5.0, seed=i) for i, p in enumerate(PROMPTS)]
    RolloutEngine(policy, slots=8, max_len=128, stop_ids=[STOP], vocab_limit=40).generate(reqs)
    assert all(t < 40 for r in reqs for t in r.tokens)
    assert all(lp < 0 for r in reqs for lp in r.logprobs)  # the whole distribution's log-probs
