"""Framing shared with src/eval/wire.h: [u32 header_len][u64 payload_len][header JSON][payload bytes], little endian."""
import json
import struct

_HDR = struct.Struct("<IQ")


class ChannelClosed(Exception):
    pass


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ChannelClosed()
        got += k
    return buf


def send(sock, header, payload=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    sock.sendall(_HDR.pack(len(h), len(payload)) + h)
    if payload:
        sock.sendall(payload)


def recv(sock):
    hl, pl = _HDR.unpack(_recv_exact(sock, _HDR.size))
    header = json.loads(bytes(_recv_exact(sock, hl)))
    payload = _recv_exact(sock, pl) if pl else bytearray()
    return header, payload
