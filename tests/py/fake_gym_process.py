"""The fake KernelGYM server (agent_fakes.FakeGym) as a process of its own, so a test can kill it with SIGKILL in the
middle of its requests and start it again on the same port: python fake_gym_process.py PORT POST_LOG [DELAY_S].
Prints "ready" once it listens; appends each POST's task_id to POST_LOG."""
import sys
import time

from agent_fakes import FakeGym

if __name__ == "__main__":
    port, log = int(sys.argv[1]), open(sys.argv[2], "a")
    gym = FakeGym(port=port, delay_s=float(sys.argv[3]) if len(sys.argv) > 3 else 0.0, post_log=log)
    print("ready", flush=True)
    while True:
        time.sleep(3600)
