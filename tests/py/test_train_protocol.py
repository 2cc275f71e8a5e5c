"""The learner's protocol is defined twice, once per language: src/train/learner_protocol.h (kgym's trainer)
and python/kgym_train/protocol.py (the learner). They must name the same paths and fields."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from kgym_train import protocol  # noqa: E402


def _snake(camel):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


def test_header_and_module_agree():
    with open(os.path.join(ROOT, "src", "train", "learner_protocol.h")) as f:
        header = dict(re.findall(r'inline constexpr char k(\w+)\[\] = "([^"]*)";', f.read()))
    assert len(header) >= 20
    module = {k: v for k, v in vars(protocol).items() if k.isupper() and isinstance(v, str)}
    from_header = {_snake(k): v for k, v in header.items()}
    assert from_header == module
    with open(os.path.join(ROOT, "src", "train", "learner_protocol.h")) as f:
        ints = {_snake(k): int(v) for k, v in re.findall(r"inline constexpr int k(\w+) = (\d+);", f.read())}
    assert ints and ints == {k: v for k, v in vars(protocol).items() if k.isupper() and isinstance(v, int)}


def test_every_path_is_served():
    with open(os.path.join(ROOT, "python", "kgym_train", "server.py")) as f:
        server = f.read()
    for name, value in vars(protocol).items():
        if name.startswith("PATH_"):
            assert f"P.{name}" in server, f"{name} ({value}) has no route in server.py"


def test_row_tables_agree_and_the_learner_names_row_fields_only_through_them():
    """The rows of the bodies (a train step's prompt_ids, response_ids, advantage, old_logprobs, token_mask; the
    log-prob request's and reply's) are one table per language; the tables agree, the learner spells no row field as a
    literal (learner.py had 17 such literals) and its server checks the rows against the tables, so a renamed field is
    renamed everywhere. (server.py's other "logprobs" is OpenAI's field of a chat reply, not a row's.)"""
    with open(os.path.join(ROOT, "src", "train", "learner_protocol.h")) as f:
        text = f.read()
    tables = {_snake(name): [_snake(x.strip()[1:]) for x in body.split(",") if x.strip()]
              for name, body in re.findall(r"inline constexpr const char\* k(\w+)\[\] = \{([^}]*)\};", text)}
    assert set(tables) == {"LOGPROBS_ROW", "LOGPROBS_REPLY_ROW", "TRAIN_ROW"}
    for name, fields in tables.items():
        assert tuple(getattr(protocol, f) for f in fields) == getattr(protocol, name), name
    row_fields = set(protocol.TRAIN_ROW) | set(protocol.LOGPROBS_ROW) | set(protocol.LOGPROBS_REPLY_ROW)
    with open(os.path.join(ROOT, "python", "kgym_train", "learner.py")) as f:
        src = f.read()
    literal = [m.group(0) for m in re.finditer(r"""\[["'](\w+)["']\]|["'](\w+)["']\s*:""", src)
               if (m.group(1) or m.group(2)) in row_fields]
    assert not literal, f"learner.py names row fields by literal: {literal}"
    with open(os.path.join(ROOT, "python", "kgym_train", "server.py")) as f:
        server = f.read()
    assert "self._rows(body, P.TRAIN_ROW)" in server and "self._rows(body, P.LOGPROBS_ROW)" in server
