"""Where a bf16 policy's master weights live, and what the learner's memory is planned to be.

MasterWeights: the model's parameters are bf16 (what the forward, the backward and the rollout engine use, in
place); the optimizer owns float32 copies of them (the master weights) and steps those. Each parameter's gradient
is moved into its master's float32 gradient as soon as backward has accumulated it (a post-accumulate-grad hook),
so micro-batches accumulate in float32 and no bf16 gradient outlives its layer's backward. step() updates the
masters and copies them into the bf16 parameters in place (storage unchanged: CUDA graphs captured over the
parameters stay valid). An update far smaller than bf16's resolution (lr 1e-6 on a weight of 0.02) still
accumulates in the master, where a bf16-only optimizer would drop it.

Per parameter: 2 bytes weight + 4 master + 4 master gradient + the inner optimizer's state (AdamW: 8) = 18 bytes.

`memory_plan` states the bytes a learner will hold: weights, gradients, optimizer state, activations of the
largest micro-batch, the KV cache of the rollout engine; the learner prints it at start and compares it with
torch.cuda.max_memory_allocated after its first steps.
"""
import time

import torch

from .packing import HEAD_CHUNK_ELEMENTS


class MasterWeights:
    def __init__(self, params, build):
        """`build(masters)` returns the inner optimizer (AdamW, SGD) over the float32 masters."""
        self.params = [p for p in params if p.requires_grad]
        self.masters = [torch.nn.Parameter(p.detach().float().clone()) for p in self.params]
        self.inner = build(self.masters)
        self.param_groups = self.inner.param_groups
        self.copy_s = 0.0
        self.hooks = [p.register_post_accumulate_grad_hook(self._hook(m)) for p, m in zip(self.params, self.masters)]

    @staticmethod
    def _hook(master):
        def move(p):
            g = p.grad.float()
            if master.grad is None:
                master.grad = g
            else:
                master.grad.add_(g)
            p.grad = None
        return move

    def grad_params(self):
        """The tensors whose .grad the step uses (clipping and all-reduce act on these)."""
        return self.masters

    def zero_grad(self, set_to_none=True):
        for t in self.params + self.masters:
            t.grad = None

    @torch.no_grad()
    def step(self):
        """The inner optimizer's step on the masters, then the copy into the parameters; `copy_s` is the copy's wall
        time (the GPU drained before and after, so it is the copy's own)."""
        self.inner.step()
        sync = self.params and self.params[0].is_cuda
        if sync:
            torch.cuda.synchronize()
        t0 = time.time()
        for p, m in zip(self.params, self.masters):
            p.copy_(m)
        if sync:
            torch.cuda.synchronize()
        self.copy_s = time.time() - t0

    def state_dict(self):
        return {"inner": self.inner.state_dict(), "masters": [m.detach().cpu() for m in self.masters]}

    @torch.no_grad()
    def load_state_dict(self, state):
        self.inner.load_state_dict(state["inner"])
        for p, m, saved in zip(self.params, self.masters, state["masters"]):
            m.copy_(saved)
            p.copy_(m)


def grad_params(optimizer, params):
    return optimizer.grad_params() if isinstance(optimizer, MasterWeights) else list(params)


def scheduled(optimizer):
    """The torch optimizer an LR scheduler drives."""
    return optimizer.inner if isinstance(optimizer, MasterWeights) else optimizer


def memory_plan(model, optim_name, master, tokens, checkpointing, kv_cache_bytes=0):
    """Planned bytes by kind (see the module's docstring) for micro-batches of up to `tokens` tokens."""
    params = [p for p in model.parameters()]
    n = sum(p.numel() for p in params)
    weight = sum(p.numel() * p.element_size() for p in params)
    elem = params[0].element_size() if params else 4
    state = {"adamw": 8, "sgd": 4}.get(optim_name, 8)
    plan = {"weights": weight,
            "gradients": n * 4 if master else n * elem,
            "optimizer": n * (state + (4 if master else 0)),
            "kv_cache": int(kv_cache_bytes)}
    cfg = getattr(model, "config", None)
    if cfg is not None:
        hidden, inter, layers, vocab = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.vocab_size
    else:
        c = model.cfg
        hidden, inter, layers, vocab = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    per_layer = tokens * (10 * hidden + 3 * inter) * elem  # a layer's saved activations in training
    kept = layers * tokens * hidden * elem if checkpointing else layers * per_layer
    head = 3 * min(HEAD_CHUNK_ELEMENTS, tokens * vocab) * 4  # one chunk's float32 logits, log-softmax, gradient
    plan["activations"] = kept + (per_layer if checkpointing else 0) + head
    plan["total"] = sum(plan.values())
    return plan


def describe(plan):
    gb = lambda b: f"{b / 2**30:.2f}"  # noqa: E731
    return ", ".join(f"{k} {gb(v)} GiB" for k, v in plan.items())
