"""Capture real Kueue Workloads and pods for tests/whatif/test_from_workloads.py (not a test).

    TRAINYARD_BOX_DIR=$(mktemp -d) python -m tests.whatif.capture_workloads

Brings up one box of staging at speed 10 (the pinned Kueue, scheduler, job controller, KWOK),
replays tests/whatif/capture.yaml through replay() as `simulate` does, then submits one more
job that is still running when the objects are read, and writes what a user of a real
cluster would give `generate.py trace from-workloads`:
- fixtures/workloads.json: `kubectl get workloads -A -o json`, unchanged;
- fixtures/pods.json: `kubectl get pods -A -o json -l trainyard.dev/whatif-run=RUN` (the
  label selector only keeps the file to this replay's pods), unchanged.
The box is brought down whatever happens. JSON cannot hold a comment, so each fixture's
provenance (this recipe, the date, the pinned versions) is in fixtures/README.md.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from box.up import down, up
from generators.model.load import load as load_env
from tests.support import ROOT
from tools.toolchain import tool_path
from whatif.replay import KUEUE_API, RUN_LABEL, job_object, replay
from whatif.trace import load

ENV = "staging"
SPEED = 10
HERE = Path(__file__).parent
# Still running when the objects are read: a Workload with no Finished condition (its
# duration is unknown, so from-workloads must leave it out and say so).
RUNNING = HERE / "capture-running.yaml"


def say(line: str) -> None:
    print(line, file=sys.stderr)


def main() -> int:
    env = load_env(ROOT, ENV)
    trace = load(HERE / "capture.yaml", "tests/whatif/capture.yaml", env)
    running = load(RUNNING, "tests/whatif/capture-running.yaml", env)
    box = up(ROOT, ENV, 1, SPEED, say)
    try:
        kube = box.client()
        try:
            replayed = replay(kube, box.client, trace, "nvidia.com/gpu", SPEED, say)
            say(f"replay complete={replayed.complete} in {replayed.wall_seconds} s")
            kube.create(job_object(running.jobs[0], replayed.run, "nvidia.com/gpu", SPEED))
            resource = kube.resource(KUEUE_API, "Workload")
            deadline = time.time() + 120
            while time.time() < deadline:  # until Kueue admitted the running job
                items = kube.dynamic.get(resource).to_dict()["items"]
                late = [w for w in items if w["metadata"]["name"].startswith(f"job-{running.jobs[0].name}-")]
                conditions = [c for w in late for c in (w.get("status") or {}).get("conditions") or []]
                if any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions):
                    break
                time.sleep(0.5)
        finally:
            kube.close()
        kubectl = [str(tool_path("kubectl")), "--kubeconfig", str(box.kubeconfig)]
        fixtures = HERE / "fixtures"
        fixtures.mkdir(exist_ok=True)
        for name, args in (
            ("workloads.json", ["get", "workloads", "-A", "-o", "json"]),
            ("pods.json", ["get", "pods", "-A", "-o", "json", "-l", f"{RUN_LABEL}={replayed.run}"]),
        ):
            out = subprocess.run(kubectl + args, check=True, capture_output=True, text=True).stdout
            (fixtures / name).write_text(out, encoding="utf-8")
            say(f"wrote {fixtures / name} ({len(out)} bytes)")
    finally:
        down(ENV, say=say)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
