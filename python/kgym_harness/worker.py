"""One worker process: the reference role (pristine, never sees candidate code) or the candidate role.

The supervisor drives everything over the worker's private channel (src/sandbox/channel.h frames it; the messages,
in the order of a session, are in src/sandbox/protocol.h and their names in protocol.py). This package only loads
code, builds models, runs calls and reports raw facts: tensor bytes, host timestamps, exceptions, and evidence about
the process (threads, processes, backend flags, aliasing). The verdict is made in C++ from those facts.

A session: hello; job; then the phases, each in its own module:
  load.py         the job's code imported, its class found, its Triton kernels hooked, the model built
  correctness.py  reference: init, trial_result per trial, pool_set per timing set, ready
                  candidate: ready, then trial -> trial_result (with evidence) and pool_set -> ok
  timing.py       timing -> ok, then call/null/burst (armed, go, done), fetch -> outputs, detect -> detected,
                  timeline -> timeline
and finish -> bye. An error (runner.Reported) ends the session with an error message.
"""
import os
import sys

import torch

from . import channel, recorder
from .correctness import serve_candidate, serve_reference
from .load import load
from .protocol import Field, Kind, Note, Role
from .runner import Reported, Runner, _send_error, init_cuda, send_note, warm_libraries
from .timing import timing_loop


def _prepare_process(role):
    """Everything the harness itself starts, before the hello: the supervisor counts the threads alive at the hello as
    the harness's own (src/eval/process_watch.h)."""
    if os.environ.get("KGYM_CUPTI_LIB"):
        recorder.start_from_env()  # before CUDA initialises, so the context is recorded from its first kernel
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        # The context is made before the hello, so a worker started ahead of need (a spare) is ready for work.
        try:
            init_cuda()
            warm_libraries()
        except Exception:  # noqa: BLE001 - the job's own load reports a broken device
            pass
    torch.ones(1 << 16).sum().item()  # the CPU thread pool


def _serve_job(sock, role, protections):
    job, payload = channel.recv(sock)
    r = Runner(role, protections)
    try:
        load(r, job)
    finally:
        if role == Role.CANDIDATE and r.load_s is not None:
            send_note(sock, Note.LOAD_S, r.load_s)
    if role == Role.REFERENCE:
        serve_reference(sock, r, job)
        channel.send(sock, {Field.TYPE: Kind.READY})
        h, _ = channel.recv(sock)
        timing = h if h[Field.TYPE] == Kind.TIMING else None
    else:
        timing = serve_candidate(sock, r, job, payload)
    if timing is not None:
        timing_loop(sock, r, timing)


def serve(sock, role, protections):
    """Entry point in the sandboxed process. Returns the exit code."""
    sys.dont_write_bytecode = True
    if role in (Role.REFERENCE, Role.CANDIDATE):
        _prepare_process(role)
    channel.send(sock, {Field.TYPE: Kind.HELLO, Field.ROLE: role, Field.PID: os.getpid(),
                        Field.PROTECTIONS: protections, Field.RECORDER: recorder.RECORDER.error or "on"})
    if role == Role.PROBE:
        return 0
    try:
        _serve_job(sock, role, protections)
        channel.send(sock, {Field.TYPE: Kind.BYE})
        return 0
    except Reported as rep:
        _send_error(sock, rep)
        return 0
    except channel.ChannelClosed:
        return 0
