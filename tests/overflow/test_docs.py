"""docs/overflow.md shows numbers the model derives: the snippet and the provider table."""

from __future__ import annotations

import re

from generators.components.overflow.inference import inference_pod_snippet
from generators.model.load import load
from generators.output import yamlemit
from tests.support import ROOT

DOC = (ROOT / "docs" / "overflow.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return DOC.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_documented_snippet_is_what_the_generator_derives() -> None:
    ov = load(ROOT, "prod").overflow
    assert ov is not None
    chat = next(svc for svc in ov.inference if svc.deployment == "chat-api")
    [block] = re.findall(r"```yaml\n(.*?)```", _section("The inference pod snippet"), re.S)
    assert block == yamlemit.dump(inference_pod_snippet(ov, chat))


def test_documented_provider_table_matches_the_model() -> None:
    ov = load(ROOT, "prod").overflow
    assert ov is not None
    row = (
        r"^\| (\w+) \| (\d+) \| (\d+) \| (\d+) s \| (\d+) \| (\d+) s \| (\d+) \| (\d+) \| "
        r"([\d.]+) \| ([\d.]+) \|$"
    )
    rows = re.findall(row, _section("Several providers: the preferred one fills first"), re.M)
    expected = [
        (
            p.name,
            str(p.rank),
            str(p.band.open_when_free_gpus_below),
            str(p.band.open_after_seconds),
            str(p.band.close_when_free_gpus_at_least),
            str(p.band.close_after_seconds),
            str(p.affinity_weight),
            str(p.gpus),
            f"{p.cost_per_gpu_hour_usd:.2f}",
            f"{p.max_usd_per_hour:.2f}",
        )
        for p in ov.providers
    ]
    assert rows == expected
