"""The shipped monitoring objects read as the tests compare them: the plain rules file and
its rules, the dashboards' JSON models and panels with Grafana's variables made concrete, the
rendered quarantine policy; and `run`, a command's output captured (promtool)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from generators.components.monitoring import RULES_KEY, RULES_NAME
from tests.monitoring.conftest import Shipped
from tests.support import ROOT


def rules_file_text(shipped: Shipped) -> str:
    """The plain rules file, from the ConfigMap that carries it in rendered/."""
    text: str = shipped.named("ConfigMap", f"{RULES_NAME}-rules-file")["data"][RULES_KEY]
    return text


def all_rules(shipped: Shipped) -> list[dict[str, Any]]:
    groups = yaml.safe_load(rules_file_text(shipped))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)


def dashboards(shipped: Shipped) -> list[dict[str, Any]]:
    """The dashboard JSON models inside the rendered objects."""
    out = []
    for obj in shipped.objects:
        if obj["kind"] == "GrafanaDashboard":
            out.append(json.loads(obj["spec"]["json"]))
        elif obj["kind"] == "ConfigMap" and any(k.endswith(".json") for k in obj.get("data", {})):
            (text,) = obj["data"].values()  # one dashboard per ConfigMap
            out.append(json.loads(text))
    return out


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in board["panels"] if p["type"] != "row"]


QUARANTINING = ["staging", "prod"]


def policy(env: str) -> dict[str, object]:
    path = ROOT / "rendered" / env / "health" / "trainyard-system" / "configmap-gpu-health-policy.yaml"
    document: dict[str, object] = yaml.safe_load(yaml.safe_load(path.read_text())["data"]["policy.yaml"])
    return document


# Grafana's variables and macros, as a user would pick them: every host, the last hour.
SUBSTITUTIONS = (
    ("$__rate_interval", "2m"),
    ("$__range_s", "3600"),
    ("$__range", "1h"),
    ("$__interval", "1m"),
    ("$cluster_queue", ".*"),
    ("$namespace", ".*"),
    ("$host", ".*"),
)


def concrete(expr: str) -> str:
    for variable, value in SUBSTITUTIONS:
        expr = expr.replace(variable, value)
    assert "$" not in expr.replace('"$1"', ""), expr
    return expr
