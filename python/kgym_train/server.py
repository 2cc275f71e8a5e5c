"""The learner's HTTP server (protocol.py): an OpenAI-compatible endpoint that samples from the live weights, and
the endpoints kgym's trainer drives the learner with.

Generation (one learner process): requests go straight into the rollout engine (rollout.py), which batches them
continuously: a request joins the running batch at the next chunk boundary and leaves it when it ends, whatever
the others do. Each chat request's k-th sample is its own sequence with seed `seed*1000003 + k` (when `seed` is
given), `stop` strings are honoured, and the n samples of one prompt share its prefill. Several processes
(torchrun): a generation thread gathers requests for up to `batch_wait_s` (or `max_batch`) and relays them to
every rank as one batch (Learner.generate), grouped by sampling parameters; stop strings are refused there.
Every GPU operation (an engine chunk, a generation batch, log-probs, a train step, a save, a weight load) holds
the learner's lock, so they never interleave. Prompts longer than the context are refused with HTTP 400.
"""
import json
import queue
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import protocol as P
from .metrics import MetricsLog
from .rollout import Request, sample_seed


class BadRequest(Exception):
    pass


def _field(body, name, kind, default=None):
    v = body.get(name, default)
    if v is None:
        return default
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise BadRequest(f"'{name}' must be {names}")
    return v


class _Pending:
    def __init__(self, prompt, params):
        self.prompt = prompt
        self.params = params
        self.done = threading.Event()
        self.result = None
        self.error = None


class GenerationBatcher:
    def __init__(self, learner, max_batch=256, batch_wait_s=0.05):
        self.learner = learner
        self.max_batch = max_batch
        self.wait = batch_wait_s
        self.q = queue.Queue()
        self.stats = {"batches": 0, "sequences": 0, "tokens": 0, "seconds": 0.0}
        threading.Thread(target=self._loop, daemon=True, name="kgym-generate").start()

    def submit(self, prompt, params):
        p = _Pending(prompt, params)
        self.q.put(p)
        p.done.wait()
        if p.error is not None:
            raise p.error
        return p.result

    def _loop(self):
        while True:
            batch = [self.q.get()]
            deadline = time.time() + self.wait
            while len(batch) < self.max_batch:
                try:
                    batch.append(self.q.get(timeout=max(0.0, deadline - time.time())))
                except queue.Empty:
                    break
            groups = {}
            for p in batch:
                key = (p.params["temperature"], p.params["top_p"], p.params["top_k"])
                groups.setdefault(key, []).append(p)
            for (temperature, top_p, top_k), group in groups.items():
                self._run(group, temperature, top_p, top_k)

    def _run(self, group, temperature, top_p, top_k):
        try:
            seeds = [p.params["seed"] for p in group if p.params["seed"] is not None]
            t0 = time.time()
            with self.learner.lock:
                outs = self.learner.generate([p.prompt for p in group], max(p.params["max_tokens"] for p in group),
                                             temperature, top_p, top_k, min(seeds) if seeds else None)
                version = self.learner.version
            dt = time.time() - t0
            self.stats["batches"] += 1
            self.stats["sequences"] += len(group)
            self.stats["seconds"] += dt
            for p, (ids, lps, reason) in zip(group, outs):
                limit = p.params["max_tokens"]
                if len(ids) > limit:
                    ids, lps, reason = ids[:limit], lps[:limit], "length"
                self.stats["tokens"] += len(ids)
                p.result = (ids, lps, reason, version, None)
        except Exception as e:  # every waiter learns of the failure
            for p in group:
                p.error = e
        finally:
            for p in group:
                p.done.set()


