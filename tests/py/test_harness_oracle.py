"""The fp64 oracle and the worker's channel where values are not finite (python/kgym_harness/oracle.py, channel.py):
a kernel_simple reference answers inputs it was not given (the oracle's float64 casts) with NaN, and a NaN written into
a header broke the reference's channel ("malformed header") so every kernel_simple task failed as a system error."""
import json
import socket
import struct

import torch

from kgym_harness import channel
from kgym_harness.oracle import Oracle


class _Ref:
    def __init__(self, cls):
        self.cls = cls
        self.model = cls()
        self.device = "cpu"


class _LooksUp(torch.nn.Module):
    """Finite on the exact float32 inputs it knows, NaN on anything else (kernel_simple's generated reference)."""

    def forward(self, x):
        return x * 2 if x.dtype == torch.float32 else torch.full_like(x, float("nan"))


class _Doubles(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_an_oracle_that_is_not_finite_judges_nothing():
    o = Oracle(_Ref(_LooksUp), [], 0)
    values, index = o.samples([torch.ones(8)], 1)
    assert values == [] and index == []
    assert "not finite" in o.error


def test_a_finite_oracle_gives_values_and_levels():
    o = Oracle(_Ref(_Doubles), [], 0)
    x = torch.randn(8)
    values, index = o.samples([x], 1)
    assert o.error is None and len(values) == 1 and torch.allclose(values[0], (x * 2).double())
    levels = o.measure_levels([x], values, index)
    assert set(levels) == {"fp32", "tf32", "bf16", "fp16"} and levels["fp32"][0] < 1e-6


def _read_header(sock):
    prefix = sock.recv(12)
    hl, _ = struct.unpack("<IQ", prefix)
    return sock.recv(hl)


def test_channel_writes_non_finite_numbers_as_null():
    a, b = socket.socketpair()
    try:
        channel.send(a, {"type": "note", "value": {"fp32": [float("nan"), 1.5, float("inf")]}})
        raw = _read_header(b)
        assert b"NaN" not in raw and b"Infinity" not in raw
        assert json.loads(raw)["value"]["fp32"] == [None, 1.5, None]
    finally:
        a.close()
        b.close()
