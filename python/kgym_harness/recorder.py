"""The GPU kernel recorder of this process: libkgym_cupti.so (src/gpu) writing CUPTI activity records to a memfd.

Started before CUDA initialises when the supervisor names the library in KGYM_CUPTI_LIB (the zygote has already
loaded it ahead of torch, so its libcupti is the toolkit's). Every call of the model is bracketed by begin/end
with a tag (phase << 32 | index, phases as in src/gpu/cupti_format.h); collect() hands the whole stream to the
supervisor, which parses it as untrusted bytes and decides what the times mean. Without the library every
method is a no-op and collect() says why nothing was recorded.
"""
import ctypes
import os

WARMUP, CORRECTNESS, DETECT_NOGRAD, DETECT_GRAD, TIMING = 1, 2, 3, 4, 5
HARNESS = 8  # the harness's own null calls (no model code)
BURST = 9  # model calls of a pipelined burst (no synchronisation between them)
MAX_STREAM_BYTES = 64 << 20  # the most a worker sends; the supervisor parses a cut stream up to its last record


class Recorder:
    def __init__(self):
        self.lib = None
        self.fd = -1
        self.error = "no recorder (KGYM_CUPTI_LIB not set)"

    def start(self, path):
        try:
            lib = ctypes.CDLL(path)
            lib.kgym_cupti_init_output.argtypes = [ctypes.c_char_p]
            lib.kgym_cupti_begin.argtypes = [ctypes.c_uint64]
            lib.kgym_cupti_flush.restype = ctypes.c_int64
            fd = os.memfd_create("kgym-cupti", 0)
            rc = lib.kgym_cupti_init_output(b"fd:%d" % fd)
            if rc != 0:
                os.close(fd)
                self.error = "kgym_cupti_init_output returned %d" % rc
                return False
        except (OSError, AttributeError) as e:
            self.error = "cannot load %s: %s" % (path, e)
            return False
        self.lib, self.fd, self.error = lib, fd, ""
        return True

    def begin(self, phase, index):
        if self.lib is not None:
            self.lib.kgym_cupti_begin((phase << 32) | (index & 0xFFFFFFFF))

    def end(self):
        if self.lib is not None:
            self.lib.kgym_cupti_end()

    def collect(self, sync):
        """(stream bytes, error text). Synchronises the device first so every launched kernel is included."""
        if self.lib is None:
            return b"", self.error
        try:
            sync()
        except Exception as e:  # noqa: BLE001 - a broken device still hands over what was recorded
            err = "device sync before the flush failed: %s" % e
        else:
            err = ""
        if self.lib.kgym_cupti_flush() < 0:
            err = err or "kgym_cupti_flush failed"
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, min(size, MAX_STREAM_BYTES), 0)
        if size > MAX_STREAM_BYTES:
            err = err or "stream cut at %d of %d bytes" % (MAX_STREAM_BYTES, size)
        return data, err


RECORDER = Recorder()


def start_from_env():
    path = os.environ.get("KGYM_CUPTI_LIB", "")
    if path and RECORDER.lib is None:
        RECORDER.start(path)
    return RECORDER