class EngineLoop:
    """Serves requests from the learner's rollout engine on one thread (continuous batching, see the module)."""

    def __init__(self, learner):
        self.learner = learner
        self.engine = learner.rollout_engine()
        self.wake = threading.Condition()
        self.stats = {"batches": 0, "sequences": 0, "tokens": 0, "seconds": 0.0}
        threading.Thread(target=self._loop, daemon=True, name="kgym-engine").start()

    def submit_many(self, prompt, params, n):
        seed = params["seed"]
        reqs = [Request(prompt, params["max_tokens"], params["temperature"], params["top_p"], params["top_k"],
                        sample_seed(seed, k), params.get("stop")) for k in range(n)]
        with self.wake:
            self.engine.submit(reqs)
            self.wake.notify()
        for r in reqs:
            r.done.wait()
            if r.error is not None:
                raise r.error
        return [(r.tokens, r.logprobs, r.finish_reason, r.version, r.text_end) for r in reqs]

    def _loop(self):
        while True:
            with self.wake:
                while not self.engine.busy():
                    self.wake.wait()
            t0 = time.time()
            try:
                with self.learner.lock:
                    finished = self.engine.step()
                    version = self.learner.version
            except Exception as e:  # every waiting and running request learns of it; the engine starts empty
                traceback.print_exc()
                self.engine.fail_all(e)
                continue
            self.stats["batches"] += 1
            self.stats["seconds"] += time.time() - t0
            self.stats["sequences"] += len(finished)
            self.stats["tokens"] += sum(len(r.tokens) for r in finished)
            for r in finished:
                r.version = version
                r.done.set()


class _Listener(ThreadingHTTPServer):
    """A listen backlog for a trainer's whole batch: socketserver's default of 5 pending connections reset the
    connections of a step's 256 simultaneous chat requests, which the trainer's client then retried after a
    back-off (the learner sat idle meanwhile)."""
    request_queue_size = 1024


