"""What the fake docker (tests/support/docker.py) runs for a paired `suite run` container when
FAKE_DOCKER_PAIR is set: a runner of one cell whose worker times fake functions (a real sleep per
call, FAKE_DOCKER_PAIR's milliseconds, x1.2 for the new side) under the real pair protocol, through
the socket the session's coordinator made in the mounted run folder. It writes each round's wall
span to `<log>.pair` and the fields the coordinator handed it to `<run folder>/fake-<build>.json`:
the session's side of a pair, tested without torch or containers."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from suite.measure.pairing import Partner
from suite.measure.timing import StopRule, TimingLoop
from suite.run.pair import RunnerLine
from suite.spec.pair_protocol import pair_key


def host_path(args: list[str], inside: str) -> str:
    """A path in the container as the host sees it, through the `--mount` that holds it."""
    for i, a in enumerate(args):
        if a == "--mount" and "type=bind" in args[i + 1]:
            parts = dict(p.split("=", 1) for p in args[i + 1].split(",") if "=" in p)
            if inside.startswith(parts["target"] + "/"):
                return parts["source"] + inside[len(parts["target"]) :]
    raise SystemExit(f"fake container: {inside} is in no mount")


def main(args: list[str]) -> int:
    build = args[args.index("--build") + 1]
    role = args[args.index("--pair-role") + 1]
    socket = host_path(args, args[args.index("--pair") + 1])
    ms = float(os.environ["FAKE_DOCKER_PAIR"]) * (1.2 if role == "new" else 1.0)
    key = {"model": "ViT", "batch_size": 1, "mode": "default"}
    line = RunnerLine.connect(socket, role, [pair_key(key)])
    partner = Partner.open(socket, role, key, build=build, functions=2,
                           rule={"rule": "ci", "min_calls": 10, "max_calls": 100, "ci_target_pct": 1.0,
                                 "max_seconds": 60.0})  # fmt: skip
    log = Path(os.environ["FAKE_DOCKER_LOG"] + ".pair")

    def call(scale: float) -> None:
        time.sleep(ms * scale / 1000)

    partner.prepare()
    partner.ready(compile_s=1.0)
    loop = TimingLoop(lambda: None, settle_ms=0, probe=lambda: 1.0, partner=partner)
    real_round = loop._round

    def logged_round(*a: object) -> int:
        start = time.time()
        last = real_round(*a)  # type: ignore[arg-type]
        with open(log, "a") as fh:
            fh.write(json.dumps([role, start, time.time()]) + "\n")
        return last

    loop._round = logged_round  # type: ignore[method-assign]
    loop.until([lambda: call(2.0), lambda: call(1.0)], StopRule("ci", 100, 10, 1.0, 60.0))
    fields = partner.timed()
    partner.close()
    line.ended(pair_key(key))
    line.close()
    Path(socket).parent.joinpath(f"fake-{build}.json").write_text(json.dumps(fields))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
