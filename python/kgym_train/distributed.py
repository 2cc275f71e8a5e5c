"""The learner on several processes (torchrun / python -m torch.distributed.run, one process per GPU).

A `Ranks` describes the process group this learner belongs to; with WORLD_SIZE unset or 1 it is a single rank and
every method is the identity, so the one-GPU path is unchanged. With WORLD_SIZE > 1:

  process group  nccl when the learner runs on CUDA (rank r takes cuda:LOCAL_RANK), gloo on the CPU; object
                 messages (the commands rank 0 relays, gathered results) travel over a gloo group either way.
  sharding       trainer.sharding: fsdp2 (torch's fully_shard, torch >= 2.4: every decoder layer, then the root)
                 | replicate (every rank holds the whole model, gradients are summed with all_reduce; the path
                 of torch < 2.4, e.g. CI's 1.13) | auto (fsdp2 where torch has it, else replicate).
  batches        the rows of a step are dealt to ranks by length (longest first, round robin); each rank's loss is
                 its rows' share of the step's loss, normalised by the GLOBAL row or token count, so the sum over
                 ranks is exactly the one-rank loss and the summed gradient is the one-rank gradient. Under fsdp2
                 each forward and backward is a collective, so every rank runs as many micro-batches as the
                 busiest one (the others run zero-weight dummies).
  gradients      summed over ranks (fsdp2 averages in its reduce-scatter, so each rank's loss is scaled by the
                 world size first); the clip norm is the global norm.

The three NVLS variables (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1) are set
in this process's environment by `set_nvls_env`, so they reach every process the learner starts.
"""
import datetime
import math
import os
import sys

import torch

NVLS_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
SHARDING = ("auto", "fsdp2", "replicate")
# The learner idles while the gym evaluates a step's rollouts; a collective may wait that long.
TIMEOUT = datetime.timedelta(hours=6)


def set_nvls_env():
    for k, v in NVLS_ENV.items():
        os.environ[k] = v


