"""Outputs written into a buffer the supervisor lent (tensors.lent_buffer / pack_into; src/eval/lent_buffers.h): the
same layout as the worker's own memfd, the mapping made once per buffer, and a fallback where they do not fit."""
import fcntl
import mmap
import os

import pytest

torch = pytest.importorskip("torch")

from kgym_harness import tensors  # noqa: E402
from kgym_harness.protocol import Field  # noqa: E402


def _lent_memfd(n):
    """What Region::Lent makes: a memfd of n bytes that can be written but neither shrunk nor grown."""
    fd = os.memfd_create("lent", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, n)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def _read(fd, off, n):
    with mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ) as mm:
        return bytes(mm[off:off + n])


def test_outputs_land_in_the_lent_buffer_at_the_packing_layout():
    fd = _lent_memfd(1 << 20)
    lent = tensors.lent_buffer({Field.OUT_REGION: 1}, [-1, fd])
    a = torch.arange(40000, dtype=torch.float32)  # 160000 bytes: past SHM_MIN
    b = torch.arange(10, dtype=torch.int64)
    items, descs = tensors.pack_into([a, 7, b], lent)
    assert [i["kind"] for i in items] == ["tensor", "json", "tensor"]
    assert [d["offset"] for d in descs] == [0, 160000]  # each tensor at a 64-byte boundary
    assert all(d["region"] == -1 for d in descs)  # for the caller to name
    assert _read(fd, 0, 160000) == a.numpy().tobytes()
    assert _read(fd, 160000, 80) == b.numpy().tobytes()
    # The same buffer lent again is the same mapping, written over.
    again = tensors.lent_buffer({Field.OUT_REGION: 0}, [os.dup(fd)])
    assert again is lent
    tensors.pack_into([a * 2], again)
    assert _read(fd, 0, 160000) == (a * 2).numpy().tobytes()
    os.close(fd)


def test_outputs_that_do_not_fit_or_are_small_go_the_usual_way():
    fd = _lent_memfd(1 << 18)
    lent = tensors.lent_buffer({Field.OUT_REGION: 0}, [fd])
    assert tensors.pack_into([torch.zeros(1 << 17)], lent) is None  # 512 KiB > 256 KiB
    assert tensors.pack_into([torch.zeros(16)], lent) is None  # under SHM_MIN: inline is cheaper
    assert tensors.lent_buffer({}, [fd]) is None
    with pytest.raises(ValueError):
        tensors.lent_buffer({Field.OUT_REGION: 3}, [fd])
    os.close(fd)


def test_a_memfd_allocated_on_threads_holds_what_was_packed(monkeypatch):
    """The reference's worker allocates a large memfd's pages on several threads before writing it (tensors._allocate);
    the sealed region holds the tensors' bytes all the same."""
    monkeypatch.setattr(tensors, "POPULATE_THREADS", 3)
    monkeypatch.setattr(tensors, "POPULATE_MIN", 1 << 20)
    a = torch.arange(3 << 20, dtype=torch.float32)  # 12 MiB: 3 ranges of 4 MiB
    b = torch.ones(5, dtype=torch.int16)
    items, descs, payload, fd = tensors.pack([a, b], region=0)
    try:
        assert payload == b"" and fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE
        back = tensors.unpack(items, descs, payload, "cpu", [fd])
        assert torch.equal(back[0], a) and torch.equal(back[1], b)
    finally:
        os.close(fd)
