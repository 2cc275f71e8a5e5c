"""The worker's private channel, framed as in src/sandbox/channel.h: [u32 header_len][u64 payload_len][header JSON]
[payload bytes], little endian.

Large tensors do not travel in the payload: they ride along as sealed memfds (see tensors.py), passed as
SCM_RIGHTS with the 12-byte prefix; the header then says "regions": n. Received fds are returned in
header["_fds"] (local only, never sent back)."""
import array
import json
import math
import socket
import struct

from .protocol import Field

_HDR = struct.Struct("<IQ")
MAX_FDS = 64


class ChannelClosed(Exception):
    pass


def _recv_exact(sock, n, into=None):
    buf = bytearray(n) if into is None else into
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ChannelClosed()
        got += k
    return buf


def _finite(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def _encode(header):
    """The header as strict JSON: a non-finite float (which json.dumps writes as NaN, which the supervisor's parser
    rightly refuses as a malformed header) becomes null."""
    try:
        return json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        return json.dumps(_finite(header), separators=(",", ":"), allow_nan=False).encode()


def send(sock, header, payload=b"", fds=()):
    fds = list(fds)
    if fds:
        header = dict(header, **{Field.REGIONS: len(fds)})
    h = _encode(header)
    prefix = _HDR.pack(len(h), len(payload))
    if fds:
        sent = sock.sendmsg([prefix], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        if sent < len(prefix):
            sock.sendall(prefix[sent:])
        sock.sendall(h)
    else:
        sock.sendall(prefix + h)
    if payload:
        sock.sendall(payload)


def recv(sock):
    fds = []
    prefix = bytearray()
    while len(prefix) < _HDR.size:
        data, anc, _flags, _addr = sock.recvmsg(_HDR.size - len(prefix), socket.CMSG_SPACE(MAX_FDS * 4))
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(raw[:len(raw) - len(raw) % 4])
                fds.extend(a)
        if not data:
            raise ChannelClosed()
        prefix += data
    hl, pl = _HDR.unpack(bytes(prefix))
    header = json.loads(bytes(_recv_exact(sock, hl)))
    payload = _recv_exact(sock, pl) if pl else bytearray()
    if fds:
        header["_fds"] = fds
    return header, payload
