"""The conversation between the supervisor and one worker: message kinds, their direction and their header fields.

This is the Python half of one definition whose other half is src/sandbox/protocol.h (read its header comment for
the order of a session); tests/py/test_protocol.py checks that the two agree name for name. The harness spells every
message kind and field through the names here.
"""


class Kind:
    """Message kinds: the value of the field "type" of every header."""
    # supervisor -> worker
    JOB = "job"
    TRIAL = "trial"
    POOL_SET = "pool_set"  # both ways
    TIMING = "timing"
    CALL = "call"
    GO = "go"
    NULL = "null"
    BURST = "burst"
    FETCH = "fetch"
    FETCH_KEPT = "fetch_kept"
    DETECT = "detect"
    TIMELINE = "timeline"  # both ways
    FINISH = "finish"
    # worker -> supervisor
    HELLO = "hello"
    INIT = "init"
    TRIAL_RESULT = "trial_result"
    READY = "ready"
    OK = "ok"
    ARMED = "armed"
    DONE = "done"
    OUTPUTS = "outputs"
    KEPT = "kept"
    DETECTED = "detected"
    EVIDENCE = "evidence"
    NOTE = "note"
    ERROR = "error"
    BYE = "bye"


class Field:
    """Header fields."""
    TYPE = "type"
    REGIONS = "regions"
    TENSORS = "tensors"
    CODE = "code"
    CLASS_NAME = "class_name"
    DEVICE = "device"
    SIZE = "size"
    INIT_SEED = "init_seed"
    TRAIN_MODE = "train_mode"
    TRIALS = "trials"
    SEED = "seed"
    VARIANT = "variant"
    POOL_SEEDS = "pool_seeds"
    POOL_BUDGET_BYTES = "pool_budget_bytes"
    REFERENCE_BACKEND = "reference_backend"
    ALLOW_TF32 = "allow_tf32"
    MEASURE_BANDWIDTH = "measure_bandwidth"
    INIT = "init"
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    ORACLE = "oracle"
    ORACLE_INDEX = "oracle_index"
    INDEX = "index"
    SKIPPED = "skipped"
    TRITON_LAUNCHES = "triton_launches"
    TRITON_KERNELS = "triton_kernels"
    WORKER_S = "worker_s"
    OUT_REGION = "out_region"
    FLUSH_MB = "flush_mb"
    KEEP_MB = "keep_mb"
    KEEP_FREE = "keep_free"
    KEEP = "keep"
    CALL = "call"
    SET = "set"
    K = "k"
    MODEL = "model"
    SELF_MS = "self_ms"
    EVENT_MS = "event_ms"
    ERROR = "error"
    ROLE = "role"
    PID = "pid"
    PROTECTIONS = "protections"
    RECORDER = "recorder"
    ITEMS = "items"
    KEY = "key"
    VALUE = "value"
    KIND = "kind"
    PHASE = "phase"
    DETAIL = "detail"
    TRACEBACK = "traceback"
    EXTENSION_BUILD = "extension_build"
    BUILD_LOG = "build_log"


class Role:
    REFERENCE = "reference"
    CANDIDATE = "candidate"
    PROBE = "probe"


class Evidence:
    """Kinds of in-process evidence: facts seen inside the candidate's process after a call."""
    LAZY_TENSOR = "lazy tensor / subclass"
    WRONG_DEVICE = "wrong device"
    OUTPUT_ALIASES_INPUT = "output aliases input"
    INPUT_MUTATION = "input mutation"
    PRECISION_DOWNGRADE = "precision downgrade"
    THREAD_INJECTION = "thread injection"
    STRAY_PROCESS = "stray process"


class Note:
    """Keys of note messages."""
    LOAD_S = "load_s"
    DEVICE_COPY_BANDWIDTH_GBPS = "device_copy_bandwidth_gbps"
    REFERENCE_BACKEND_ERROR = "reference_backend_error"
    PRECISION_LEVELS = "precision_levels"
    ORACLE_ERROR = "oracle_error"


TO_WORKER = "to_worker"
TO_SUPERVISOR = "to_supervisor"

# (kind, direction) -> the fields its header may carry besides "type".
MESSAGES = {
    (Kind.JOB, TO_WORKER): ("code", "class_name", "device", "size", "init_seed", "train_mode", "trials", "pool_seeds",
                            "pool_budget_bytes", "reference_backend", "allow_tf32", "measure_bandwidth", "init",
                            "tensors"),
    (Kind.TRIAL, TO_WORKER): ("index", "inputs", "tensors", "regions", "out_region"),
    (Kind.POOL_SET, TO_WORKER): ("inputs", "tensors", "regions"),
    (Kind.TIMING, TO_WORKER): ("flush_mb", "keep_mb", "keep_free"),
    (Kind.CALL, TO_WORKER): ("call", "set"),
    (Kind.GO, TO_WORKER): ("call",),
    (Kind.NULL, TO_WORKER): ("call",),
    (Kind.BURST, TO_WORKER): ("call", "set", "k", "model"),
    (Kind.FETCH, TO_WORKER): ("call", "set", "keep"),
    (Kind.FETCH_KEPT, TO_WORKER): ("call", "regions", "out_region"),
    (Kind.DETECT, TO_WORKER): (),
    (Kind.TIMELINE, TO_WORKER): (),
    (Kind.FINISH, TO_WORKER): (),
    (Kind.HELLO, TO_SUPERVISOR): ("role", "pid", "protections", "recorder"),
    (Kind.INIT, TO_SUPERVISOR): ("init", "tensors", "regions"),
    (Kind.TRIAL_RESULT, TO_SUPERVISOR): ("index", "skipped", "triton_launches", "worker_s", "inputs", "outputs",
                                         "oracle", "oracle_index", "tensors", "regions"),
    (Kind.POOL_SET, TO_SUPERVISOR): ("index", "inputs", "outputs", "tensors", "regions"),
    (Kind.READY, TO_SUPERVISOR): ("triton_kernels",),
    (Kind.OK, TO_SUPERVISOR): (),
    (Kind.ARMED, TO_SUPERVISOR): ("call",),
    (Kind.DONE, TO_SUPERVISOR): ("call", "self_ms", "event_ms"),
    (Kind.OUTPUTS, TO_SUPERVISOR): ("call", "outputs", "tensors", "regions"),
    (Kind.KEPT, TO_SUPERVISOR): ("call",),
    (Kind.DETECTED, TO_SUPERVISOR): ("error",),
    (Kind.TIMELINE, TO_SUPERVISOR): ("error",),
    (Kind.EVIDENCE, TO_SUPERVISOR): ("items",),
    (Kind.NOTE, TO_SUPERVISOR): ("key", "value"),
    (Kind.ERROR, TO_SUPERVISOR): ("kind", "phase", "detail", "traceback", "extension_build", "build_log"),
    (Kind.BYE, TO_SUPERVISOR): (),
}
