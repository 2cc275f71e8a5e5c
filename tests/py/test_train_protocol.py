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
