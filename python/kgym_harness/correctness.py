"""Phase correctness. The reference's worker draws every trial's inputs from the secret seeds it was given (the task's
own draw, a signed/wider variant, a sparse one) and the timing pool's sets, runs the reference on them and sends inputs
and outputs back. The candidate's worker runs ModelNew on the inputs the supervisor forwards and sends its outputs and
the in-process evidence of each call; the supervisor compares.
"""
import torch

from . import channel, recorder, tensors
from .load import build
from .oracle import Oracle
from .protocol import Field, Kind, Note
from .runner import (Reported, Steps, _Tensor, _send_values, as_list, describe, seed_all, send_evidence,
                     send_note)

_SPARSE_SPIKES = 8  # nonzeros per tensor in the "sparse" trial
# Default trials computed again in fp64 (oracle.py): the precision verdict takes their median; an fp64 convolution
# can cost tens of times its fp32 one, so not every trial.
ORACLE_TRIALS = 3


def _variant(values, variant, seed=0):
    if variant == "default":
        return values
    # Signed and wider than the task's own draw, so shortcuts that rely on U[0,1) inputs fail.
    widen = [isinstance(v, _Tensor) and v.is_floating_point() and v.numel() > 1 for v in values]
    big = [i for i, v in enumerate(values) if widen[i] and v.numel() >= 64] if variant == "sparse" else []
    out = [((v.float() - v.float().mean()) * 3.0).to(v.dtype) if w and i not in big else v
           for i, (v, w) in enumerate(zip(values, widen))]
    if not big:
        return out
    # A few nonzeros at random places, zero elsewhere, with magnitudes falling by 4x from one to the next across all
    # inputs: one element carries most of every sum. A kernel that skips elements (every second row, one block of a
    # reduction, then rescales) either misses it or counts it twice, an error of 50 % or more whatever the seed.
    g = torch.Generator().manual_seed(int(seed))
    ranks = torch.randperm(len(big) * _SPARSE_SPIKES, generator=g).tolist()
    for n, i in enumerate(big):
        v = values[i]
        scale = 3.0 * max(1.0, float(v.float().abs().max()))
        rank = torch.tensor(ranks[n * _SPARSE_SPIKES:(n + 1) * _SPARSE_SPIKES], dtype=torch.float64)
        sign = torch.randint(0, 2, (_SPARSE_SPIKES,), generator=g).to(torch.float64) * 2 - 1
        idx = torch.randint(0, v.numel(), (_SPARSE_SPIKES,), generator=g)
        flat = torch.zeros(v.numel(), dtype=torch.float64)
        flat[idx] = sign * scale * torch.pow(4.0, -rank)
        out[i] = flat.reshape(v.shape).to(dtype=v.dtype, device=v.device)
    return out


def _finite(values):
    for v in values:
        if isinstance(v, _Tensor) and v.is_floating_point() and not bool(torch.isfinite(v).all()):
            return False
    return True


def _make_inputs(mod, seed, device):
    seed_all(seed)
    ctx = None
    if device.startswith("cuda") and hasattr(torch, "device") and hasattr(torch.device, "__enter__"):
        ctx = torch.device(device)
    if ctx is not None:
        with ctx:
            vals = list(mod.get_inputs())
    else:
        vals = list(mod.get_inputs())
    return [v.to(device) if isinstance(v, _Tensor) else v for v in vals]


def _copy_bandwidth(device):
    """GB/s of a device-to-device copy past the L2 (bytes read + written), the best of 6 (the roofline's bandwidth;
    measured here, in the reference's process, which never loads candidate code)."""
    n = 64 << 20  # floats: 256 MiB each way
    a = torch.ones(n, dtype=torch.float32, device=device)
    b = torch.empty_like(a)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = None
    for _ in range(6):
        e0.record()
        b.copy_(a)
        e1.record()
        e1.synchronize()
        ms = e0.elapsed_time(e1)
        best = ms if best is None else min(best, ms)
    del a, b
    torch.cuda.empty_cache()
    return 2.0 * n * 4 / (best * 1e6)


def _reference_init(r, job):
    mod = r.module
    if not hasattr(mod, "get_inputs") or not hasattr(mod, "get_init_inputs"):
        raise Reported("invalid", "load", "the reference defines no get_inputs()/get_init_inputs()")
    try:
        seed_all(job[Field.INIT_SEED])
        init_args = list(mod.get_init_inputs())
    except BaseException as e:  # noqa: BLE001
        detail, tb = describe(e, r.filename)
        raise Reported("invalid", "init", "get_init_inputs() failed: " + detail, tb)
    if len(init_args) == 2 and init_args[0] == [] and isinstance(init_args[1], dict):
        raise Reported("invalid", "init", "keyword init inputs are not supported")
    return init_args


