"""Running Triton kernels under Triton's CPU interpreter from a test: the environment of the subprocess
(TRITON_INTERPRET=1, and $KGYM_TRITON_PATH, a pip --target folder holding Triton, ahead on PYTHONPATH) and whether
Triton imports there. Interpreter settings never leak into the test process itself."""
import os
import subprocess
import sys

PYTHON = os.environ.get("KGYM_PYTHON", sys.executable)


def env(**extra):
    e = dict(os.environ, TRITON_INTERPRET="1", **extra)
    path = os.environ.get("KGYM_TRITON_PATH")
    if path:
        e["PYTHONPATH"] = path + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def available():
    probe = subprocess.run([PYTHON, "-c", "import torch, triton, triton.language"], env=env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return probe.returncode == 0
