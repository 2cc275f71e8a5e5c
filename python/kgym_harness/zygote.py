"""The warm zygote: imports torch (and triton where present) once, never touches CUDA, and forks one sandboxed
worker per request from the supervisor.

Control channel: a SOCK_SEQPACKET socket on fd 3. Each message is one JSON object; a "fork" message carries two
file descriptors (the worker's private channel and its stdout/stderr pipe). Replies: {"type":"forked"} with the
pid of C, then {"type":"exit"} with its wait status when it ends. Secrets never pass through here: the supervisor
talks to each worker over that worker's private channel only after the fork.
"""
import array
import json
import os
import select
import signal
import socket
import sys
import time

# `python -m` puts the caller's working directory first on sys.path: no worker may import from there.
_cwd = os.getcwd()
sys.path[:] = [p for p in sys.path if p not in ("", ".", _cwd)]


def _preload():
    t0 = time.time()
    mods = []
    cupti = os.environ.get("KGYM_CUPTI_LIB", "")
    if cupti:
        # Loaded (not started) ahead of torch, so the process resolves libcupti to the toolkit copy the recorder
        # was built against rather than one torch's profiler may bring; workers start it before CUDA initialises.
        try:
            import ctypes
            ctypes.CDLL(cupti)
            mods.append("kgym_cupti")
        except OSError as e:
            mods.append("kgym_cupti unavailable: %s" % e)
    import torch  # noqa: F401
    mods.append("torch")
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
        mods.append("triton")
    except Exception:
        pass
    import numpy  # noqa: F401
    from . import worker  # noqa: F401  (imports the harness modules so forks start warm)
    return mods, time.time() - t0


def _run_child(msg, chan_fd, out_fd, ctl):
    """In C, right after the fork. Never returns."""
    from . import sandbox
    code = 70
    try:
        ctl.close()
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(out_fd)
        sandbox.set_parent_death_signal()
        policy = msg.get("policy", {})
        protections = {}
        # Before anything is forked: the worker's processes share this one's group and cgroup, which is how the
        # supervisor freezes them all (src/sandbox/freezer.h).
        sandbox.lead_process_group()
        sandbox.join_cgroup(policy, protections)
        in_pidns = False
        if policy.get("enabled", True):
            in_pidns = sandbox.enter_namespaces(policy, protections)
        else:
            protections["disabled"] = True
        if not in_pidns:
            # No PID namespace: run the harness right here in C (its own session, killed as a group).
            if policy.get("enabled", True):
                sandbox.setup_filesystem(policy, protections)
            _run_harness(msg, chan_fd, policy, protections, init=False)
        r, w = os.pipe()
        g = os.fork()
        if g == 0:
            os.close(r)
            _run_init(msg, chan_fd, policy, protections, w)
        os.close(w)
        os.close(chan_fd)
        _, status = os.waitpid(g, 0)
        report = os.read(r, 64).decode() or ""
        # Mirror the harness's fate so the zygote (and the supervisor) see how it ended.
        if report.startswith("sig:"):
            sig = int(report[4:])
            if sig not in (signal.SIGKILL, signal.SIGSTOP):  # their disposition cannot be set (nor changed)
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            time.sleep(1)
            code = 128 + sig
        elif report.startswith("exit:"):
            code = int(report[5:])
        elif os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
        else:
            code = 128 + os.WTERMSIG(status)
    except BaseException as e:  # noqa: BLE001
        try:
            os.write(2, ("kgym sandbox setup failed: %r\n" % (e,)).encode())
        except OSError:
            pass
        code = 71
    os._exit(code)


def _run_init(msg, chan_fd, policy, protections, report_fd):
    """In G, PID 1 of the new namespace. Sets up the filesystem, forks the harness, reaps everything."""
    from . import sandbox
    code = "exit:71"
    try:
        sandbox.set_parent_death_signal()
        if os.getppid() == 1:
            os._exit(71)
        sandbox.setup_filesystem(policy, protections)
        h = os.fork()
        if h == 0:
            os.close(report_fd)
            _run_harness(msg, chan_fd, policy, protections, init=True)
        os.close(chan_fd)
        while True:
            pid, status = os.wait()
            if pid == h:
                if os.WIFSIGNALED(status):
                    code = "sig:%d" % os.WTERMSIG(status)
                else:
                    code = "exit:%d" % os.WEXITSTATUS(status)
                break
    except BaseException:  # noqa: BLE001
        pass
    try:
        os.write(report_fd, code.encode())
    except OSError:
        pass
    os._exit(0)  # PID 1 exits: the kernel kills whatever the candidate left running


def _run_harness(msg, chan_fd, policy, protections, init):
    from . import sandbox, worker
    code = 0
    try:
        if init:
            sandbox.set_parent_death_signal()
        if policy.get("enabled", True):
            sandbox.drop_privileges(policy, protections)
        else:  # unsealed: still never write the code files into the caller's directory
            scratch = policy.get("scratch") or "/tmp/kgym-unsealed-%d" % os.getpid()
            os.makedirs(scratch, exist_ok=True)
            os.chdir(scratch)
            if policy.get("extension_cache"):
                os.environ["TORCH_EXTENSIONS_DIR"] = policy["extension_cache"]
        for k, v in policy.get("env_before_cuda", {}).items():
            os.environ[k] = v
        sock = socket.socket(fileno=chan_fd)
        code = worker.serve(sock, msg.get("role", "candidate"), protections)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException as e:  # noqa: BLE001
        try:
            os.write(2, ("kgym harness failed: %r\n" % (e,)).encode())
        except OSError:
            pass
        code = 72
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    os._exit(code)


def _recv(ctl):
    fds = array.array("i")
    msg, anc, _flags, _addr = ctl.recvmsg(1 << 16, socket.CMSG_SPACE(8 * fds.itemsize))
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return msg, list(fds)


def main():
    ctl = socket.socket(fileno=3)
    mods, secs = _preload()
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    ctl.send(json.dumps({"type": "hello", "pid": os.getpid(), "modules": mods, "import_s": secs,
                         "python": sys.version.split()[0]}).encode())
    jobs = {}
    while True:
        ready, _, _ = select.select([ctl, rfd], [], [])
        if rfd in ready:
            try:
                os.read(rfd, 4096)
            except BlockingIOError:
                pass
        while jobs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            job = jobs.pop(pid, None)
            rep = {"type": "exit", "job": job, "pid": pid}
            if os.WIFSIGNALED(status):
                rep["signal"] = os.WTERMSIG(status)
            else:
                rep["code"] = os.WEXITSTATUS(status)
            ctl.send(json.dumps(rep).encode())
        if ctl in ready:
            raw, fds = _recv(ctl)
            if not raw:
                return 0
            msg = json.loads(raw)
            if msg.get("type") == "quit":
                return 0
            if msg.get("type") != "fork" or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                ctl.send(json.dumps({"type": "error", "job": msg.get("job"), "message": "bad fork request"}).encode())
                continue
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(rfd)
                os.close(wfd)
                _run_child(msg, fds[0], fds[1], ctl)
            for fd in fds:
                os.close(fd)
            jobs[pid] = msg.get("job")
            ctl.send(json.dumps({"type": "forked", "job": msg.get("job"), "pid": pid}).encode())


if __name__ == "__main__":
    sys.exit(main())
