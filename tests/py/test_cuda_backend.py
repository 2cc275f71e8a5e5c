"""The CUDA backend (torch.utils.cpp_extension.load_inline candidates) on the CPU, through the sealed pipeline of
`kgym eval --backend cuda`: a C++ extension candidate is correct; the supervisor's build cache (one directory per
source hash) makes the second evaluation of the same code a hit, and gives a different source a directory of its
own; a build that fails is a compile error that quotes the compiler, not Python.

Each test module run uses a cache root of its own ($TMPDIR/kgym-ext-cache with TMPDIR set for the supervisor).
Skipped only where the C++ toolchain or torch's C++ headers are missing (Debian: g++, ninja-build, python3-dev,
libtorch-dev; see setup.sh)."""
import json
import os
import shutil
import subprocess

import pytest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidates")
REF = os.path.join(HERE, "ref_relu_small.py")
GOOD = os.path.join(HERE, "relu_cpp_extension.py")
BAD = os.path.join(HERE, "relu_cpp_extension_build_error.py")
PY = os.environ.get("KGYM_PYTHON", "/usr/bin/python3")

_PROBE = """
import os, sysconfig
from torch.utils import cpp_extension as ce
need = [os.path.join(p, "torch", "extension.h") for p in ce.include_paths()[:1]]
need.append(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
missing = [p for p in need if not os.path.exists(p)]
print(";".join(missing))
"""


def _toolchain_missing():
    why = [t for t in ("c++", "ninja") if shutil.which(t) is None]
    p = subprocess.run([PY, "-c", _PROBE], capture_output=True, text=True)
    if p.returncode != 0:
        why.append("torch.utils.cpp_extension does not import: " + p.stderr.strip()[-300:])
    elif p.stdout.strip():
        why.append("headers missing: " + p.stdout.strip())
    return ", ".join(why)


_MISSING = _toolchain_missing()
pytestmark = pytest.mark.skipif(bool(_MISSING), reason="no C++ extension toolchain: " + _MISSING)


@pytest.fixture(scope="module")
def tmpdir_env(tmp_path_factory):
    d = tmp_path_factory.mktemp("ext-tmp")
    return str(d), dict(os.environ, TMPDIR=str(d))


def _eval(kgym, env, kernel, *extra):
    cmd = [kgym, "eval", "--ref", REF, "--kernel", kernel, "--device", "cpu", "--backend", "cuda",
           "--num-perf-trials", "3", "--warmup", "1", "--eval-timeout", "300"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


def _cache_dirs(root):
    d = os.path.join(root, "kgym-ext-cache")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_extension_candidate_is_correct_then_a_cache_hit(kgym, tmpdir_env):
    root, env = tmpdir_env
    r = _eval(kgym, env, GOOD)
    assert r["outcome"] == "correct", (r["outcome_detail"], r["metadata"].get("stdout_tail"))
    md = r["metadata"]
    assert md["backend"] == "cuda"
    assert md["extension_cache"] == "miss"
    assert md["sandbox"].get("extension_cache") == "mounted", md["sandbox"]
    first_load = md["load_s"]
    assert len(_cache_dirs(root)) == 1
    r2 = _eval(kgym, env, GOOD)
    assert r2["outcome"] == "correct", r2["outcome_detail"]
    assert r2["metadata"]["extension_cache"] == "hit"
    assert len(_cache_dirs(root)) == 1
    # Informational (no timed assertion): the hit skips the compiler.
    print("load_s miss %.2f, hit %.2f" % (first_load, r2["metadata"]["load_s"]))


def test_a_different_source_gets_its_own_directory(kgym, tmpdir_env, tmp_path):
    root, env = tmpdir_env
    r = _eval(kgym, env, GOOD)  # present (or made) in the cache
    assert r["outcome"] == "correct", r["outcome_detail"]
    before = _cache_dirs(root)
    # The same extension name and function, a different source: it must not load the other's build.
    other = tmp_path / "other.py"
    with open(GOOD) as f:
        other.write_text(f.read().replace("const int64_t n = xc.numel();",
                                          "const int64_t n = xc.numel();  // another source"))
    r2 = _eval(kgym, env, str(other))
    assert r2["outcome"] == "correct", r2["outcome_detail"]
    assert r2["metadata"]["extension_cache"] == "miss"
    after = _cache_dirs(root)
    assert len(after) == len(before) + 1 and set(before) < set(after)
    # Each source's build is still there for it.
    r3 = _eval(kgym, env, GOOD)
    assert r3["metadata"]["extension_cache"] == "hit"
    r4 = _eval(kgym, env, str(other))
    assert r4["metadata"]["extension_cache"] == "hit"


@pytest.mark.parametrize("verbose", [True, False])
def test_build_error_quotes_the_compiler(kgym, tmpdir_env, tmp_path, verbose):
    _, env = tmpdir_env
    kernel = tmp_path / "bad.py"
    with open(BAD) as f:
        kernel.write_text(f.read().replace("verbose=True", "verbose=%s" % verbose))
    r = _eval(kgym, env, str(kernel))
    assert r["outcome"] == "compile_error", r["outcome_detail"]
    assert r["compiled"] is False and r["error_code"] == "COMPILATION_ERROR"
    d = r["outcome_detail"]
    assert d.startswith("main.cpp:"), d  # the compiler's first error line leads
    assert "error" in d and "kgym_undefined_relu(o, in, x.numel());" in d, d
    assert "Traceback" not in d and "RuntimeError" not in d, d
    assert r["metadata"]["extension_cache"] == "miss"


def test_triton_backend_gets_no_extension_cache(kgym, tmpdir_env, tmp_path):
    root, env = tmpdir_env
    before = _cache_dirs(root)
    plain = tmp_path / "plain.py"
    plain.write_text("import torch\n\n\nclass ModelNew(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return torch.relu(x)\n")
    cmd = [kgym, "eval", "--ref", REF, "--kernel", str(plain), "--device", "cpu", "--num-perf-trials", "3",
           "--warmup", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=200, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout)
    assert r["outcome"] == "correct", r["outcome_detail"]
    assert "extension_cache" not in r["metadata"]
    assert "extension_cache" not in r["metadata"].get("sandbox", {})
    assert _cache_dirs(root) == before