class LearnerServer:
    def __init__(self, learner, model_name, host="127.0.0.1", port=0, out_dir=None, max_batch=256,
                 batch_wait_s=0.05, purge_step=None):
        self.learner = learner
        self.model_name = model_name
        if learner.ranks.distributed or learner.cfg.get("rollout", {}).get("local_engine", "kgym") == "generate":
            self.batcher, self.engine_loop = GenerationBatcher(learner, max_batch, batch_wait_s), None
        else:
            self.batcher, self.engine_loop = None, EngineLoop(learner)
        self.metrics = MetricsLog(out_dir, jsonl=False, purge_step=purge_step) if out_dir else None
        self.counter = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._dispatch(self, "GET")

            def do_POST(self):
                server._dispatch(self, "POST")

        self.httpd = _Listener((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]

    def serve_forever(self):
        print(f"{P.READY_LINE} port={self.port}", flush=True)
        self.httpd.serve_forever()

    def close(self):
        """After serve_forever: the listening socket and the TensorBoard log (the process exits without finalizing)."""
        self.httpd.server_close()
        if self.metrics is not None:
            self.metrics.close()

    def _generator(self):
        return self.engine_loop if self.engine_loop is not None else self.batcher

    # ---- plumbing ---------------------------------------------------------------------------------------------------
    def _reply(self, h, status, obj):
        data = P.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _dispatch(self, h, method):
        routes = {("GET", P.PATH_HEALTH): self.health, ("GET", P.PATH_MODELS): self.models,
                  ("POST", P.PATH_CHAT): self.chat, ("POST", P.PATH_LOGPROBS): self.logprobs,
                  ("POST", P.PATH_TRAIN_STEP): self.train_step, ("POST", P.PATH_SAVE): self.save, ("POST", P.PATH_SAVE_WEIGHTS): self.save_weights,
                  ("POST", P.PATH_METRICS): self.log_metrics, ("POST", P.PATH_UPDATE_WEIGHTS): self.update_weights,
                  ("POST", P.PATH_SHUTDOWN): self.shutdown}
        fn = routes.get((method, h.path.split("?")[0]))
        if fn is None:
            return self._reply(h, 404, {"error": {"message": f"no route {method} {h.path}", "type": "not_found"}})
        try:
            body = {}
            if method == "POST":
                n = int(h.headers.get("Content-Length") or 0)
                body = json.loads(h.rfile.read(n) or b"{}")
                if not isinstance(body, dict):
                    raise BadRequest("the request body must be a JSON object")
            self._reply(h, 200, fn(body))
            if fn == self.shutdown:  # only once the reply has left: the process exits when serve_forever returns
                h.wfile.flush()
                threading.Thread(target=self.httpd.shutdown, daemon=True).start()
        except (BadRequest, ValueError, KeyError, TypeError) as e:
            self._reply(h, 400, {"error": {"message": f"{type(e).__name__}: {e}", "type": "invalid_request_error"}})
        except Exception as e:
            traceback.print_exc()
            self._reply(h, 500, {"error": {"message": f"{type(e).__name__}: {e}", "type": "server_error"}})

    # ---- endpoints -------------------------------------------------------------------------------------------------
    def health(self, _):
        return {"status": "ok", P.FIELD_POLICY_VERSION: self.learner.version, "model": self.model_name,
                "device": str(self.learner.device), "generation": dict(self._generator().stats),
                "ranks": self.learner.ranks.world, "sharding": self.learner.ranks.sharding}

    def models(self, _):
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "kgym"}]}

    def chat(self, body):
        messages = body.get("messages")
        stop = _field(body, "stop", (list, str), None)
        stop = [stop] if isinstance(stop, str) else stop
        if stop and (not all(isinstance(x, str) for x in stop) or len(stop) > 16):
            raise BadRequest("'stop' must be a string or a list of at most 16 strings")
        if stop and self.engine_loop is None:
            raise BadRequest("'stop' strings need the rollout engine (one learner process, rollout.local_engine kgym)")
        n = _field(body, "n", int, 1)
        if n < 1 or n > 64:
            raise BadRequest("'n' must be in 1..64")
        prompt = self.learner.renderer.prompt_ids(messages)
        context = self.engine_loop.engine.max_len if self.engine_loop else self.learner.max_context()
        room = context - len(prompt)
        if room <= 0:
            raise BadRequest(f"the prompt has {len(prompt)} tokens, the context holds {context}")
        max_tokens = _field(body, "max_tokens", int, None) or _field(body, "max_completion_tokens", int, room)
        if max_tokens < 1:
            raise BadRequest("'max_tokens' must be >= 1")
        params = {"temperature": _field(body, "temperature", float, 1.0), "top_p": _field(body, "top_p", float, 1.0),
                  "top_k": _field(body, "top_k", int, -1), "seed": _field(body, "seed", int, None),
                  "max_tokens": min(max_tokens, room), "stop": stop}
        if self.engine_loop is not None:
            results = self.engine_loop.submit_many(prompt, params, n)
        else:
            results = [None] * n
            threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, self.batcher.submit(prompt, params)))
                       for k in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if any(r is None for r in results):
                raise RuntimeError("generation failed")
        want_ids = bool(body.get(P.FIELD_RETURN_TOKEN_IDS))
        want_lp = bool(body.get("logprobs"))
        choices, completion, version = [], 0, 0
        for k, (ids, lps, reason, version, text_end) in enumerate(results):
            text = self.learner.tokenizer.decode([t for t in ids if t not in self.learner.stop_ids])
            choice = {"index": k, "finish_reason": reason,
                      "message": {"role": "assistant", "content": text if text_end is None else text[:text_end]}}
            if want_lp:
                choice["logprobs"] = {"content": [self._logprob_entry(t, lp) for t, lp in zip(ids, lps)]}
            if want_ids:
                choice[P.FIELD_TOKEN_IDS] = ids
            choices.append(choice)
            completion += len(ids)
        self.counter += 1
        reply = {"id": f"chatcmpl-kgym-{self.counter}", "object": "chat.completion", "created": int(time.time()),
                 "model": self.model_name, "choices": choices, P.FIELD_POLICY_VERSION: version,
                 "usage": {"prompt_tokens": len(prompt), "completion_tokens": completion,
                           "total_tokens": len(prompt) + completion}}
        if want_ids:
            reply[P.FIELD_PROMPT_TOKEN_IDS] = prompt
        return reply

    def _logprob_entry(self, tid, lp):
        text = self.learner.tokenizer.decode([tid], skip_special_tokens=False)
        return {"token": text, "logprob": lp, "bytes": list(text.encode("utf-8")), "top_logprobs": []}

    def _rows(self, body, fields):
        rows = body.get(P.FIELD_ROWS)
        if not isinstance(rows, list):
            raise BadRequest(f"'{P.FIELD_ROWS}' must be a list")
        for i, r in enumerate(rows):
            if not isinstance(r, dict):
                raise BadRequest(f"rows[{i}] must be an object")
            for f in fields:
                if f not in r:
                    raise BadRequest(f"rows[{i}] has no '{f}'")
            if not r[P.FIELD_PROMPT_IDS] or not all(isinstance(t, int) for t in r[P.FIELD_PROMPT_IDS]):
                raise BadRequest(f"rows[{i}].{P.FIELD_PROMPT_IDS} must be a non-empty list of token ids")
            vocab = len(self.learner.tokenizer)
            if any(t < 0 or t >= vocab for t in r[P.FIELD_PROMPT_IDS] + r[P.FIELD_RESPONSE_IDS]):
                raise BadRequest(f"rows[{i}] holds a token id outside the vocabulary (0..{vocab - 1})")
        return rows

    def logprobs(self, body):
        rows = self._rows(body, P.LOGPROBS_ROW)
        t0 = time.time()
        with self.learner.lock:
            out, truncated = self.learner.logprobs(rows, bool(body.get(P.FIELD_WITH_ENTROPY)))
            version = self.learner.version
        return {P.FIELD_ROWS: out, P.FIELD_POLICY_VERSION: version, P.FIELD_TRUNCATED_ROWS: truncated,
                "seconds": time.time() - t0}

    def train_step(self, body):
        rows = self._rows(body, P.TRAIN_ROW)
        with self.learner.lock:
            metrics = self.learner.ppo_step(rows)
            version = self.learner.version
        return {P.FIELD_METRICS: metrics, P.FIELD_POLICY_VERSION: version}

    def save(self, body):
        path = _field(body, P.FIELD_DIR, str)
        if not path:
            raise BadRequest(f"'{P.FIELD_DIR}' is required")
        with self.learner.lock:
            self.learner.save(path, {"step": int(body.get(P.FIELD_STEP, 0))})
        return {P.FIELD_DIR: path, P.FIELD_POLICY_VERSION: self.learner.version}

    def save_weights(self, body):
        path = _field(body, P.FIELD_DIR, str)
        if not path:
            raise BadRequest(f"'{P.FIELD_DIR}' is required")
        with self.learner.lock:
            self.learner.save_weights(path)
        return {P.FIELD_DIR: path, P.FIELD_POLICY_VERSION: self.learner.version}

    def log_metrics(self, body):
        if self.metrics is not None:
            self.metrics.scalars(int(body.get(P.FIELD_STEP, 0)), body.get(P.FIELD_METRICS) or {})
        return {}

    def update_weights(self, body):
        path = _field(body, P.FIELD_MODEL_PATH, str)
        if not path:
            raise BadRequest(f"'{P.FIELD_MODEL_PATH}' is required")
        try:
            with self.learner.lock:
                self.learner.load_weights(path)
        except (OSError, ValueError) as e:
            return {"success": False, "message": str(e), P.FIELD_POLICY_VERSION: self.learner.version}
        return {"success": True, "message": f"loaded {path}", P.FIELD_POLICY_VERSION: self.learner.version}

    def shutdown(self, _):
        return {}  # _dispatch stops the server after writing this reply
