"""Shapes the house promised in issue 38 and keeps: the evolve round reads as its steps (no function of
src/skills/evolve*.cc over 100 lines; RunEvolve was one function of 233)."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def functions(path):
    """(name, lines) of every function defined in a .cc file, from its signature's first line to its closing brace.
    Braces are counted outside strings, characters and comments; a namespace's braces do not count."""
    text = open(path).read()
    text = re.sub(r"//[^\n]*|^#[^\n]*", "", text, flags=re.M)
    text = re.sub(r'R"\((?:.|\n)*?\)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    out, depth, start, stmt_start = [], 0, None, 0
    for i, c in enumerate(text):
        if c == "{":
            head = text[stmt_start:i]
            if depth == 0 and start is None and re.search(r"\)\s*(const\s*)?(override\s*)?(->\s*[\w:<>]+\s*)?$", head) \
                    and not re.search(r"\bnamespace\b[\w:\s]*$", head):
                start = (stmt_start, i, re.search(r"([\w:~]+)\s*\(", head).group(1))
            if not (depth == 0 and re.search(r"\bnamespace\b[\w:\s]*$", head)):
                depth += 1
            stmt_start = i + 1
        elif c == "}":
            if depth == 0:  # a namespace closes
                stmt_start = i + 1
                continue
            depth -= 1
            if depth == 0 and start is not None:
                while text[start[0]].isspace():
                    start = (start[0] + 1, start[1], start[2])
                first = text.count("\n", 0, start[0])
                out.append((start[2], text.count("\n", 0, i) - first + 1))
                start = None
            stmt_start = i + 1
        elif c == ";" and depth == 0:
            stmt_start = i + 1
    return out


def test_no_function_of_the_evolve_round_is_over_100_lines():
    files = sorted(glob.glob(os.path.join(ROOT, "src", "skills", "evolve*.cc")))
    files = [f for f in files if not f.endswith("_test.cc")]
    assert len(files) >= 2
    found = {}
    for path in files:
        for name, n in functions(path):
            found[f"{os.path.basename(path)}:{name}"] = n
    assert any(k.endswith(":RunEvolve") for k in found), found
    assert len(found) >= 10, found
    long = {k: n for k, n in found.items() if n > 100}
    assert not long, long


def candidate_keys():
    text = open(os.path.join(ROOT, "src", "eval", "candidate_facts.cc")).read()
    body = re.search(r"kCandidateMetadataKeys = \{(.*?)\};", text, re.S).group(1)
    return re.findall(r'"([a-z_0-9]+)"', re.sub(r"//[^\n]*", "", body))


# Keys of another writer's object that the candidate's facts add to: the evaluator writes host_memory (the reference's
# bytes), the facts its candidate_worker_peak_bytes.
SHARED = {"host_memory": {"eval/evaluator.cc"}}


def test_every_candidate_metadata_key_is_listed_once_and_written_only_by_its_writer():
    """eval/candidate_facts.cc lists every metadata key a candidate's run writes (kCandidateMetadataKeys), once;
    CandidateFacts::ToJson writes them, and no other file writes any of them into metadata (metadata had become a bus
    between rooms: a key renamed in one room silently broke another)."""
    keys = candidate_keys()
    assert len(keys) >= 55, keys
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
    writer = open(os.path.join(ROOT, "src", "eval", "candidate_facts.cc")).read()
    for k in keys:
        assert f'"{k}"' in writer.split("kCandidateMetadataKeys")[-1], f"{k} is listed but ToJson does not write it"
    elsewhere = []
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), os.path.join(ROOT, "src"))
            if not f.endswith((".cc", ".h")) or f.endswith("_test.cc") or rel == "eval/candidate_facts.cc":
                continue
            text = open(os.path.join(d, f)).read()
            if rel.startswith("eval/candidate_") and re.search(r"\bmd_?\[|metadata\[", text):
                elsewhere.append(f"{rel} writes metadata itself")
            for m in re.finditer(r'\b(?:md_?|metadata)\["([a-z_0-9]+)"\]\s*=(?!=)', text):
                if m.group(1) in keys and rel not in SHARED.get(m.group(1), ()):
                    elsewhere.append(f"{rel}: {m.group(0)}")
    assert not elsewhere, elsewhere


def test_the_candidates_run_file_is_at_most_400_lines():
    n = len(open(os.path.join(ROOT, "src", "eval", "candidate_run.cc")).read().split("\n"))
    assert n <= 400, n
