"""The gym under RL load (issue 32), on one GPU through `kgym serve --slots-per-gpu 16`:

  neighbour   KernelBench L2 problem 12's reference renamed as the candidate (the victim), timed alone (6 evaluations
              one after another), then 6 victims beside 8 aggressors of another task whose __init__ keeps the GPU busy
              ~3 s with large bf16 matmuls (half synchronise as they go, half queue it all and return), then 6 victims
              beside an RL group of 16 candidates of the same task whose Triton epilogue autotunes 24 configurations
              in its first call. Each victim's median against the median of the victims alone, every verdict (no
              `hacked`), the contention evidence (frozen neighbours, drain probes, shared calls, attempts) and the
              phase's evaluations per GPU-hour. NOFREEZE=1 (--nofreeze) runs each concurrent phase a second time with
              `--no-freeze-neighbours` (today's behaviour) for the A/B.
  precision   Triton GEMMs for problem 12 whose tl.dot runs in TF32 (the default for fp32 inputs) or bf16, and an
              IEEE-fp32 one, under strict (the default) and compat: outcome, precision class, error ratio.

On a CPU (--device cpu, the rehearsal) the same runs go through `--gpus none --cpu-slots 16` with a small
problem-12-shaped reference (the GEMM's sizes cut), CPU-burning aggressors and torch stand-ins for the Triton
kernels (TF32 as truncated operands, bf16 as rounded ones).

Prints one table per part and writes every result (metadata included) to --out.
"""
import argparse
import concurrent.futures as cf
import datetime
import glob
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

# A problem-12-shaped reference for the CPU rehearsal (and where no KernelBench checkout is given): a GEMM with bias,
# a multiplier and LeakyReLU, rand inputs. Project code; KernelBench's own file is read from --kb when given.
SMALL_REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        return self.leaky_relu(self.gemm(x) * self.multiplier)


def get_inputs():
    return [torch.rand(256, 512)]


def get_init_inputs():
    return [512, 384, 2.0, 0.1]
'''

AGGRESSOR_REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
'''

# __init__ keeps the device busy ~SECONDS (bf16 GEMMs on a GPU; the CPU burns on a CPU). QUEUE: launch it all and
# return without waiting (the work drains while the worker is frozen); else synchronise every few GEMMs.
AGGRESSOR = '''import time
import torch
import torch.nn as nn

SECONDS, QUEUE = {seconds}, {queue}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if torch.cuda.is_available():
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            t0 = time.time()
            torch.cuda.synchronize()
            n = 0
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(4):
                a @ a
            e1.record()
            e1.synchronize()
            per = max(e0.elapsed_time(e1) / 4e3, 1e-4)  # seconds per GEMM
            for _ in range(int(SECONDS / per)):
                a @ a
                n += 1
                if not QUEUE and n % 8 == 0:
                    torch.cuda.synchronize()
            self.keep = a
        else:
            t0 = time.process_time()
            while time.process_time() - t0 < SECONDS:
                pass

    def forward(self, x):
        return torch.relu(x)
'''

# The RL group: the reference renamed, its output passed through a Triton copy that autotunes 24 configurations in
# its first call (each candidate its own kernel name). On a CPU: torch.clone.
AUTOTUNE_EPILOGUE = '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({{"BLOCK": b}}, num_warps=w) for b in (256, 512, 1024, 2048, 4096, 8192)
                          for w in (1, 2, 4, 8)], key=["n"])
