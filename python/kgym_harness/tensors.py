"""Packing of call arguments and results into (JSON description, raw bytes) and back.

An argument or result is a list of items; each item is {"kind": "tensor", "index": k} pointing into "tensors"
(dtype, shape, offset, nbytes) or {"kind": "json", "value": v} for plain Python values.

Small groups travel inline in the frame's payload. A group of at least SHM_MIN bytes is written once into its
own memfd, which is then sealed against writes, shrinking and growing (F_SEAL_*) and passed as a file descriptor:
the description says "region": k (the k-th fd of the frame) and the offset inside it. A sealed memfd cannot be
changed by anyone afterwards, so the supervisor may compare it, cache it and forward it to another worker.

A candidate's outputs of 1 MiB or more go instead into a buffer the supervisor lent with the request (lent_buffer,
pack_into; src/eval/lent_buffers.h): the same layout, written in place of a fresh memfd, and named as the region after
the reply's own fds. Large inputs bound for a GPU are copied from a registered read-only mapping (_PinnedRegion).
"""
import collections
import concurrent.futures
import fcntl
import mmap
import os
import warnings

import torch

from .protocol import Field

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}
SHM_MIN = int(os.environ.get("KGYM_SHM_MIN_BYTES", 1 << 16))
# Device tensors travel through a page-locked staging buffer of this many bytes (device-to-host at full speed).
STAGING_BYTES = int(os.environ.get("KGYM_SHM_STAGING_BYTES", 64 << 20))
ALIGN = 64
# Threads that allocate a large new memfd's pages before it is written (_allocate). 1 (none) unless the worker's role
# sets it: the reference's worker does; a candidate's must not start threads of its own (the supervisor's thread rules
# watch its process).
POPULATE_THREADS = 1
POPULATE_MIN = 256 << 20
# Regions of at least this many bytes bound for a GPU are registered with it for the copy (_PinnedRegion).
PIN_MIN = int(os.environ.get("KGYM_PIN_MIN_BYTES", 64 << 20))
_HOST_REGISTER_READ_ONLY = 8  # cudaHostRegisterReadOnly
_SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _flat_bytes(t):
    """The tensor's bytes as a flat uint8 tensor (on its own device)."""
    t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    t = t.reshape(-1)
    return t.view(torch.uint8) if t.dtype != torch.uint8 else t


def tensor_bytes(t):
    f = _flat_bytes(t)
    if f.numel() == 0:
        return b""
    return f.cpu().numpy().tobytes()


def _check(v):
    if v.dtype not in NAMES:
        raise TypeError("unsupported tensor dtype %s" % v.dtype)


def _plain(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return {"kind": "json", "value": v}
    if isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float)) for x in v):
        return {"kind": "json", "value": list(v)}
    raise TypeError("unsupported value of type %s" % type(v).__name__)


class _Staging:
    """One page-locked buffer per process, reused, through which device tensors reach a memfd in chunks: the device
    copies into it at full speed and the host copies on into the memfd's pages. Registering each memfd's mapping
    instead cost more than the copy itself (populating and pinning 2.1 GB took ~0.9 s of a 1.3 s pack on an H100;
    through this buffer the same pack takes ~0.65 s, bench/throughput/data_path_probe.py)."""

    def __init__(self):
        self.buf = None

    def get(self, n):
        if self.buf is None or self.buf.numel() < n:
            self.buf = None
            self.buf = torch.empty(max(n, 1 << 20), dtype=torch.uint8, pin_memory=True)
        return self.buf[:n]


_STAGING = _Staging()


def _copy_out(dst, src):
    """dst (host bytes) <- src (flat bytes on any device)."""
    if not src.is_cuda:
        dst.copy_(src)
        return
    # Every stream of the device finished first: outputs still being written on a stream the call never joined are
    # read complete (as the harness's own synchronisation after a call would have it, had the call not patched it
    # out), so such a candidate is judged on its timing behaviour, not on a torn read.
    torch.cuda.synchronize(src.device)
    for at in range(0, src.numel(), STAGING_BYTES):
        m = min(STAGING_BYTES, src.numel() - at)
        stage = _STAGING.get(m)
        stage.copy_(src[at:at + m], non_blocking=True)
        torch.cuda.synchronize(src.device)
        dst[at:at + m].copy_(stage)


