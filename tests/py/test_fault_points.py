"""The fault registry's two halves agree (src/fault/fault_points.cc lists every point; python/kgym_train/faults.py acts
on the learner's): every point a site checks is listed, every listed point is checked somewhere, the Python half's
points and modes are the listed ones, and its spec parsing and markers behave as the contract says."""
import os
import re

import pytest

from kgym_train import faults

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def listed():
    text = open(os.path.join(ROOT, "src", "fault", "fault_points.cc")).read()
    return {m.group(1): m.group(2).split() for m in re.finditer(r'\{"([a-z_.]+)", "([a-z0-9 ]+)",', text)}


def sites():
    """Each point's stated site: the file its `where` names first (under src/, or python/...)."""
    text = open(os.path.join(ROOT, "src", "fault", "fault_points.cc")).read()
    out = {}
    for m in re.finditer(r'\{"([a-z_.]+)", "[a-z0-9 ]+",\s*"([^"]*)"', text):
        path = m.group(2).split()[0].rstrip(",")
        out[m.group(1)] = path if path.startswith("python/") else os.path.join("src", path)
    return out


def sources(sub, exts):
    for d, _, files in os.walk(os.path.join(ROOT, sub)):
        for f in files:
            if f.endswith(exts) and not f.endswith("_test.cc") and f != "fault_points.cc":
                yield open(os.path.join(d, f)).read()


def checked(points):
    """(names the sites check, names checked that are not listed): fault::Hit("...") and the point names handed on to
    a checking function (the Redis queue's per-command ones) in C++, hit() / die_if_hit() in the learner."""
    names, unlisted = set(), set()
    for text in sources("src", (".cc", ".h")):
        hits = set(re.findall(r'fault::Hit\("([^"]+)"\)', text))
        unlisted |= hits - set(points)
        names |= hits | {n for n in re.findall(r'"([a-z_]+\.[a-z_]+)"', text) if n in points}
    for text in sources("python", (".py",)):
        hits = set(re.findall(r'(?:hit|die_if_hit)\("([^"]+)"\)', text))
        unlisted |= hits - set(points)
        names |= hits
    return names, unlisted


def test_every_point_is_listed_and_checked():
    points = listed()
    assert len(points) >= 18
    sites, unlisted = checked(points)
    assert unlisted == set(), "checked but not listed"
    assert set(points) - sites == set(), "listed but checked nowhere"


def test_each_point_is_checked_where_the_table_says():
    """The table's `where` is what a reader follows to the site: the file it names (or that file's header, where a
    point's name is a default argument) checks the point (learner.train_step was said to be in server.py)."""
    stated = sites()
    assert set(stated) == set(listed())
    wrong = []
    for name, path in stated.items():
        files = [path] + ([path[:-3] + ".h"] if path.endswith(".cc") else [])
        texts = [open(os.path.join(ROOT, f)).read() for f in files if os.path.exists(os.path.join(ROOT, f))]
        if not any(f'"{name}"' in t for t in texts):
            wrong.append(f"{name}: {path}")
    assert not wrong, "the stated site does not check the point: " + ", ".join(wrong)


def test_the_learners_points_are_the_listed_ones():
    points = listed()
    for name, modes in faults.POINTS.items():
        assert points[name] == list(modes), name


def test_spec_parsing_and_markers(tmp_path, monkeypatch):
    monkeypatch.setenv("KGYM_FAULTS", "store.insert@1,learner.train_step@2*2")  # the first entry is C++'s
    monkeypatch.setenv("KGYM_FAULTS_DIR", str(tmp_path))
    monkeypatch.setattr(faults, "_entries", None)
    assert [faults.hit("learner.train_step") for _ in range(4)] == [None, "exit", "exit", None]
    assert os.listdir(tmp_path) == ["learner.train_step@2"]
    monkeypatch.setattr(faults, "_entries", None)  # a restarted learner: the marker says it fired already
    assert [faults.hit("learner.train_step") for _ in range(4)] == [None] * 4
    monkeypatch.setenv("KGYM_FAULTS", "learner.train_step:explode")
    monkeypatch.setattr(faults, "_entries", None)
    with pytest.raises(ValueError, match="no mode 'explode'"):
        faults.hit("learner.train_step")
