"""The supervisor <-> worker protocol has one definition in two halves: src/sandbox/protocol.h (C++) and
python/kgym_harness/protocol.py. Both are read here, the header as text, and must name the same message kinds, fields,
roles, evidence kinds and note keys with the same strings, and the same fields per (kind, direction). Neither side may
spell a message's "type" outside them."""
import glob
import os
import re

from kgym_harness import protocol

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "src", "sandbox", "protocol.h")
GROUPS = {"kind": protocol.Kind, "field": protocol.Field, "role": protocol.Role, "evidence": protocol.Evidence,
          "note": protocol.Note}
DIRECTIONS = {"kToWorker": protocol.TO_WORKER, "kToSupervisor": protocol.TO_SUPERVISOR}


def _snake(camel):
    """kTrialResult -> TRIAL_RESULT, kAllowTf32 -> ALLOW_TF32."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel[1:]).upper()


def _header_constants(text):
    out, group = {}, None
    for line in text.splitlines():
        m = re.match(r"namespace (\w+) \{", line)
        if m:
            group = m.group(1)
            continue
        if re.match(r"\}  // namespace (\w+)$", line) and group in GROUPS:
            group = None
            continue
        m = re.match(r'inline constexpr char (k\w+)\[\] = "([^"]*)";', line)
        if m:
            assert group in GROUPS, "constant %s outside a known group" % m.group(1)
            out[(group, _snake(m.group(1)))] = m.group(2)
    return out


def _header_messages(text):
    table = text[text.index("kMessages[]"):]
    out = {}
    for kind, direction, strings in re.findall(r'\{kind::(k\w+), Direction::(k\w+),\s*((?:"[^"]*"\s*)+)\}', table):
        value = getattr(protocol.Kind, _snake(kind))
        fields = "".join(re.findall(r'"([^"]*)"', strings)).split()
        key = (value, DIRECTIONS[direction])
        assert key not in out, "duplicate entry %s" % (key,)
        out[key] = tuple(fields)
    return out


def _python_constants():
    out = {}
    for group, cls in GROUPS.items():
        for name, value in vars(cls).items():
            if name.isupper():
                out[(group, name)] = value
    return out


def test_constants_agree():
    header = _header_constants(open(HEADER).read())
    python = _python_constants()
    assert len(header) > 60
    assert set(header) == set(python), (set(header) ^ set(python))
    for key, value in header.items():
        assert python[key] == value, key


def test_messages_agree():
    header = _header_messages(open(HEADER).read())
    assert header == protocol.MESSAGES
    fields = set(vars(protocol.Field).values())
    for (kind, _), names in protocol.MESSAGES.items():
        assert kind in set(vars(protocol.Kind).values())
        for n in names:
            assert n in fields, (kind, n)


def test_every_kind_travels_somewhere():
    kinds = {v for k, v in vars(protocol.Kind).items() if k.isupper()}
    assert kinds == {k for k, _ in protocol.MESSAGES}


def test_no_message_type_spelled_outside_the_protocol():
    # The zygote's control channel (zygote.cc / zygote.py) is another conversation with its own messages.
    cc = [p for p in glob.glob(os.path.join(ROOT, "src", "eval", "*.cc")) + glob.glob(
        os.path.join(ROOT, "src", "sandbox", "*.cc")) if not p.endswith(("zygote.cc", "_test.cc"))]
    py = [p for p in glob.glob(os.path.join(ROOT, "python", "kgym_harness", "*.py"))
          if not p.endswith(("protocol.py", "zygote.py"))]
    offenders = []
    for path in cc + py:
        for n, line in enumerate(open(path), 1):
            if re.search(r"""["']type["']""", line):
                offenders.append("%s:%d: %s" % (os.path.relpath(path, ROOT), n, line.strip()))
    assert not offenders, "\n".join(offenders)