class _LentBuffer:
    """One buffer the supervisor lent (Region::Lent, src/sandbox/shm.h): a memfd it can neither shrink nor grow,
    mapped here once and written again for every reply it is lent to. Where outputs come from a GPU, the mapping is
    registered with the device once, so they are copied straight into it (a fresh memfd cost a page fault per 4 KiB:
    ~0.5 s for 2.1 GB)."""

    def __init__(self, fd):
        self.size = os.fstat(fd).st_size
        self.mm = mmap.mmap(fd, self.size, mmap.MAP_SHARED | _POPULATE, mmap.PROT_READ | mmap.PROT_WRITE)
        self.view = torch.frombuffer(self.mm, dtype=torch.uint8)
        self.registered = None  # None: not tried; True / False: registered with the device or not

    def _register(self):
        if self.registered is None:
            rt = torch.cuda.cudart()
            self.registered = int(rt.cudaHostRegister(self.view.data_ptr(), self.size, 0)) == 0
        return self.registered

    def write(self, at, src):
        dst = self.view[at:at + src.numel()]
        if src.is_cuda and self._register():
            torch.cuda.synchronize(src.device)  # every stream finished, as in _copy_out
            dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize(src.device)
        else:
            _copy_out(dst, src)

    def close(self):
        if self.registered:
            torch.cuda.cudart().cudaHostUnregister(self.view.data_ptr())
        del self.view
        self.mm.close()


class _LentBuffers:
    """The lent buffers this process has mapped, by the memfd's identity (the supervisor lends the same few again)."""

    MAX = 4

    def __init__(self):
        self.maps = collections.OrderedDict()

    def get(self, fd):
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        b = self.maps.pop(key, None)
        if b is None or b.size != st.st_size:
            b = _LentBuffer(fd)
        self.maps[key] = b
        while len(self.maps) > self.MAX:
            self.maps.popitem(last=False)[1].close()
        return b


_LENT = _LentBuffers()


def lent_buffer(header, fds):
    """The buffer a message lends for its reply's outputs (field out_region: an index into its fds), or None."""
    k = header.get(Field.OUT_REGION)
    if k is None:
        return None
    if not isinstance(k, int) or not 0 <= k < len(fds or ()):
        raise ValueError("out_region %r names no fd of the message" % (k,))
    return _LENT.get(fds[k])


def _region_layout(values, region):
    """values -> (items, tensors_desc, [(tensor, offset)], bytes) for tensors placed in one region (its index
    `region`), each at a 64-byte aligned offset."""
    items, descs, placed, offset = [], [], [], 0
    for v in values:
        if isinstance(v, torch.Tensor):
            _check(v)
            n = v.numel() * v.element_size()
            descs.append({"dtype": NAMES[v.dtype], "shape": list(v.shape), "offset": offset, "nbytes": n,
                          "region": region})
            items.append({"kind": "tensor", "index": len(descs) - 1})
            placed.append((v, offset))
            offset += (n + ALIGN - 1) // ALIGN * ALIGN
        else:
            items.append(_plain(v))
    return items, descs, placed, offset


def pack_into(values, lent):
    """values -> (items, tensors_desc) with every tensor written into the lent buffer (descriptions say "region": -1,
    for the caller to set to the buffer's index), or None where the tensors are under SHM_MIN bytes or do not fit
    (then pack as usual). Same layout as pack's region."""
    items, descs, placed, size = _region_layout(values, -1)
    if size < SHM_MIN or size > lent.size:
        return None
    for t, off in placed:
        f = _flat_bytes(t)
        if f.numel():
            lent.write(off, f)
    return items, descs