def _reference_trial(sock, r, i, t, oracle):
    try:
        inputs = _make_inputs(r.module, t[Field.SEED], r.device)
    except BaseException as e:  # noqa: BLE001
        detail, tb = describe(e, r.filename)
        raise Reported("invalid", "inputs", "get_inputs() failed: " + detail, tb)
    variant = t.get(Field.VARIANT, "default")
    inputs = _variant(inputs, variant, t[Field.SEED])
    out = as_list(r.call(inputs, "correctness"))
    skipped = not _finite(out)
    if skipped and variant == "default":
        raise Reported("invalid", "correctness", "the reference output is not finite on its own inputs")
    groups = {Field.INPUTS: inputs, Field.OUTPUTS: out}
    if variant == "default" and oracle.trials < ORACLE_TRIALS:  # judged on the task's own inputs
        oracle.trials += 1
        values, index = oracle.samples(inputs, t[Field.SEED])
        if values:
            if oracle.first is None:
                oracle.first = (inputs, values, index)  # its levels are measured after the trials
            groups[Field.ORACLE], groups[Field.ORACLE_INDEX] = values, index
    _send_values(sock, {Field.TYPE: Kind.TRIAL_RESULT, Field.INDEX: i, Field.SKIPPED: skipped}, groups)
    return inputs + out


def serve_reference(sock, r, job):
    """The reference's trials and timing pool; then, when asked, torch.compile applied for its timing."""
    tensors.POPULATE_THREADS = 4  # its level-1 inputs and outputs are GBs each (tensors._allocate)
    init_args = _reference_init(r, job)
    build(r, init_args, job[Field.INIT_SEED], job.get(Field.TRAIN_MODE, False))
    _send_values(sock, {Field.TYPE: Kind.INIT}, {Field.INIT: init_args})
    last = []
    oracle = Oracle(r, init_args, job[Field.INIT_SEED])
    for i, t in enumerate(job[Field.TRIALS]):
        last = _reference_trial(sock, r, i, t, oracle)
    # After every trial, so that the extra calls cannot shift a model's state between the trials the candidate repeats.
    if oracle.first is not None:
        send_note(sock, Note.PRECISION_LEVELS, oracle.measure_levels(*oracle.first))
        oracle.first = None
    if oracle.error:
        send_note(sock, Note.ORACLE_ERROR, oracle.error)
    del oracle
    if r.device.startswith("cuda"):
        torch.cuda.empty_cache()
    seeds = job.get(Field.POOL_SEEDS, [])
    if seeds and job[Field.TRIALS]:
        # Enough sets that refilled inputs change between calls (>= 2), as many as the byte budget allows.
        one = sum(v.numel() * v.element_size() for v in last if isinstance(v, _Tensor))
        seeds = seeds[:max(2, min(len(seeds), int(job.get(Field.POOL_BUDGET_BYTES, 1 << 28)) // max(1, one)))]
    for j, seed in enumerate(seeds):
        inputs = _make_inputs(r.module, seed, r.device)
        out = as_list(r.call(inputs, "pool"))
        r.pool.append(inputs)
        _send_values(sock, {Field.TYPE: Kind.POOL_SET, Field.INDEX: j}, {Field.INPUTS: inputs, Field.OUTPUTS: out})
    if r.device.startswith("cuda") and job.get(Field.MEASURE_BANDWIDTH, True):
        send_note(sock, Note.DEVICE_COPY_BANDWIDTH_GBPS, _copy_bandwidth(r.device))
    if job.get(Field.REFERENCE_BACKEND) in ("torch_compile", "torch-compile", "compile"):
        try:
            r.model = torch.compile(r.model)
        except BaseException as e:  # noqa: BLE001
            send_note(sock, Note.REFERENCE_BACKEND_ERROR, str(e)[:500])


def _unpack_inputs(h, payload, device):
    """The inputs of a trial or pool-set message; the shared-memory fds that came with it are closed."""
    try:
        return tensors.unpack(h[Field.INPUTS], h[Field.TENSORS], payload, device, h.get("_fds", ()))
    finally:
        tensors.close_fds(h.get("_fds"))


def _candidate_trial(sock, r, h, p):
    steps = Steps()
    lent = tensors.lent_buffer(h, h.get("_fds"))  # mapped before _unpack_inputs closes the fds
    args = _unpack_inputs(h, p, r.device)
    originals = [a.clone() if isinstance(a, _Tensor) else a for a in args]
    steps.lap("unpack")
    out = r.call(args, "correctness", (recorder.CORRECTNESS, h[Field.INDEX]))
    steps.lap("call")
    found = r.inspect_output(out, args, originals, "correctness")
    del originals
    send_evidence(sock, found)
    steps.lap("inspect")
    _send_values(sock, {Field.TYPE: Kind.TRIAL_RESULT, Field.INDEX: h[Field.INDEX],
                        Field.TRITON_LAUNCHES: sum(r.launches.values())}, {Field.OUTPUTS: as_list(out)}, steps,
                 lent)


def serve_candidate(sock, r, job, payload):
    """The candidate's trials and the timing sets it is handed. Returns the "timing" message that starts the timing
    phase, or None when the supervisor says finish."""
    init_args = tensors.unpack(job[Field.INIT], job[Field.TENSORS], payload, "cpu")
    build(r, init_args, job[Field.INIT_SEED], job.get(Field.TRAIN_MODE, False))
    channel.send(sock, {Field.TYPE: Kind.READY, Field.TRITON_KERNELS: r.triton_kernels})
    while True:
        h, p = channel.recv(sock)
        t = h[Field.TYPE]
        if t == Kind.TRIAL:
            _candidate_trial(sock, r, h, p)
        elif t == Kind.POOL_SET:
            r.pool.append(_unpack_inputs(h, p, r.device))
            channel.send(sock, {Field.TYPE: Kind.OK})
        elif t == Kind.TIMING:
            return h
        elif t == Kind.FINISH:
            return None
        else:
            raise Reported("invalid", "protocol", "unexpected message %r" % t)
