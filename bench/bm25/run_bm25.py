#!/usr/bin/env python3
"""bench/bm25: BM25 top-20 over a generated library of 100 000 skills, kgym's inverted index (bm25_bench, C++)
against Python's rank_bm25 BM25Okapi on the same corpus and the same queries, with the results checked to be
identical (same names in the same order, bit-equal scores) before any number is reported.

Two query sets:
  keywords  short queries (3-30 tokens drawn from the corpus's own word distribution)
  prompts   daVinci's real query: the full first-turn prompt of each built-in task (`kgym agent --print-prompt`,
            ~550-670 tokens: instruction, one-shot example, reference code)

The corpus is synthetic but shaped like skills: a Zipf-distributed vocabulary whose head is English and
Triton/PyTorch words (so prompts share their common tokens with it), records with a name, a description,
3-6 tags and a ## Motivation / ## Key Idea / ## Example body of 120-360 tokens.

Usage (from the repository root, after building bm25_bench and kgym):
  /usr/bin/python3 bench/bm25/run_bm25.py [--docs 100000] [--reps 7] [--out bench/results/bm25-vm.json]
rank_bm25 (PyPI) is needed for the comparison; without it (or with --no-python) only kgym is timed.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import statistics
import string
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HEAD_WORDS = """the a of to and in for is with that this on be as by it use each when from are or not an can
we at one so into all which only than more per its then if but also must once before after over both until
load store tile block warp thread grid kernel triton tl program id offsets mask other pointer stride
shared memory global register coalesced vectorize cache l2 bandwidth latency occupancy launch autotune config
num warps stages pipeline persistent split reduce reduction sum max min mean softmax online rescale exp log
matmul dot accumulate fp32 fp16 bf16 tf32 precision overflow underflow numerically stable epsilon variance
layernorm rmsnorm gelu relu silu sigmoid tanh elementwise broadcast fuse fusion fused epilogue bias residual
conv2d im2col implicit gemm transpose contiguous layout row major column padding power two next pow2 constexpr
atomic add race sync barrier bank conflict swizzle group m super grouping k loop unroll prefetch double buffer
torch nn module forward self x y return import def class model new modelnew inputs init tensor cuda device
float32 shape size dim batch features hidden output input weight functional randn get parameters super
python example code key idea motivation step first second result faster slower speedup time runtime""".split()


def zipf_vocab(rng, size):
    tail = [f"w{i}" for i in range(size - len(HEAD_WORDS))]
    rng.shuffle(tail)
    vocab = HEAD_WORDS + tail
    cum, c = [], 0.0
    for r in range(len(vocab)):
        c += 1.0 / (r + 1) ** 1.05
        cum.append(c)
    return vocab, cum


def make_corpus(n, seed, vocab_size):
    rng = random.Random(seed)
    vocab, cum = zipf_vocab(rng, vocab_size)

    def words(k):
        return rng.choices(vocab, cum_weights=cum, k=k)

    recs = []
    for i in range(n):
        name = "_".join(words(3)) + f"_{i}"
        body = ("## Motivation\n" + " ".join(words(rng.randint(30, 80))) +
                "\n\n## Key Idea\n" + " ".join(words(rng.randint(50, 160))) +
                "\n\n## Example\n```python\n" + " ".join(words(rng.randint(40, 120))) + "\n```\n")
        recs.append({"name": name, "description": " ".join(words(rng.randint(10, 20))),
                     "scope": "general", "tags": words(rng.randint(3, 6)), "content": body})
    return recs, (vocab, cum)


def keyword_queries(n, seed, vocab_cum):
    rng = random.Random(seed + 1)
    vocab, cum = vocab_cum
    return [" ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(3, 30))) for _ in range(n)]


def prompt_queries(kgym):
    out = subprocess.run([kgym, "agent", "--print-prompt", "--tasks", os.path.join(ROOT, "tasks")],
                         check=True, capture_output=True, text=True).stdout
    return [p for p in out.split("\n\x1e\n") if p.strip()]


def tokenize(text):  # daVinci's tokenizer
    text = re.sub(r"[_\-/]", " ", text.lower())
    return text.translate(str.maketrans("", "", string.punctuation)).split()


def indexed_text(r):
    return " ".join([r["name"], r["description"], " ".join(r["tags"]), r["content"]])


def python_search(bm25, np, names, query, top):
    scores = bm25.get_scores(tokenize(query))
    order = np.argsort(-scores, kind="stable")[:top]
    return [[names[d], float(scores[d])] for d in order if scores[d] > 0]


def stats(xs):
    xs = sorted(xs)
    return {"median_s": statistics.median(xs), "p90_s": xs[min(len(xs) - 1, int(0.9 * len(xs)))],
            "min_s": xs[0], "max_s": xs[-1], "n": len(xs)}


def load_average():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    return {"uname": " ".join(platform.uname()), "cpu_model": cpu, "cores": os.cpu_count(), "mem_mib": mem,
            "python": sys.version.split()[0]}


def git_commit():
    try:
        return subprocess.check_output(["git", "rev-parse", "HEAD"], text=True, cwd=ROOT).strip()
    except Exception:
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--vocab", type=int, default=50000)
    ap.add_argument("--keyword-queries", type=int, default=100)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions per query for kgym")
    ap.add_argument("--python-reps", type=int, default=1, help="timed repetitions per query for rank_bm25")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bench-bin", default=os.path.join(ROOT, "build", "bench", "bm25", "bm25_bench"))
    ap.add_argument("--kgym", default=os.path.join(ROOT, "build", "src", "cli", "kgym"))
    ap.add_argument("--no-python", action="store_true", help="time kgym only")
    ap.add_argument("--out", default="", help="write the raw results JSON here")
    args = ap.parse_args()

    load_before = load_average()
    t0 = time.perf_counter()
    recs, vocab_cum = make_corpus(args.docs, args.seed, args.vocab)
    gen_s = time.perf_counter() - t0
    sets = {"keywords": keyword_queries(args.keyword_queries, args.seed, vocab_cum),
            "prompts": prompt_queries(args.kgym)}
    names = [r["name"] for r in recs]
    n_tokens = 0

    with tempfile.TemporaryDirectory() as tmp:
        skills_path = os.path.join(tmp, "skills.jsonl")
        with open(skills_path, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        cpp = {}
        for set_name, qs in sets.items():
            qpath = os.path.join(tmp, set_name + ".json")
            with open(qpath, "w") as f:
                json.dump(qs, f)
            print(f"kgym: {set_name} ({len(qs)} queries)", file=sys.stderr, flush=True)
            out = subprocess.run([args.bench_bin, "--skills", skills_path, "--queries", qpath, "--top",
                                  str(args.top), "--reps", str(args.reps)], check=True, capture_output=True,
                                 text=True).stdout
            cpp[set_name] = json.loads(out)

    py = None
    if not args.no_python:
        try:
            import numpy as np
            from rank_bm25 import BM25Okapi
        except ImportError as e:
            print(f"rank_bm25 comparison skipped: {e}", file=sys.stderr)
        else:
            t0 = time.perf_counter()
            docs = [tokenize(indexed_text(r)) for r in recs]
            n_tokens = sum(len(d) for d in docs)
            bm25 = BM25Okapi(docs)
            py = {"build_s": time.perf_counter() - t0, "sets": {}}
            del docs
            print(f"rank_bm25: index built in {py['build_s']:.1f} s", file=sys.stderr, flush=True)
            for set_name, qs in sets.items():
                print(f"rank_bm25: {set_name} ({len(qs)} queries)", file=sys.stderr, flush=True)
                times, hits = [], []
                for q in qs:
                    ts = []
                    for _ in range(args.python_reps):
                        a = time.perf_counter()
                        h = python_search(bm25, np, names, q, args.top)
                        ts.append(time.perf_counter() - a)
                    times.append(statistics.median(ts))
                    hits.append(h)
                py["sets"][set_name] = {"per_query_s": times, "hits": hits}

    result = {
        "benchmark": "bm25",
        "command": " ".join(["/usr/bin/python3"] + sys.argv),
        "git_commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "machine": machine(),
        "load_average_before": load_before,
        "corpus": {"docs": args.docs, "vocab": args.vocab, "seed": args.seed, "tokens": n_tokens or None,
                   "generate_s": gen_s},
        "top": args.top,
        "kgym_reps_per_query": args.reps,
        "python_reps_per_query": args.python_reps,
        "kgym_build_s": cpp["keywords"]["build_s"],
        "python_build_s": py["build_s"] if py else None,
        "sets": {},
    }
    rows = []
    for set_name, qs in sets.items():
        c = cpp[set_name]["queries"]
        c_times = [q["median_s"] for q in c]
        entry = {"queries": len(qs),
                 "query_tokens_median": statistics.median(len(tokenize(q)) for q in qs),
                 "kgym": stats(c_times), "kgym_per_query_s": c_times}
        if py:
            p = py["sets"][set_name]
            same = all(cq["hits"] == ph for cq, ph in zip(c, p["hits"]))
            if not same:
                bad = next(i for i, (cq, ph) in enumerate(zip(c, p["hits"])) if cq["hits"] != ph)
                print(f"MISMATCH in {set_name} query {bad}:\n kgym {c[bad]['hits'][:3]}\n py   {p['hits'][bad][:3]}",
                      file=sys.stderr)
            entry["identical_results"] = same
            entry["rank_bm25"] = stats(p["per_query_s"])
            entry["rank_bm25_per_query_s"] = p["per_query_s"]
            entry["speedup_median_vs_rank_bm25"] = entry["rank_bm25"]["median_s"] / entry["kgym"]["median_s"]
            entry["speedup_per_query_median"] = statistics.median(a / b for a, b in zip(p["per_query_s"], c_times))
        entry["hits_per_query_median"] = statistics.median(len(q["hits"]) for q in c)
        result["sets"][set_name] = entry
        rows.append((set_name, entry))
    result["load_average_after"] = load_average()

    print(f"bm25: {args.docs} skills, top {args.top}; kgym index build {result['kgym_build_s']:.2f} s"
          + (f", rank_bm25 build {py['build_s']:.1f} s" if py else ""))
    print(f"{'queries':<10} {'n':>4} {'tokens':>7} {'kgym median':>12} {'kgym p90':>10} {'rank_bm25 median':>17}"
          f" {'ratio':>8} {'identical':>9}")
    for set_name, e in rows:
        pm = f"{e['rank_bm25']['median_s'] * 1e3:14.1f} ms" if "rank_bm25" in e else f"{'-':>17}"
        ratio = f"{e['speedup_median_vs_rank_bm25']:7.0f}x" if "rank_bm25" in e else f"{'-':>8}"
        print(f"{set_name:<10} {e['queries']:>4} {e['query_tokens_median']:>7.0f} {e['kgym']['median_s'] * 1e3:9.3f} ms"
              f" {e['kgym']['p90_s'] * 1e3:7.3f} ms {pm} {ratio} {str(e.get('identical_results', '-')):>9}")
    print(f"load average before {load_before}, after {result['load_average_after']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if py and not all(e["identical_results"] for e in result["sets"].values()):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
