"""`kgym skills add|list|search` end to end: validation that names the field and changes nothing, snapshot steps,
and search scores equal to BM25Okapi (a reference written here, and rank_bm25 itself when it is installed)."""
import json
import math
import os
import random
import re
import string
import subprocess

import pytest

KGYM = os.environ.get("KGYM_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "src", "cli", "kgym")
pytestmark = pytest.mark.skipif(not os.path.exists(KGYM), reason="kgym binary not built")


def kgym(*args, check=True):
    p = subprocess.run([KGYM, "skills", *args], capture_output=True, text=True)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def tokenize(text):  # daVinci's tokenizer
    text = re.sub(r"[_\-/]", " ", text.lower())
    return text.translate(str.maketrans("", "", string.punctuation)).split()


def okapi(corpus, query, k1=1.5, b=0.75, eps=0.25):
    n, freqs, nd = len(corpus), [], {}
    for doc in corpus:
        f = {}
        for w in doc:
            f[w] = f.get(w, 0) + 1
        freqs.append(f)
        for w in f:
            nd[w] = nd.get(w, 0) + 1
    avgdl = sum(len(d) for d in corpus) / n
    idf = {w: math.log(n - c + 0.5) - math.log(c + 0.5) for w, c in nd.items()}
    floor = eps * (sum(idf.values()) / len(idf))
    idf = {w: (floor if v < 0 else v) for w, v in idf.items()}
    scores = [0.0] * n
    for q in query:
        for d, f in enumerate(freqs):
            tf = f.get(q, 0)
            scores[d] += idf.get(q, 0) * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(corpus[d]) / avgdl)))
    return scores


def skill(name, content, **kw):
    rec = {"name": name, "description": f"about {name}", "scope": "general", "tags": ["t"], "content": content}
    rec.update(kw)
    return rec


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_add_rejects_bad_record_and_changes_nothing(tmp_path):
    lib = tmp_path / "lib"
    kgym("add", "--library", str(lib), write_jsonl(tmp_path / "a.jsonl", [skill("Tile MatMul", "## Key Idea\nx")]))
    before = sorted(os.listdir(lib))
    bad = write_jsonl(tmp_path / "b.jsonl", [skill("ok", "c"), skill("bad", "c", scope="elsewhere")])
    p = kgym("add", "--library", str(lib), bad, check=False)
    assert p.returncode != 0
    assert "'scope'" in p.stderr and ":2:" in p.stderr
    assert sorted(os.listdir(lib)) == before
    names = [r["name"] for r in json.loads(kgym("list", "--library", str(lib), "--json").stdout)]
    assert names == ["tile_matmul"]


def test_add_names_missing_field_and_bad_json(tmp_path):
    lib = tmp_path / "lib"
    rec = skill("no_body", "x")
    del rec["content"]
    p = kgym("add", "--library", str(lib), write_jsonl(tmp_path / "a.jsonl", [rec]), check=False)
    assert p.returncode != 0 and "'content'" in p.stderr and ":1:" in p.stderr
    (tmp_path / "b.jsonl").write_text(json.dumps(skill("fine", "x")) + "\n{not json\n")
    p = kgym("add", "--library", str(lib), str(tmp_path / "b.jsonl"), check=False)
    assert p.returncode != 0 and ":2:" in p.stderr
    assert not lib.exists() or os.listdir(lib) == []


def test_list_by_step_and_name_collisions(tmp_path):
    lib = tmp_path / "lib"
    kgym("add", "--library", str(lib), write_jsonl(tmp_path / "a.jsonl", [skill("a", "x")]))
    kgym("add", "--library", str(lib), write_jsonl(tmp_path / "b.jsonl", [skill("A", "y"), skill("b", "z")]))
    assert sorted(os.listdir(lib)) == ["global_step_0.jsonl", "global_step_1.jsonl"]
    latest = [r["name"] for r in json.loads(kgym("list", "--library", str(lib), "--json").stdout)]
    assert latest == ["a", "a_1", "b"]
    first = [r["name"] for r in json.loads(kgym("list", "--library", str(lib), "--step", "0", "--json").stdout)]
    assert first == ["a"]
    assert "a_1" in kgym("list", "--library", str(lib)).stdout


def random_corpus(rng, n):
    words = ["tile", "warp", "shuffle", "reduce", "softmax", "matmul", "shared", "memory", "coalesce", "the", "a",
             "tl.load", "__syncthreads()", "block_size", "fp16", "bf16", "mask", "autotune", "persistent", "grid"]
    words += [f"w{i}" for i in range(200)]
    recs = []
    for i in range(n):
        body = " ".join(rng.choice(words[: rng.randint(10, len(words))]) for _ in range(rng.randint(5, 60)))
        recs.append(skill(f"skill_{i}", "## Key Idea\n" + body, tags=rng.sample(words[:20], 3)))
    return words, recs


@pytest.mark.parametrize("n", [1, 2, 3, 40, 300])
def test_search_scores_equal_bm25okapi(tmp_path, n):
    rng = random.Random(n)
    words, recs = random_corpus(rng, n)
    lib = tmp_path / "lib"
    kgym("add", "--library", str(lib), write_jsonl(tmp_path / "s.jsonl", recs))
    docs = [tokenize(" ".join([r["name"], r["description"], " ".join(r["tags"]), r["content"]])) for r in recs]
    try:
        from rank_bm25 import BM25Okapi
        real = BM25Okapi(docs)
    except ImportError:
        real = None
    for _ in range(5):
        query = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        got = json.loads(kgym("search", "--library", str(lib), "--query", query, "--top", "20", "--json").stdout)
        scores = okapi(docs, tokenize(query))
        if real is not None:
            assert list(real.get_scores(tokenize(query))) == scores
        order = sorted(range(n), key=lambda d: -scores[d])  # stable: ties keep library order
        want = [{"name": recs[d]["name"], "score": scores[d]} for d in order if scores[d] > 0][:20]
        assert got == want
