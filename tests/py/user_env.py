"""A new user's shell, for tests that run kgym as the README says: no KGYM_* variable, no PYTHONPATH, and a
`python3` first on PATH that has no torch (as a pyenv or venv python often is): it logs each call and fails, so a
test can assert that kgym never ran it."""
import os
import stat


def user_env(tmp_path):
    """(environment, log of calls to the fake python3)."""
    fake = tmp_path / "fake-bin"
    fake.mkdir(exist_ok=True)
    log = tmp_path / "fake-python3.log"
    script = fake / "python3"
    script.write_text("#!/bin/sh\n"
                      f"echo \"$0 $*\" >> {log}\n"
                      "echo \"ModuleNotFoundError: No module named 'torch' (the fake python3 first on PATH)\" >&2\n"
                      "exit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (fake / "python").symlink_to(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGYM_") and k != "PYTHONPATH"}
    env["PATH"] = f"{fake}:{env.get('PATH', '/usr/bin:/bin')}"
    return env, log
