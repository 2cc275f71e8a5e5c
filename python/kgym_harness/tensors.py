"""Packing of call arguments and results into (JSON description, raw bytes) and back.

An argument or result is a list of items; each item is {"kind": "tensor", "index": k} pointing into "tensors"
(dtype, shape, offset, nbytes into the payload) or {"kind": "json", "value": v} for plain Python values.
"""
import torch

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}


def tensor_bytes(t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous().reshape(-1)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if t.numel() == 0:
        return b""
    return t.view(torch.uint8).numpy().tobytes() if t.dtype != torch.uint8 else t.numpy().tobytes()


def pack(values):
    """values: list of tensors / plain values -> (items, tensors_desc, payload bytes)."""
    items, descs, chunks, offset = [], [], [], 0
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.dtype not in NAMES:
                raise TypeError("unsupported tensor dtype %s" % v.dtype)
            b = tensor_bytes(v)
            descs.append({"dtype": NAMES[v.dtype], "shape": list(v.shape), "offset": offset, "nbytes": len(b)})
            items.append({"kind": "tensor", "index": len(descs) - 1})
            chunks.append(b)
            offset += len(b)
        elif v is None or isinstance(v, (bool, int, float, str)):
            items.append({"kind": "json", "value": v})
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float)) for x in v):
            items.append({"kind": "json", "value": list(v)})
        else:
            raise TypeError("unsupported value of type %s" % type(v).__name__)
    return items, descs, b"".join(chunks)


def unpack(items, descs, payload, device="cpu"):
    out = []
    mv = memoryview(payload)
    for it in items:
        if it["kind"] == "json":
            out.append(it["value"])
            continue
        d = descs[it["index"]]
        dt = DTYPES[d["dtype"]]
        n = d["nbytes"]
        if n == 0:
            t = torch.empty(d["shape"], dtype=dt)
        else:
            raw = torch.frombuffer(bytearray(mv[d["offset"]:d["offset"] + n]), dtype=torch.uint8)
            t = raw.view(torch.uint8 if dt == torch.bool else dt)
            if dt == torch.bool:
                t = t.to(torch.bool)
            t = t.reshape(d["shape"])
        out.append(t.to(device) if device != "cpu" else t)
    return out
