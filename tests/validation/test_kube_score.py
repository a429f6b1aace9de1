"""kube-score (pinned, tools/install.py) over every rendered object, all environments at
once so cross-object checks (NetworkPolicy, HPA targets) see each other. Every finding must
be in kube_score_accepted.yaml with its reason, and every accepted entry must still be used.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support import ROOT, tool

ACCEPTED = Path(__file__).with_name("kube_score_accepted.yaml")
KUBERNETES = "v1.36"  # the shipped environments' cluster.kubernetesVersion


def _findings() -> list[tuple[str, str, str]]:
    """(check id, Kind/name, first comment) for every non-skipped check below full grade."""
    binary = tool("kube-score")
    files = sorted(str(p) for p in (ROOT / "rendered").rglob("*.yaml") if "installers" not in p.parts)
    done = subprocess.run(
        [str(binary), "score", "-o", "json", f"--kubernetes-version={KUBERNETES}", *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout, done.stderr  # exits 1 whenever it finds anything: the list decides
    found = []
    for obj in json.loads(done.stdout):
        kind, name = obj["object_name"].split("/")[0], obj["object_meta"]["name"]
        for check in obj["checks"]:
            if not check["skipped"] and check["grade"] < 10:
                comments = check.get("comments") or [{"summary": ""}]
                found.append((check["check"]["id"], f"{kind}/{name}", comments[0]["summary"]))
    return found


def test_every_kube_score_finding_is_accepted_with_a_reason() -> None:
    accepted: list[dict[str, Any]] = yaml.safe_load(ACCEPTED.read_text(encoding="utf-8"))
    for entry in accepted:
        assert set(entry) == {"check", "object", "reason"} and len(entry["reason"]) > 40, entry
    found = _findings()
    assert found, "kube-score found nothing at all: is it reading rendered/?"
    used: set[int] = set()
    unaccepted = []
    for check, obj, summary in found:
        matches = [
            i for i, e in enumerate(accepted) if e["check"] == check and fnmatch.fnmatch(obj, e["object"])
        ]
        if not matches:
            unaccepted.append(f"{check} {obj}: {summary}")
        used.update(matches)
    listing = "\n".join(sorted(set(unaccepted)))
    assert not unaccepted, f"fix these or accept them with a reason in kube_score_accepted.yaml:\n{listing}"
    stale = [f"{e['check']} {e['object']}" for i, e in enumerate(accepted) if i not in used]
    assert not stale, f"accepted entries no finding uses any more (remove them): {stale}"