@triton.jit
def {name}(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _epilogue(t):
    src = t.contiguous()
    dst = torch.empty_like(src)
    n = src.numel()
    {name}[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](src, dst, n)
    return dst
'''
TORCH_EPILOGUE = '''

def _epilogue(t):
    return t.clone()
'''

# The candidates' class for problem 12: its constructor as the reference's (seeded construction gives the same weights).
GEMM_MODEL_HEAD = '''

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope
'''

# Problem 12 as one Triton GEMM with its epilogue (bias, multiplier, LeakyReLU) fused: tl.dot on fp32 tiles (TF32
# unless told "ieee"), on tiles cast to bf16, or in IEEE fp32.
TRITON_GEMM = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_{tag}(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, mult, slope, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(x_ptr + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + (k0 + rk)[:, None], mask=(rn[None, :] < N) & ((k0 + rk)[:, None] < K),
                    other=0.0)
        acc += {dot}
    y = (acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]) * mult
    y = tl.where(y >= 0, y, y * slope)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))
{head}
    def forward(self, x):
        x = x.contiguous()
        w = self.gemm.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        _gemm_{tag}[grid](x, w, self.gemm.bias, y, M, N, K, float(self.multiplier), float(self.negative_slope),
                          BM=128, BN=128, BK=32, num_warps=8, num_stages=3)
        return y
'''
DOTS = {"tf32": "tl.dot(a, b)", "bf16": "tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))",
        "ieee": 'tl.dot(a, b, input_precision="ieee")'}

# CPU stand-ins: the same numerics with torch (TF32: operands' 13 low mantissa bits cleared).
TORCH_GEMM = '''import torch
import torch.nn as nn


def _round(t):
    if "{tag}" == "tf32":
        return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).view(t.shape)
    if "{tag}" == "bf16":
        return t.bfloat16().float()
    return t
{head}
    def forward(self, x):
        y = (torch.matmul(_round(x), _round(self.gemm.weight).t()) + self.gemm.bias) * self.multiplier
        return torch.where(y >= 0, y, y * self.negative_slope)
'''


def renamed(ref):
    """The reference as the candidate: class Model renamed ModelNew (its own references to Model included)."""
    return re.sub(r"\bModel\b", "ModelNew", ref)


def group_candidate(ref, i, gpu):
    body = renamed(ref)
    epi = AUTOTUNE_EPILOGUE.format(name="_kgym_autotune_copy_%d" % i) if gpu else TORCH_EPILOGUE
    body = body.replace("import torch\n", "import torch\n" + epi, 1)
    return re.sub(r"(\n    def forward\(self, ([^)]*)\):)", r"\1\n        return _epilogue(self._forward(\2))\n\n"
                  r"    def _forward(self, \2):", body, count=1)


class Serve:
    def __init__(self, args, tmp, tag, *extra):
        self.log = open(os.path.join(tmp, "serve-%s.log" % tag), "w")
        gpus = ["--gpus", "none", "--cpu-slots", str(args.slots)] if args.device == "cpu" else \
            ["--gpus", args.gpu, "--slots-per-gpu", str(args.slots)]
        self.cmd = [args.bin, "serve", "--port", "0", "--store", os.path.join(tmp, "store-%s.sqlite" % tag), *gpus,
                    "--drain-timeout", "5", *extra]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     start_new_session=True)
        m = re.search(r"listening on (http://[\d.]+:\d+)", self.proc.stdout.readline())
        if not m:
            self.proc.kill()
            raise RuntimeError("kgym serve did not start (log %s)" % self.log.name)
        self.url = m.group(1)

    def submit(self, body):
        req = urllib.request.Request(self.url + "/v1/evaluations", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def result(self, task_id, wait_s):
        deadline = time.time() + wait_s
        while time.time() < deadline:
            try:
                with urllib.request.urlopen("%s/v1/evaluations/%s?wait=30" % (self.url, task_id), timeout=60) as r:
                    j = json.loads(r.read())
                if j.get("result"):
                    return j["result"]
            except (urllib.error.URLError, OSError):
                time.sleep(1)
        return {"outcome": "lost", "outcome_detail": "no result in %d s" % wait_s, "metadata": {}}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def body(args, task_id, ref, code, **extra):
    b = {"task_id": task_id, "reference_code": ref, "kernel_code": code, "backend": "triton",
         "num_correct_trials": 5, "num_perf_trials": 100, "timeout": 300}
    if args.size:
        b["size"] = args.size
    b.update(extra)
    return b


def run_batch(serve, bodies, wait_s):
    """Submits every body at once, returns (results by task id, wall seconds)."""
    t0 = time.time()
    for b in bodies:
        serve.submit(b)
    with cf.ThreadPoolExecutor(max(1, len(bodies))) as pool:
        res = dict(zip([b["task_id"] for b in bodies],
                       pool.map(lambda b: serve.result(b["task_id"], wait_s), bodies)))
    return res, time.time() - t0


def brief(r):
    md = r.get("metadata") or {}
    return {"outcome": r.get("outcome"), "detail": (r.get("outcome_detail") or "")[:200],
            "kernel_ms": r.get("kernel_runtime"), "reference_ms": r.get("reference_runtime"),
            "speedup": r.get("speedup"),
            **{k: md.get(k) for k in ("timing_calls", "timing_stopped", "timing_attempts", "timing_drained",
                                      "timing_drain_probes", "timing_shared_calls", "timing_contended", "frozen_s",
                                      "timing_source", "precision", "precision_flags_evidence", "evaluation_s")},
            "neighbours_frozen": (md.get("timing_lock") or {}).get("neighbours_frozen"),
            "freeze_s": (md.get("timing_lock") or {}).get("freeze_s")}


def part_neighbour(args, ref, tmp, out):
    gpu = args.device != "cpu"
    victim = renamed(ref)
    rows = {}
    modes = [("freeze", [])] + ([("nofreeze", ["--no-freeze-neighbours"])] if args.nofreeze else [])
    for mode, flags in modes:
        serve = Serve(args, tmp, "neighbour-" + mode, *flags)
        try:
            alone = []
            for i in range(6):
                b = body(args, "alone-%s-%d" % (mode, i), ref, victim)
                res, _ = run_batch(serve, [b], 600)
                alone.append(res[b["task_id"]])
            base = statistics.median([r["kernel_runtime"] for r in alone if r.get("outcome") == "correct"] or [-1])
            rows[mode + "/alone"] = {"results": [brief(r) for r in alone], "base_ms": base}
            seconds = 3.0
            aggr = [body(args, "aggr-%s-%d" % (mode, i), AGGRESSOR_REF,
                         AGGRESSOR.format(seconds=seconds, queue=(i % 2 == 1)), timeout=120) for i in range(8)]
            group = [body(args, "group-%s-%d" % (mode, i), ref, group_candidate(ref, i, gpu)) for i in range(16)]
            for phase, others in (("aggressor", aggr), ("rl_group", group)):
                victims = [body(args, "victim-%s-%s-%d" % (phase, mode, i), ref, victim) for i in range(6)]
                mix = []
                for i in range(max(len(victims), len(others))):  # interleaved: victims among the others
                    mix += others[i:i + 1] + victims[i:i + 1]
                res, wall = run_batch(serve, mix, 900)
                vt = [res[b["task_id"]] for b in victims]
                meds = [r.get("kernel_runtime") for r in vt]
                rows["%s/%s" % (mode, phase)] = {
                    "wall_s": wall, "evaluations": len(mix), "evals_per_gpu_hour": len(mix) * 3600 / wall,
                    "victim_ms": meds,
                    "victim_rel": [m / base - 1 if m and m > 0 and base > 0 else None for m in meds],
                    "verdicts": {o: sum(1 for r in res.values() if r.get("outcome") == o)
                                 for o in sorted({r.get("outcome") for r in res.values()})},
                    "hacked": [(t, r.get("outcome_detail")) for t, r in res.items() if r.get("outcome") == "hacked"],
                    "victims": [brief(r) for r in vt],
                    "others": [brief(res[b["task_id"]]) for b in others]}
        finally:
            serve.stop()
    out["neighbour"] = rows
    print("\n## Neighbours (victim: the reference renamed; alone = 6 evaluations one at a time)\n")
    print("| run | victims' median ms | max abs diff vs alone | hacked | verdicts | evals / GPU-hour |")
    print("|---|---|---|---|---|---|")
    for k, v in rows.items():
        if k.endswith("/alone"):
            ms = [r["kernel_ms"] for r in v["results"]]
            print("| %s | %s | (base %.4f) | %d | %s | |" % (k, fmt(ms), v["base_ms"],
                                                           sum(r["outcome"] == "hacked" for r in v["results"]),
                                                           count(v["results"])))
            continue
        rel = [abs(x) for x in v["victim_rel"] if x is not None]
        print("| %s | %s | %s | %d | %s | %.0f |" % (k, fmt(v["victim_ms"]), "%.2f %%" % (100 * max(rel)) if rel
                                                    else "-", len(v["hacked"]), v["verdicts"], v["evals_per_gpu_hour"]))


def part_precision(args, ref, tmp, out):
    gpu = args.device != "cpu"
    rows = []
    serve = Serve(args, tmp, "precision")
    try:
        bodies = []
        for tag in ("ieee", "tf32", "bf16"):
            code = (TRITON_GEMM.replace("{dot}", DOTS[tag]) if gpu else TORCH_GEMM).replace("{tag}", tag)
            code = code.replace("{head}", GEMM_MODEL_HEAD)
            for policy in ("strict", "compat"):
                bodies.append(body(args, "prec-%s-%s" % (tag, policy), ref, code, precision=policy))
        res, _ = run_batch(serve, bodies, 900)
        for b in bodies:
            r = res[b["task_id"]]
            rows.append({"candidate": b["task_id"], **brief(r)})
    finally:
        serve.stop()
    out["precision"] = rows
    print("\n## Precision (problem 12 as one GEMM; strict is the default)\n")
    print("| candidate | outcome | class | error ratio | candidate rel L2 | reference rel L2 | speedup |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        p = r.get("precision") or {}
        print("| %s | %s | %s | %s | %s | %s | %s |" % (r["candidate"], r["outcome"], p.get("class"),
                                                      num(p.get("error_ratio")), num(p.get("candidate_rel_l2")),
                                                      num(p.get("reference_rel_l2")), num(r.get("speedup"))))


def part_renamed(args, ref, tmp, out):
    """Every problem of --levels renamed as its own candidate, correctness only, under strict: 0 false rejects."""
    problems = []
    for level in args.levels.split(","):
        for path in sorted(glob.glob(os.path.join(args.kb, "KernelBench", "level%s" % level, "*.py"))):
            m = re.match(r"(\d+)_.+\.py$", os.path.basename(path))
            if m:
                problems.append(("L%s/%s" % (level, os.path.basename(path)[:-3]), open(path).read()))
    serve = Serve(args, tmp, "renamed")
    try:
        bodies = [body(args, "renamed-%d" % i, code, renamed(code), run_performance=False, timeout=600)
                  for i, (_, code) in enumerate(problems)]
        res, wall = run_batch(serve, bodies, 3600)
    finally:
        serve.stop()
    rows = []
    for (name, _), b in zip(problems, bodies):
        r = res[b["task_id"]]
        p = (r.get("metadata") or {}).get("precision") or {}
        rows.append({"problem": name, "outcome": r.get("outcome"), "detail": (r.get("outcome_detail") or "")[:300],
                     "class": p.get("class"), "error_ratio": p.get("error_ratio"),
                     "candidate_rel_l2": p.get("candidate_rel_l2"), "reference_rel_l2": p.get("reference_rel_l2"),
                     "operand_sensitive": p.get("operand_sensitive"),
                     "oracle_error": (r.get("metadata") or {}).get("oracle_error")})
    out["renamed"] = {"wall_s": wall, "rows": rows}
    print("\n## References renamed as candidates, strict (levels %s)\n" % args.levels)
    print("%d problems: %s; not correct:" % (len(rows), count(rows)))
    for r in rows:
        if r["outcome"] != "correct":
            print("- %s: %s (%s) class %s ratio %s" % (r["problem"], r["outcome"], r["detail"], r["class"],
                                                      num(r["error_ratio"])))
    worst = sorted((r for r in rows if isinstance(r["error_ratio"], (int, float))), key=lambda r: -r["error_ratio"])
    print("largest error ratios: " + ", ".join("%s %.3g" % (r["problem"], r["error_ratio"]) for r in worst[:5]))


def fmt(xs):
    return " ".join("%.4g" % x if isinstance(x, (int, float)) else "-" for x in xs)


def num(x):
    return "%.3g" % x if isinstance(x, (int, float)) else "-"


def count(rs):
    c = {}
    for r in rs:
        c[r["outcome"]] = c.get(r["outcome"], 0) + 1
    return c


def problem12(args):
    if args.kb:  # a checkout: <kb>/KernelBench/level2/12_<Name>.py
        hits = glob.glob(os.path.join(args.kb, "KernelBench", "level2", "12_*.py"))
        if hits:
            return open(hits[0]).read()
        print("no problem 12 under %s: the problem-12-shaped reference instead" % args.kb, file=sys.stderr)
    return SMALL_REF


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kb", default="", help="a KernelBench checkout (its level2/12_*.py); else the small stand-in")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--gpu", default="0")
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--parts", default="neighbour,precision")
    ap.add_argument("--nofreeze", action="store_true", help="also run the concurrent phases without freezing")
    ap.add_argument("--levels", default="1,2", help="the renamed part's KernelBench levels")
    ap.add_argument("--size", default="", help="the task size hint of every request (kgym's own tasks: small)")
    ap.add_argument("--tmp", default="", help="stores and logs (default: a fresh folder; a reused store would answer "
                    "the task ids of an earlier run from its records)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    args.tmp = args.tmp or tempfile.mkdtemp(prefix="kgym-under-load-")
    os.makedirs(args.tmp, exist_ok=True)
    ref = problem12(args)
    out = {"command": " ".join(sys.argv), "commit": os.environ.get("KGYM_BENCH_COMMIT", ""),
           "machine": platform.node(), "date": datetime.datetime.utcnow().isoformat() + "Z", "device": args.device}
    try:
        for part in args.parts.split(","):
            {"neighbour": part_neighbour, "precision": part_precision, "renamed": part_renamed}[part](
                args, ref, args.tmp, out)
            with open(args.out, "w") as f:
                json.dump(out, f, indent=1)
    finally:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