def _allocate(fd, total):
    """Allocates a new memfd's pages up front on POPULATE_THREADS threads, where that is more than one and the memfd
    at least POPULATE_MIN bytes: the kernel zeroes every page it allocates (a page fault per 4 KiB on first touch
    otherwise: ~0.3 s per GB on one thread). True when it did."""
    if POPULATE_THREADS <= 1 or total < POPULATE_MIN:
        return False
    step = -(-total // POPULATE_THREADS)
    step = -(-step // (2 << 20)) * (2 << 20)
    with concurrent.futures.ThreadPoolExecutor(POPULATE_THREADS) as ex:
        list(ex.map(lambda at: os.posix_fallocate(fd, at, min(step, total - at)), range(0, total, step)))
    return True


def _sealed_memfd(tensors_and_offsets, total):
    fd = os.memfd_create("kgym-values", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, total)
        on_cuda = any(t.is_cuda for t, _ in tensors_and_offsets)
        # Host tensors, or pages allocated up front: page tables populated at the mapping; device tensors otherwise:
        # filled chunk by chunk from the staging buffer.
        flags = mmap.MAP_SHARED | (_POPULATE if _allocate(fd, total) or not on_cuda else 0)
        mm = mmap.mmap(fd, total, flags, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            buf = torch.frombuffer(mm, dtype=torch.uint8)
            for t, off in tensors_and_offsets:
                f = _flat_bytes(t)
                if f.numel():
                    _copy_out(buf[off:off + f.numel()], f)
            del buf
        finally:
            mm.close()
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
        return fd
    except BaseException:
        os.close(fd)
        raise


def pack(values, region=None):
    """values: list of tensors / plain values -> (items, tensors_desc, payload bytes, fd or None).

    With region=k and at least SHM_MIN tensor bytes, the tensors go into one sealed memfd (returned; the caller
    sends it as the frame's k-th fd and closes it) instead of the payload."""
    items, descs = [], []
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    for t in tensors:
        _check(t)
    total_bytes = sum(t.numel() * t.element_size() for t in tensors)
    if region is not None and total_bytes >= SHM_MIN:
        items, descs, placed, size = _region_layout(values, region)
        return items, descs, b"", _sealed_memfd(placed, max(size, 1))
    chunks, offset = [], 0
    for v in values:
        if isinstance(v, torch.Tensor):
            b = tensor_bytes(v)
            descs.append({"dtype": NAMES[v.dtype], "shape": list(v.shape), "offset": offset, "nbytes": len(b)})
            items.append({"kind": "tensor", "index": len(descs) - 1})
            chunks.append(b)
            offset += len(b)
        else:
            items.append(_plain(v))
    return items, descs, b"".join(chunks), None


def _from_region(fd, off, n, cache):
    mm = cache.get(fd)
    if mm is None:
        size = os.fstat(fd).st_size
        # A private mapping: the sealed original cannot be written, and nothing written here is seen elsewhere.
        mm = mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
        cache[fd] = mm
    if off < 0 or n < 0 or off + n > len(mm):
        raise ValueError("tensor outside its shared-memory region")
    return torch.frombuffer(mm, dtype=torch.uint8, count=n, offset=off)


class _PinnedRegion:
    """A sealed region whose tensors go to a GPU: mapped shared and read-only, and registered with the device as
    read-only memory (no copy-on-write), so they are copied straight from the mapping. A private, unregistered
    mapping went through the driver's staging: 0.48 s for a level-1 problem's 2 GB input on an H100."""

    def __init__(self, fd):
        self.size = os.fstat(fd).st_size
        self.mm = mmap.mmap(fd, self.size, mmap.MAP_SHARED | _POPULATE, mmap.PROT_READ)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a read-only buffer, only read here
            self.view = torch.frombuffer(self.mm, dtype=torch.uint8)
        rc = torch.cuda.cudart().cudaHostRegister(self.view.data_ptr(), self.size, _HOST_REGISTER_READ_ONLY)
        self.registered = int(rc) == 0

    def slice(self, off, n):
        if off < 0 or n < 0 or off + n > self.size:
            raise ValueError("tensor outside its shared-memory region")
        return self.view[off:off + n]

    def close(self):
        if self.registered:
            torch.cuda.synchronize()  # every copy from the mapping finished
            torch.cuda.cudart().cudaHostUnregister(self.view.data_ptr())
        del self.view
        self.mm.close()


def unpack(items, descs, payload, device="cpu", fds=()):
    """Rebuilds values on `device`; every tensor is a fresh copy owned by this process."""
    out = []
    mv = memoryview(payload)
    maps, pinned = {}, {}
    try:
        for it in items:
            if it["kind"] == "json":
                out.append(it["value"])
                continue
            d = descs[it["index"]]
            dt = DTYPES[d["dtype"]]
            n = d["nbytes"]
            if n == 0:
                out.append(torch.empty(d["shape"], dtype=dt, device=device))
                continue
            region = None
            if device != "cpu" and "region" in d and dt != torch.bool and n >= PIN_MIN:
                region = pinned.get(d["region"])
                if region is None:
                    region = pinned[d["region"]] = _PinnedRegion(fds[d["region"]])
            if region is not None:
                out.append(region.slice(d["offset"], n).view(dt).reshape(d["shape"]).to(
                    device, non_blocking=region.registered))
                continue
            if "region" in d:
                raw = _from_region(fds[d["region"]], d["offset"], n, maps)
            else:
                raw = torch.frombuffer(bytearray(mv[d["offset"]:d["offset"] + n]), dtype=torch.uint8)
            t = raw.view(torch.uint8 if dt == torch.bool else dt)
            if dt == torch.bool:
                t = t.to(torch.bool)
            t = t.reshape(d["shape"])
            if device != "cpu":
                t = t.to(device)
            elif "region" in d:
                t = t.clone()
            out.append(t)
            del raw
    finally:
        del mv
        maps.clear()
        for region in pinned.values():
            region.close()
    return out


def close_fds(fds):
    for fd in fds or ():
        try:
            os.close(fd)
        except OSError:
            pass
