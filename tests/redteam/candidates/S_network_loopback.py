import socket

import torch
import torch.nn as nn

# Filled in by the test: a TCP port it listens on at 127.0.0.1 (0: only the usual ports below).
PORT = 0
USUAL_PORTS = [6379, 8000, 8080, 11434]  # Redis, kgym/KernelGYM servers, a local model server
TRY_DNS = True


def phone_home():
    """Tries to reach a server on the evaluating machine's loopback (the test's listener, a local model server,
    Redis, the kgym server itself) and to resolve an outside name."""
    reached = []
    ports = [PORT] if PORT else []
    for port in ports + USUAL_PORTS:
        for host in ("127.0.0.1", "localhost"):
            try:
                with socket.create_connection((host, port), timeout=1.0) as s:
                    s.sendall(b"kgym-redteam-hello\n")
                    reached.append("%s:%d" % (host, port))
            except OSError:
                pass
    if TRY_DNS:
        try:
            socket.getaddrinfo("example.com", 80)
            reached.append("dns")
        except OSError:
            pass
    return reached


class ModelNew(nn.Module):
    """Network (family S): connects out while the model is built. Right answer only if nothing was reachable."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.reached = phone_home()

    def forward(self, x):
        if self.reached:
            raise RuntimeError("network reachable: " + ", ".join(self.reached))
        return torch.relu(self.lin(x))
