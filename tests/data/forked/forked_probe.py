"""What a forked child sees, for tests/run/test_zygotes.py: `python -m forked_probe ACTION`
prints one JSON line about itself, then ends as ACTION says (exit N, segv, raise, sleep)."""

import json
import os
import signal
import sys
import time

print(
    json.dumps(
        {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "pgid": os.getpgrp(),
            "argv": sys.argv[1:],
            "probe_var": os.environ.get("PROBE_VAR"),
            "zygote_only": os.environ.get("ZYGOTE_ONLY"),
            "torch_preloaded": "torch" in sys.modules,
            "spawn_time": os.environ.get("SUITE_SPAWN_TIME"),
            "parent_env": os.environ.get("SUITE_PARENT_PID"),
            "stdin_empty": sys.stdin.read() == "",
        }
    ),
    flush=True,
)
action = sys.argv[1] if len(sys.argv) > 1 else "exit"
if action == "exit":
    sys.exit(int(sys.argv[2]))
if action == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
if action == "raise":
    raise RuntimeError("planted in the forked child")
if action == "sleep":
    time.sleep(600)
