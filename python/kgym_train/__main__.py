"""python -m kgym_train: the learner's entry points (kgym sft / kgym train start them; see README "Training").

Under torchrun (WORLD_SIZE > 1) serve and sft run on every rank: see distributed.py.

  serve     --config RESOLVED.json [--model DIR] [--resume CKPT] [--train] [--host H] [--port P] [--name NAME]
            the learner's HTTP server (server.py); prints "KGYM_LEARNER_READY port=N" once it listens
  sft       --config RESOLVED.json          the SFT cold start (sft.py)
  tokenizer --corpus PATH... --vocab-size N --out DIR    trains a byte-level BPE on text files (tokenizer.py)

On bad input or configuration (errors.UserError) the message goes, on one line and without a traceback, to the file
named by --error-file (given before the command; kgym passes it and says the message itself) or else to stderr, and
the process exits with protocol.EXIT_USER_ERROR.
"""
import argparse
import json
import os
import sys

from . import protocol
from .errors import UserError


def _config(path):
    with open(path) as f:
        return json.load(f)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kgym_train")
    ap.add_argument(protocol.ARG_ERROR_FILE, dest="error_file", default=None,
                    help="where a message about bad input or configuration goes (kgym reads it)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--config", required=True)
    s.add_argument("--model", default=None, help="checkpoint folder to serve (default: the config's model)")
    s.add_argument("--resume", default=None, help="a training checkpoint: weights, optimizer and RNG")
    s.add_argument("--train", action="store_true", help="accept train steps (builds the optimizer)")
    s.add_argument("--host", default=None)
    s.add_argument("--port", type=int, default=None)
    s.add_argument("--name", default="kgym-policy")
    s.add_argument("--out-dir", default=None, help="TensorBoard log folder for /kgym/metrics")
    s.add_argument("--max-batch", type=int, default=256)
    s.add_argument("--batch-wait", type=float, default=0.05)
    f = sub.add_parser("sft")
    f.add_argument("--config", required=True)
    t = sub.add_parser("tokenizer")
    t.add_argument("--corpus", nargs="+", required=True)
    t.add_argument("--vocab-size", type=int, default=4096)
    t.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        return _run(a)
    except UserError as e:
        msg = str(e)
        if a.error_file:  # kgym reads it and says it once, in its own words
            with open(a.error_file, "w", encoding="utf-8") as f:
                f.write(msg + "\n")
        else:
            print(f"kgym_train: {msg}", file=sys.stderr, flush=True)
        return protocol.EXIT_USER_ERROR


def _run(a):
    from .distributed import set_nvls_env
    set_nvls_env()  # before torch starts NCCL, and inherited by every process the learner starts

    if a.cmd == "tokenizer":
        from .tokenizer import train_tokenizer
        tok = train_tokenizer(a.corpus, a.vocab_size, a.out)
        print(f"tokenizer: {len(tok)} ids -> {a.out}")
        return 0
    cfg = _config(a.config)
    if a.cmd == "sft":
        from .sft import run_sft
        run_sft(cfg)
        return 0
    from .learner import Learner
    from .server import LearnerServer
    model = os.path.join(a.resume, "model") if a.resume else a.model
    train = a.train or bool(a.resume)
    learner = Learner(cfg, model_path=model, train=train)
    response = int(cfg.get("rollout", {}).get("response_length") or 0)
    if train and response:  # a turn's reply after a prompt of one token at least (longer prompts are left-truncated)
        learner.check_context("rollout.response_length", response, response + 1, room=1)
    if train:
        learner.ensure_optimizer()
    purge_step = None  # resumed: the TensorBoard events of the steps done again are dropped, not shown twice
    if a.resume:
        purge_step = int(learner.resume(a.resume).get("step", 0)) + 1
    learner.leading = True
    if not learner.ranks.is_main:  # under torchrun: rank 0 serves and relays, the others follow
        learner.follow()
        learner.ranks.close()
        return 0
    lcfg = cfg.get("learner", {})
    server = LearnerServer(learner, a.name, a.host or lcfg.get("host", "127.0.0.1"),
                           a.port if a.port is not None else int(lcfg.get("port", 0)), a.out_dir, a.max_batch,
                           a.batch_wait, purge_step)
    print(f"kgym_train serve: {learner.policy.arch} with {learner.policy.num_parameters()} parameters on "
          f"{learner.device}, policy version {learner.version}, {learner.ranks.world} rank(s) "
          f"({learner.ranks.sharding})", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        with learner.lock:  # a generation batch may still be relaying
            learner.finish()
        server.close()
    return 0


if __name__ == "__main__":
    from .distributed import exit_process
    exit_process(main())  # not sys.exit: see exit_process
