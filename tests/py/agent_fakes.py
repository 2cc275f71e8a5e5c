"""Scripted stand-ins for the agent's two network peers, on loopback, for tests.

FakeOpenAI: an OpenAI-compatible /v1/chat/completions server. Every request is answered by
`script(task, sample, turn, attempt, request)`, where task is read from a "# TASK=<name>" line of the
first user message, and sample/turn are decoded from the request seed (kgym agent sends
seed + 1000*sample + turn when --seed is given). The script returns a Reply.

FakeGym: a KernelGYM-compatible server (POST /evaluate, GET /results/{task_id}) that judges candidate
code by markers: SPEED=<x> (correct, that speedup), WRONG (wrong values), DECOY (decoy kernel), and
any leftover ``` fence (the model's truncated output) as a compile failure.
"""
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    content: str = ""
    finish_reason: str = "stop"
    delay_s: float = 0.0
    raw_body: str = None  # sent verbatim instead of a chat completion (malformed replies)
    hang: threading.Event = None  # block until set (for kill tests)


def chat_completion(content, finish_reason="stop"):
    return json.dumps({
        "id": "cmpl-test", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    })


class _Server:
    def __init__(self, handler_cls, port=0):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler_cls)
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self):
        return self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class _OpenAIHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        owner = self.server.owner
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        task = owner.task_of(body["messages"][0]["content"])
        seed = body.get("seed", 0)
        sample, turn = seed // 1000, seed % 1000
        with owner.lock:
            key = (task, sample, turn)
            attempt = owner.attempts.get(key, 0)
            owner.attempts[key] = attempt + 1
            owner.log.append({"task": task, "sample": sample, "turn": turn, "attempt": attempt,
                              "messages": len(body["messages"]), "auth": self.headers.get("Authorization")})
        r = owner.script(task, sample, turn, attempt, body)
        if r.hang is not None:
            r.hang.wait()
        if r.delay_s:
            time.sleep(r.delay_s)
        payload = (r.raw_body if r.raw_body is not None else chat_completion(r.content, r.finish_reason)).encode()
        try:
            self.send_response(r.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered


def task_from_marker(first_message):
    m = re.search(r"# TASK=(\w+)", first_message)
    return m.group(1) if m else "?"


class FakeOpenAI(_Server):
    def __init__(self, script, task_of=task_from_marker):
        self.script = script
        self.task_of = task_of
        self.lock = threading.Lock()
        self.attempts = {}
        self.log = []
        super().__init__(_OpenAIHandler)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"


def judge(code):
    """The fake gym's verdict for a candidate, in the KernelGYM result schema."""
    r = {"status": "completed", "compiled": True, "correctness": False, "decoy_kernel": False,
         "reference_runtime": 1.0, "kernel_runtime": -1.0, "speedup": 0.0, "metadata": {},
         "error_message": None, "error_code": None}
    if "```" in code:
        r.update(compiled=False, error_message="SyntaxError: invalid syntax", error_code="COMPILATION_ERROR")
        return r
    if "DECOY" in code:
        r.update(correctness=True, decoy_kernel=True, error_message="Reward hacking: Decoy kernel detected")
        return r
    m = re.search(r"SPEED=([0-9.]+)", code)
    if m and "WRONG" not in code:
        s = float(m.group(1))
        r.update(correctness=True, speedup=s, kernel_runtime=1.0 / s)
        return r
    r.update(error_code="CORRECTNESS_ERROR", metadata={"correctness_issue": "Output mismatch",
                                                        "max_difference": ["0.5"]})
    return r


class _GymHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, obj):
        payload = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self):
        owner = self.server.owner
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with owner.lock:
            owner.posts.append(req)
            fail = owner.fail_first_posts > 0
            if fail:
                owner.fail_first_posts -= 1
            if owner.post_log is not None:
                owner.post_log.write(json.dumps({"task_id": req["task_id"]}) + "\n")
                owner.post_log.flush()
        if fail:
            return self._send(503, {"detail": "busy"})
        if owner.delay_s:
            time.sleep(owner.delay_s)
        res = judge(req["kernel_code"])
        res["task_id"] = req["task_id"]
        with owner.lock:
            owner.results.setdefault(req["task_id"], res)
        self._send(200, owner.results[req["task_id"]])

    def do_GET(self):
        owner = self.server.owner
        tid = self.path.rsplit("/", 1)[-1]
        with owner.lock:
            res = owner.results.get(tid)
        if res is None:
            return self._send(404, {"detail": "not found"})
        self._send(200, res)


class FakeGym(_Server):
    """`delay_s`: each POST is answered this much later; `post_log`: a file each POST's task_id is appended to (a
    gym run as its own process, fake_gym_process.py, tells the test what it was asked)."""

    def __init__(self, fail_first_posts=0, port=0, delay_s=0.0, post_log=None):
        self.lock = threading.Lock()
        self.posts = []
        self.results = {}
        self.fail_first_posts = fail_first_posts
        self.delay_s = delay_s
        self.post_log = post_log
        super().__init__(_GymHandler, port)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"


def kernel_response(marker, prose="Here is my kernel."):
    return (f"<think>Maybe ```python\nclass ModelNew: SPEED=99\n``` no.</think>{prose}\n```python\nimport torch\n"
            f"class ModelNew(torch.nn.Module):\n    pass  # {marker}\n```\n")