def exit_process(code):
    """Ends a learner process without the interpreter's finalization, once its work is saved and its process group
    left: a thread still inside torch at exit (one of the server's daemon threads, a gloo worker dropping a
    collective's last tensor) needs the GIL while Python finalizes, Python then ends that thread with pthread_exit,
    and its unwinding through torch's noexcept frames aborts the process ("terminate called without an active
    exception", exit -6: seen once in CI on rank 0 of a served learner). stdout and stderr are flushed first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(code)


def fully_shard_fn():
    """torch's FSDP2 `fully_shard`, or None on a torch without it (< 2.4). Any exception counts as absent: Debian's
    torch 1.13 under Python 3.11 raises ValueError while importing torch.distributed.fsdp."""
    try:
        from torch.distributed.fsdp import fully_shard
        return fully_shard
    except Exception:
        pass
    try:
        from torch.distributed._composable.fsdp import fully_shard
        return fully_shard
    except Exception:
        return None


def world_size_from_env():
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def _decoder_layers(model):
    if hasattr(model, "blocks"):  # TinyCausalLM
        return list(model.blocks)
    inner = getattr(model, "model", None)  # transformers' *ForCausalLM
    return list(getattr(inner, "layers", []) or [])


class Ranks:
    def __init__(self, world=1, rank=0, local_rank=0, sharding="none", device="cpu", group=None):
        self.world, self.rank, self.local_rank = world, rank, local_rank
        self.sharding = sharding  # none (one rank) | fsdp2 | replicate
        self.device = device
        self.objects = group  # the gloo group for object messages

    @staticmethod
    def from_env(device, sharding="auto"):
        """Joins the process group when WORLD_SIZE > 1; `device` is the learner's device kind (cuda or cpu)."""
        world = world_size_from_env()
        if world <= 1:
            return Ranks(device=device)
        import torch.distributed as dist
        if sharding not in SHARDING:
            raise ValueError(f"trainer.sharding must be one of {SHARDING}, got {sharding!r}")
        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        cuda = str(device).startswith("cuda")
        if cuda:
            torch.cuda.set_device(local)
            device = f"cuda:{local}"
        if not dist.is_initialized():
            dist.init_process_group("nccl" if cuda else "gloo", timeout=TIMEOUT)
        group = dist.new_group(backend="gloo", timeout=TIMEOUT) if cuda else dist.group.WORLD
        have = fully_shard_fn() is not None
        if sharding == "fsdp2" and not have:
            raise RuntimeError(f"trainer.sharding=fsdp2 needs torch >= 2.4 (this is {torch.__version__})")
        mode = "fsdp2" if sharding == "fsdp2" or (sharding == "auto" and have) else "replicate"
        return Ranks(world, rank, local, mode, device, group)

    @property
    def distributed(self):
        return self.world > 1

    @property
    def is_main(self):
        return self.rank == 0

    # ---- the model ---------------------------------------------------------------------------------------------
    def wrap(self, model):
        """Shards (fsdp2) or synchronises (replicate) `model` in place; returns it."""
        if not self.distributed:
            return model
        import torch.distributed as dist
        model.kgym_base_class = type(model)  # fully_shard swaps the class; checkpoints rebuild the original
        if self.sharding == "fsdp2":
            shard = fully_shard_fn()
            for layer in _decoder_layers(model):
                shard(layer)
            shard(model)
            return model
        with torch.no_grad():
            for t in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(t.data, 0)
        return model

    @property
    def loss_scale(self):
        """Multiplies each rank's loss before backward so the reduced gradient is the SUM over ranks."""
        return float(self.world) if self.sharding == "fsdp2" else 1.0

    def reduce_grads(self, params):
        """replicate: sums every gradient over ranks (a missing one counts as zeros). fsdp2 reduced already."""
        if self.sharding != "replicate":
            return
        import torch.distributed as dist
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)

    @torch.no_grad()
    def clip_grad_norm(self, params, max_norm):
        """torch.nn.utils.clip_grad_norm_ over the whole model whichever rank holds which shard; returns the norm."""
        params = [p for p in params if p.grad is not None]
        if not self.distributed:
            return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
        grads = [_local(p.grad) for p in params]
        sq = torch.zeros((), dtype=torch.float64, device=grads[0].device if grads else self.device)
        for g in grads:
            sq += g.detach().double().pow(2).sum()
        if self.sharding == "fsdp2":  # every element lives in exactly one rank's shard
            import torch.distributed as dist
            dist.all_reduce(sq)
        total = math.sqrt(float(sq))
        coef = max_norm / (total + 1e-6)
        if coef < 1.0:
            for g in grads:
                g.mul_(coef)
        return total

    # ---- batches ------------------------------------------------------------------------------------------------
    def share(self, lengths):
        """The indices of range(len(lengths)) this rank takes: longest first, dealt round robin."""
        if not self.distributed:
            return list(range(len(lengths)))
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        return sorted(order[self.rank::self.world])

    def padded(self, micro):
        """`micro` followed by Nones up to the busiest rank's count (fsdp2: every forward is a collective)."""
        micro = list(micro)
        if self.sharding != "fsdp2":
            return micro
        most = int(self.all_sum([len(micro)], op="max")[0])
        return micro + [None] * (most - len(micro))

    # ---- messages -----------------------------------------------------------------------------------------------
    def all_sum(self, values, op="sum"):
        if not self.distributed:
            return list(values)
        import torch.distributed as dist
        t = torch.tensor([float(v) for v in values], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM, group=self.objects)
        return t.tolist()

    def gather(self, obj):
        """Every rank's `obj`, in rank order, on every rank."""
        if not self.distributed:
            return [obj]
        import torch.distributed as dist
        out = [None] * self.world
        dist.all_gather_object(out, obj, group=self.objects)
        return out

    def broadcast(self, obj):
        """Rank 0's `obj` on every rank."""
        if not self.distributed:
            return obj
        import torch.distributed as dist
        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.objects)
        return box[0]

    def all_done(self, done):
        """True when `done` is true on every rank (a generation loop stops together: each step is a collective)."""
        if self.sharding != "fsdp2":
            return done
        return self.all_sum([0.0 if done else 1.0], op="max")[0] == 0.0

    def close(self):
        """Leaves the process group once every rank has arrived here: a barrier first, so no rank closes its
        connections while another is still reading the last relayed message (seen once in CI as a rank's exit 1)."""
        if self.distributed:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.barrier(group=self.objects)
                dist.destroy_process_group()


def _local(t):
    return t.to_local() if hasattr(t, "to_local") else t
