"""CUDA-backend candidates: torch.utils.cpp_extension builds (load_inline) inside the candidate worker.

The build cache itself is the supervisor's (src/eval/extension_cache.h): the sandbox mounts this source's cache
directory as TORCH_EXTENSIONS_DIR. This module only makes a cached build usable on old torch and recognises a
failed build, so the supervisor can report the compiler's first errors rather than a Python traceback.
"""
import builtins
import io
import os
import subprocess


class _SameContentWriter(io.StringIO):
    """A text file opened for writing that touches the file on close only when its content changes."""

    def __init__(self, path, encoding):
        super().__init__()
        self._path, self._encoding = path, encoding

    def close(self):
        if not self.closed:
            new = self.getvalue()
            try:
                with builtins.open(self._path, encoding=self._encoding) as f:
                    same = f.read() == new
            except (OSError, UnicodeDecodeError):
                same = False
            if not same:
                with builtins.open(self._path, "w", encoding=self._encoding) as f:
                    f.write(new)
        super().close()


def keep_unchanged_build_files():
    """torch before 2.x rewrites an extension's sources and build.ninja on every load, so ninja, which goes by
    modification times, rebuilds a cached extension from scratch; newer torch leaves unchanged files alone
    (cpp_extension._maybe_write). Gives old torch that behaviour for files under TORCH_EXTENSIONS_DIR, by
    shadowing `open` in the cpp_extension module only. Returns True if it did."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        return False
    from torch.utils import cpp_extension as ce
    if hasattr(ce, "_maybe_write") or getattr(ce, "_kgym_same_content", False):
        return False
    root = os.path.realpath(root) + os.sep

    def open_(file, mode="r", *args, **kwargs):
        if mode == "w" and not args and set(kwargs) <= {"encoding"} and isinstance(file, str) \
                and os.path.realpath(file).startswith(root):
            return _SameContentWriter(file, kwargs.get("encoding"))
        return builtins.open(file, mode, *args, **kwargs)

    ce.open = open_
    ce._kgym_same_content = True
    return True


def build_error(e):
    """(short detail, compiler output) when `e` is a failed cpp_extension build, else None. torch puts the
    compiler's output into the message of a non-verbose build (and into its CalledProcessError); a verbose build
    prints it instead, and the supervisor then reads it from the worker's captured output."""
    def ninja(x):
        return isinstance(x, subprocess.CalledProcessError) and "ninja" in str(x.cmd)

    msg = str(e)
    cause = e if ninja(e) else e.__cause__ or e.__context__
    if "Error building extension" not in msg and not ninja(cause):
        return None
    log = msg
    out = cause.output if ninja(cause) else None
    if isinstance(out, bytes):
        out = out.decode(errors="replace")
    if out and out.strip() and out.strip()[:200] not in log:
        log += "\n" + out
    first = msg.split(": [", 1)[0].splitlines()[0] if msg.strip() else type(e).__name__
    return first[:300], log[:60000]
