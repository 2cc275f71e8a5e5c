"""Process isolation applied to a freshly forked worker, before any untrusted code is loaded.

Layout of one worker (the supervisor forks it through src/sandbox/zygote.h):
  zygote --fork--> C (outside)  unshare(PID|NET|NS) --fork--> G (PID 1 of the new namespace) --fork--> H (runs
  the harness). When C dies (the supervisor SIGKILLs it on timeout or cancel), G dies by PDEATHSIG and the kernel
  kills every process in the namespace, so nothing the candidate started survives the evaluation.
Every step records whether it took effect; `protections` is reported to the supervisor and by `kgym doctor`.
"""
import ctypes
import ctypes.util
import os
import resource
import signal

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

# TRITON_INTERPRET lets CPU-only machines run Triton candidates in Triton's interpreter (set by whoever runs kgym).
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "TZ", "CUDA_HOME", "LD_LIBRARY_PATH", "TRITON_INTERPRET")


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def unshare(flags):
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(src, target, fstype, flags, data=None):
    _check(_libc.mount(src.encode() if src else None, target.encode(), fstype.encode() if fstype else None,
                       ctypes.c_ulong(flags), data.encode() if data else None), "mount " + target)


def prctl(option, arg):
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), 0, 0, 0), "prctl")


def enter_namespaces(policy, protections):
    """Called in C. Returns True if a new PID namespace was made (the next fork becomes its init)."""
    flags = 0
    if policy.get("net", True):
        flags |= CLONE_NEWNET
    if policy.get("pidns", True):
        flags |= CLONE_NEWPID
    if policy.get("mountns", True):
        flags |= CLONE_NEWNS
    try:
        unshare(flags)
        protections["network_namespace"] = bool(flags & CLONE_NEWNET)
        protections["pid_namespace"] = bool(flags & CLONE_NEWPID)
        protections["mount_namespace"] = bool(flags & CLONE_NEWNS)
        return bool(flags & CLONE_NEWPID)
    except OSError as e:
        protections["namespaces_error"] = str(e)
    # Unprivileged fallback: a user namespace grants the other namespaces without root.
    try:
        uid, gid = os.getuid(), os.getgid()
        unshare(CLONE_NEWUSER | flags)
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write("0 %d 1" % uid)
        with open("/proc/self/gid_map", "w") as f:
            f.write("0 %d 1" % gid)
        protections["user_namespace"] = True
        protections["network_namespace"] = bool(flags & CLONE_NEWNET)
        protections["pid_namespace"] = bool(flags & CLONE_NEWPID)
        protections["mount_namespace"] = bool(flags & CLONE_NEWNS)
        return bool(flags & CLONE_NEWPID)
    except OSError as e:
        protections["user_namespace_error"] = str(e)
    lead_process_group()
    protections["process_group"] = True
    return False


