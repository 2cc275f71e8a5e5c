"""Helpers for the training tests: skip without the learner's packages, resolved configs from the real kgym CLI,
and a learner server run as a child process."""
import json
import os
import subprocess
import sys
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def need_learner_packages():
    for mod in ("tokenizers", "safetensors"):
        try:
            __import__(mod)
        except ImportError:
            pytest.skip(f"{mod} is not installed (setup.sh puts it in build/train-pkgs)")


def python():
    return os.environ.get("KGYM_PYTHON", sys.executable)


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python")] + sys.path[1:])
    return e


# A tiny pure-torch policy: fast on two CPU cores, the same code path as the GPU's Qwen3 for everything else.
TINY = ["model.init.arch=tiny", "model.init.hidden_size=64", "model.init.intermediate_size=128",
        "model.init.num_hidden_layers=2", "model.init.num_attention_heads=4", "model.init.max_position_embeddings=2048",
        "model.dtype=fp32", "trainer.device=cpu", "trainer.mixed_precision=none", "tokenizer.vocab_size=512"]


def resolved_config(kgym, kind, out_path, overrides, cwd=ROOT):
    """`kgym sft|train --print-config` with overrides, written to out_path; returns the dict."""
    p = subprocess.run([kgym, kind, "--print-config"] + list(overrides), capture_output=True, text=True, cwd=cwd,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    cfg = json.loads(p.stdout)
    with open(out_path, "w") as f:
        json.dump(cfg, f)
    return cfg


class Server:
    """python -m kgym_train serve as a child process."""

    def __init__(self, config, *args):
        self.proc = subprocess.Popen([python(), "-m", "kgym_train", "serve", "--config", config] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=ROOT)
        line = self.proc.stdout.readline()
        if "KGYM_LEARNER_READY" not in line:
            self.proc.kill()
            raise AssertionError("the learner did not start: " + line + self.proc.stderr.read()[-3000:])
        self.url = f"http://127.0.0.1:{int(line.split('port=')[1])}"

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            return json.load(urllib.request.urlopen(req, timeout=300))
        except urllib.error.HTTPError as e:
            return {"http_status": e.code, **json.load(e)}

    def get(self, path):
        return json.load(urllib.request.urlopen(self.url + path, timeout=60))

    def close(self):
        try:
            self.post("/kgym/shutdown", {})
            self.proc.wait(timeout=20)
        except Exception:
            self.proc.kill()
