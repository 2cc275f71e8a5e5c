"""One flag name, one meaning, across every command of kgym (`kgym flags --json` lists them all).

A name that more than one command (or subcommand) has must come from one definition: the run parameters'
(src/run/run_params.h) or the shared names' (src/cli/shared_flags.h), whose concept every one of its descriptions
starts with; a name without a shared concept must read the same wherever it appears. Old names are accepted only
where a command had them, each pointing at a current name of that command, and say so when used."""
import json
import os
import subprocess
from collections import defaultdict

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KGYM = os.environ.get("KGYM_BIN") or os.path.join(ROOT, "build", "src", "cli", "kgym")
pytestmark = pytest.mark.skipif(not os.path.exists(KGYM), reason="kgym not built")

# The names that drifted before issue 35: one concept had two names, or one name two concepts.
RETIRED = ["--perf-trials", "--correct-trials", "--timeout", "--gpu", "--retries", "--retry-base", "--lockstep",
           "--summaries"]


@pytest.fixture(scope="module")
def flags():
    return json.loads(subprocess.run([KGYM, "flags", "--json"], capture_output=True, text=True, check=True).stdout)


def test_the_listing_covers_every_command(flags):
    commands = {f["command"].split()[0] for f in flags}
    assert {"agent", "eval", "serve", "worker", "suite", "skills", "data", "rl", "sft", "train", "grade",
            "view"} <= commands
    assert len(flags) > 150


def test_no_name_has_two_meanings(flags):
    by_name = defaultdict(list)
    for f in flags:
        if "old_name_of" not in f:
            by_name[f["name"]].append(f)
    shared = {n: fs for n, fs in by_name.items() if len({f["command"] for f in fs}) > 1}
    assert len(shared) >= 30, sorted(shared)  # the names the commands share today
    problems = []
    for name, fs in shared.items():
        concept = fs[0]["concept"]
        if concept:
            problems += [f"{name} in `{f['command']}`: {f['description']!r} is not \"{concept}...\""
                         for f in fs if not f["description"].startswith(concept)]
        elif len({f["description"] for f in fs}) > 1:
            problems.append(f"{name} has no shared concept but reads differently in " +
                            ", ".join(f"`{f['command']}`: {f['description']!r}" for f in fs))
    assert not problems, "\n".join(problems)


def test_old_names_point_at_a_current_name_of_their_command(flags):
    current = {(f["command"], f["name"]) for f in flags if "old_name_of" not in f}
    old = [f for f in flags if "old_name_of" in f]
    assert {f["name"] for f in old} >= set(RETIRED)
    for f in old:
        target = f["old_name_of"].split()[0]
        assert (f["command"], target) in current, f
        assert (f["command"], f["name"]) not in current, f
    # No retired name is anyone's current name.
    assert not [n for (_, n) in current if n in RETIRED]


def test_an_old_name_still_works_and_says_its_new_name(tmp_path):
    task = os.path.join(ROOT, "src", "agent", "testdata", "model_card_ref_code.py")
    p = subprocess.run([KGYM, "agent", "--tasks", task, "--print-prompt", "--timeout", "5", "--retries", "2",
                        "--lockstep"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "kgym agent: --timeout is now --llm-timeout" in p.stderr
    assert "kgym agent: --retries is now --max-retries" in p.stderr
    assert "kgym agent: --lockstep is now --layout lockstep" in p.stderr
    # The prompt is the same as without them.
    q = subprocess.run([KGYM, "agent", "--tasks", task, "--print-prompt"], capture_output=True, text=True)
    assert q.stdout == p.stdout and q.stderr == ""
