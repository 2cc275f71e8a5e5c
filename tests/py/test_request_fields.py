"""What a request asks is one table (src/request/request_fields.h, printed by `kgym flags --request-fields`): every
field that HTTP and `kgym eval` both take has the same limit in both, and the run commands' flags of the same field
(`kgym agent --num-perf-trials`) have it too. Before issue 38, num_perf_trials could be 1 000 over HTTP but 10 000
in `kgym eval`. Nothing is evaluated here: a value HTTP accepts meets a kernel without ModelNew (a validation result,
at once), and `kgym eval` is given a --ref that does not exist (refused after its flags were accepted)."""
import json
import os
import subprocess

import pytest

from server_util import KGYM_BIN, REF, Server, drkernel_payload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym not built")
TASK = os.path.join(ROOT, "src", "agent", "testdata", "model_card_ref_code.py")
NOT_A_CANDIDATE = "import torch\nclass Other(torch.nn.Module):\n    pass\n"


def table():
    out = subprocess.run([KGYM_BIN, "flags", "--request-fields"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def probes(field):
    """(value, accepted) pairs at and past the field's limits and choices."""
    if field["choices"]:
        return [(c, True) for c in field["choices"].split("|")] + [("no-such-" + field["name"], False)]
    lo, hi = field["lo"], field["hi"]
    if field["type"] == "string":
        out = [("x" * int(lo), True)] + ([("x" * int(lo - 1), False)] if lo >= 1 else [])
        return out + ([("x" * int(hi), True), ("x" * int(hi + 1), False)] if hi is not None else [])
    if field["type"] == "integer":
        lo, hi = int(lo), int(hi)
    return [(lo, True), (lo - 1, False)] + ([(hi, True), (hi + 1, False)] if hi is not None else [])


def eval_accepts(flag, value):
    p = subprocess.run([KGYM_BIN, "eval", "--ref", "/nonexistent/ref.py", "--kernel", "/nonexistent/k.py", "--device",
                        "cpu", flag, str(value)], capture_output=True, text=True, timeout=60)
    if "cannot read --ref" in p.stderr:
        return True
    assert p.returncode != 0 and flag in p.stderr, p.stderr
    return False


def agent_accepts(flag, value):
    p = subprocess.run([KGYM_BIN, "agent", "--tasks", TASK, "--print-prompt", flag, str(value)], capture_output=True,
                       text=True, timeout=60)
    if p.returncode == 0:
        return True
    assert flag in p.stderr, p.stderr
    return False


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("request_fields"), "--evaluator", "simulated", "--gpus", "none")
    yield s
    s.stop()


def http_accepts(server, name, value, n=[0]):
    n[0] += 1
    body = drkernel_payload(f"fields-{n[0]}", NOT_A_CANDIDATE, REF)
    body[name] = value
    r = server.post("/evaluate", body)
    assert r.status in (200, 400), r.body
    if r.status == 400:
        assert name in r.json()["message"], r.body
    return r.status == 200


def test_the_table_names_each_field_once_with_its_limits():
    fields = table()
    assert len(fields) >= 15
    by_name = {f["name"]: f for f in fields if f["name"]}
    assert by_name["num_perf_trials"]["hi"] == 1000 and by_name["num_perf_trials"]["flag"] == "--num-perf-trials"
    assert by_name["timeout"]["flag"] == "--eval-timeout" and by_name["timeout"]["keys"] == "gym.timeout"
    assert len({f["flag"] for f in fields if f["flag"]}) == len([f for f in fields if f["flag"]])


def test_a_fields_limit_is_the_same_over_http_in_kgym_eval_and_in_the_run_flags(server):
    checked, differ = 0, []
    for field in table():
        if not field["name"] or not field["flag"]:
            continue
        for value, accepted in probes(field):
            got = {"http": http_accepts(server, field["name"], value), "eval": eval_accepts(field["flag"], value)}
            if field["keys"]:  # a gym parameter of the run commands (src/run/run_params.h)
                got["agent"] = agent_accepts(field["flag"], value)
            checked += 1
            if set(got.values()) != {accepted}:
                differ.append(f"{field['name']}={value!r}: expected {'accepted' if accepted else 'refused'}, got {got}")
    assert checked >= 40
    assert not differ, "\n".join(differ)
