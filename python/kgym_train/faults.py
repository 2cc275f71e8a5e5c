"""The learner's fault points: the Python half of kgym's fault registry (src/fault/fault_points.h states the contract
and lists every point; the learner's are those whose "where" names python/kgym_train).

KGYM_FAULTS="POINT[/SCOPE][@N][*K][:MODE],..." arms them: the point's N-th hit fails (default 1), and the K-1 after it
(K = 0: every hit from the N-th on). Entries naming points of the C++ side are theirs and ignored here. With
KGYM_FAULTS_DIR set, the first process to fire an entry leaves a file named "POINT@N" there, and a process that finds
it does not fire the entry: a learner restarted after its fault goes on without it. Unarmed, hit() is one dict lookup.
"""
import os
import sys
import threading

POINTS = {"learner.train_step": ("exit",), "learner.grad": ("nonfinite",)}

_lock = threading.Lock()
_entries = None  # point -> [entry dicts], read from the environment at the first hit


def _parse(spec):
    entries = {}
    for item in filter(None, (spec or "").split(",")):
        rest, _, mode = item.partition(":")
        rest, _, count = rest.partition("*")
        point, _, first = rest.partition("@")
        point = point.partition("/")[0]  # a scope: the learner's points have none to tell apart
        if point not in POINTS:
            continue  # the C++ side's
        mode = mode or POINTS[point][0]
        if mode not in POINTS[point]:
            raise ValueError(f"KGYM_FAULTS: fault point {point} has no mode {mode!r} (modes: {POINTS[point]})")
        entries.setdefault(point, []).append({"text": f"{point}@{int(first or 1)}", "first": int(first or 1),
                                              "count": int(count or 1), "mode": mode, "hits": 0, "owned": False,
                                              "spent": False})
    return entries


def hit(point):
    """The mode of the failure this hit of `point` is to have, or None."""
    global _entries
    with _lock:
        if _entries is None:
            _entries = _parse(os.environ.get("KGYM_FAULTS", ""))
        for e in _entries.get(point, ()):
            if e["spent"]:
                continue
            e["hits"] += 1
            h = e["hits"]
            if h < e["first"] or (e["count"] > 0 and h >= e["first"] + e["count"]):
                continue
            marker_dir = os.environ.get("KGYM_FAULTS_DIR")
            if marker_dir and not e["owned"]:
                try:
                    os.close(os.open(os.path.join(marker_dir, e["text"]), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                except FileExistsError:
                    e["spent"] = True
                    continue
                e["owned"] = True
            print(f"kgym: fault {e['text']} fired ({e['mode']}, hit {h})", file=sys.stderr, flush=True)
            return e["mode"]
    return None


def die_if_hit(point):
    """For points whose failure is the process's death: exits at once (no cleanup, as SIGKILL would)."""
    if hit(point) == "exit":
        os._exit(137)