def setup_filesystem(policy, protections):
    """Called in G (inside the mount namespace, still privileged): fresh /proc, private /tmp as the scratch dir,
    hidden paths, everything else read-only."""
    if not protections.get("mount_namespace"):
        return
    cache_fd = -1
    try:
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        if protections.get("pid_namespace"):
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        if policy.get("extension_cache"):
            # Held open: the private /tmp mounted next hides the host path (the cache lives in the host's /tmp).
            try:
                cache_fd = os.open(policy["extension_cache"], os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError as e:
                protections["extension_cache_error"] = str(e)
        size = "size=%dm" % int(policy.get("scratch_mb", 2048))
        for d in ("/tmp", "/dev/shm", "/var/tmp"):
            if os.path.isdir(d):
                mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, size + ",mode=1777")
        writable = {"/tmp", "/dev/shm", "/var/tmp", "/proc", "/dev", "/sys"}
        if cache_fd >= 0:
            try:
                _mount_extension_cache(cache_fd, EXTENSION_MOUNT, policy, protections)
                writable.add(EXTENSION_MOUNT)
            except OSError as e:
                protections["extension_cache_error"] = str(e)
        for p in policy.get("hide", []):
            if os.path.isdir(p):
                mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=1m,mode=0")
        protections["hidden_paths"] = [p for p in policy.get("hide", []) if os.path.isdir(p)]
        failed = []
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for mp in points:
            mp = mp.replace("\\040", " ")
            if mp in writable or any(mp.startswith(w + "/") for w in ("/proc", "/sys", "/dev")):
                continue
            try:
                mount(None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
            except OSError:
                failed.append(mp)
        protections["readonly_root"] = "/" not in failed
        if failed:
            protections["readonly_failed"] = failed[:8]
        protections["private_tmp"] = True
    except OSError as e:
        protections["filesystem_error"] = str(e)
    finally:
        if cache_fd >= 0:
            os.close(cache_fd)


# Where the build cache is mounted in the private /tmp: the same path in every evaluation, because torch's
# build files name their directory and ninja rebuilds whatever was built under another path.
EXTENSION_MOUNT = "/tmp/kgym-torch-extensions"


def _mount_extension_cache(fd, target, policy, protections):
    """Binds the supervisor's per-source build directory (open as `fd`) at `target`, writable by the uid the
    harness drops to. Only byte-identical sources share that directory (see src/eval/extension_cache.h)."""
    os.makedirs(target, exist_ok=True)
    mount("/proc/self/fd/%d" % fd, target, None, MS_BIND)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
    uid = int(policy.get("uid", 65534))
    if os.getuid() == 0 and uid > 0 and not protections.get("user_namespace"):
        os.chown(target, uid, uid)
    protections["extension_cache"] = "mounted"


def drop_privileges(policy, protections):
    """Called in H: scratch dir, unprivileged uid, rlimits, no core dumps, scrubbed environment."""
    scratch = policy.get("scratch", "/tmp/kgym")
    os.makedirs(scratch, exist_ok=True)
    uid = int(policy.get("uid", 65534))
    if os.getuid() == 0 and uid > 0 and not protections.get("user_namespace"):
        try:
            os.chown(scratch, uid, uid)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            protections["uid"] = uid
        except OSError as e:
            protections["setuid_error"] = str(e)
    os.chdir(scratch)
    limits = policy.get("rlimits", {})
    names = {"as": resource.RLIMIT_AS, "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC,
             "fsize": resource.RLIMIT_FSIZE, "cpu": resource.RLIMIT_CPU, "core": resource.RLIMIT_CORE}
    applied = {}
    for k, v in limits.items():
        if k in names and v is not None:
            try:
                resource.setrlimit(names[k], (int(v), int(v)))
                applied[k] = int(v)
            except (ValueError, OSError) as e:
                protections["rlimit_%s_error" % k] = str(e)
    protections["rlimits"] = applied
    try:
        prctl(PR_SET_DUMPABLE, 0)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        protections["no_new_privs"] = True
    except OSError as e:
        protections["prctl_error"] = str(e)
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.update(policy.get("env", {}))
    env["HOME"] = scratch
    env["TMPDIR"] = scratch
    env["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")
    env["TORCH_EXTENSIONS_DIR"] = os.path.join(scratch, "torch_extensions")
    if protections.get("extension_cache") == "mounted":
        env["TORCH_EXTENSIONS_DIR"] = EXTENSION_MOUNT
    elif policy.get("extension_cache") and not protections.get("private_tmp"):
        env["TORCH_EXTENSIONS_DIR"] = policy["extension_cache"]  # no private /tmp: the host path is in sight
        protections["extension_cache"] = "direct"
    os.environ.clear()
    os.environ.update(env)
    protections["env_scrubbed"] = True


def lead_process_group():
    """Called in C: a session and process group of the worker's own, so the supervisor can stop and kill it as one.
    Idempotent (a second call finds C leading its group already)."""
    try:
        os.setsid()
    except OSError:
        pass


def join_cgroup(policy, protections):
    """Called in C, before it forks: moves it into the cgroup the supervisor made for this worker (policy "cgroup"),
    so every process of the worker is in it. protections["cgroup"] says whether that worked."""
    path = policy.get("cgroup")
    if not path:
        return
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0")
        protections["cgroup"] = True
    except OSError as e:
        protections["cgroup"] = False
        protections["cgroup_error"] = str(e)


def set_parent_death_signal():
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
