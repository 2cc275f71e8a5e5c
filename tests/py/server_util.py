"""Helpers for the `kgym serve` tests: start the real binary on a free loopback port, talk HTTP with urllib."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

KGYM_BIN = os.environ.get("KGYM_BIN", os.path.join(os.path.dirname(__file__), "../../build/src/cli/kgym"))

REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(64, 64)]
def get_init_inputs():
    return []
"""

KERNEL_OK = """import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.clamp(x, min=0.0)
"""


def sim_kernel(directives=""):
    """A candidate for the simulated evaluator; `directives` are '# sim: ...' lines."""
    return "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n" + directives + "\n"


def drkernel_payload(task_id, kernel_code, reference_code=REF):
    """The exact request body the Dr.Kernel reward client builds (compute_batch_rewards)."""
    return {
        "task_id": task_id, "reference_code": reference_code, "kernel_code": kernel_code, "backend": "triton",
        "num_correct_trials": 5, "num_perf_trials": 100, "timeout": 300, "priority": "normal",
        "entry_point": "Model", "is_valid": False, "verbose_errors": True, "enable_profiling": True,
        "detect_decoy_kernel": True, "reference_backend": None,
    }



def small_payload(task_id, code=KERNEL_OK, **extra):
    """Dr.Kernel's body with CPU-sized trials (2 correctness, 5 timed) and a 120 s timeout."""
    p = drkernel_payload(task_id, code, REF)
    p.update({"num_correct_trials": 2, "num_perf_trials": 5, "timeout": 120}, **extra)
    return p

class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class Server:
    """A `kgym serve` child process. Stop with stop() (SIGTERM) or kill() (SIGKILL)."""

    def __init__(self, tmp_path, *args, store=None, token=None, env=None):
        self.store = store or str(tmp_path / "store.sqlite")
        self.args = ["serve", "--port", "0", "--store", self.store, *args]
        self.token = token
        self.log = open(tmp_path / f"serve-{time.time_ns()}.log", "w+")
        self.proc = subprocess.Popen([KGYM_BIN, *self.args], stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on http://([\d.]+):(\d+)", line)
        if not m:
            self.proc.kill()
            self.log.seek(0)
            raise RuntimeError("kgym serve did not start: " + line + self.log.read())
        self.url = f"http://{m.group(1)}:{m.group(2)}"
        self.startup_line = line

    def request(self, method, path, body=None, headers=None, timeout=60):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        h = {"Content-Type": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return Response(r.status, dict(r.headers), r.read().decode())
        except urllib.error.HTTPError as e:
            return Response(e.code, dict(e.headers), e.read().decode())

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def poll_status(self, task_id, timeout=60):
        """Polls GET /status every 0.2 s until a terminal status, as the Dr.Kernel client does (every 1 s)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.get(f"/status/{task_id}")
            if r.status == 200 and r.json()["status"] in ("completed", "failed", "timeout", "cancelled"):
                return r.json()["status"]
            time.sleep(0.2)
        raise TimeoutError(task_id)

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A private redis-server child on a free port, or unavailable (tests skip)."""

    def __init__(self, port=None):
        self.bin = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None)
        self.proc = None
        if not self.bin:
            return
        self.port = port or free_port()
        self.proc = subprocess.Popen([self.bin, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
