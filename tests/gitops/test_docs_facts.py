"""Facts the docs state that have one home in code: the docs must say what the code does.

A review found three drifts (a sync-wave table that differed from the rendered
waves, the server-side-apply threshold given as 128 KiB in one doc and 200 KiB in another,
docs/kueue.md saying training queues still mix flavors). Each fact is read from the doc
and compared with its home, so the next drift fails here instead of misleading a reader.
"""

from __future__ import annotations

import re

from generators.gitops import syncoptions, syncwaves
from tests.support import ROOT

from .conftest import rendered_objects

DOCS = ROOT / "docs"


def _wave_table(text: str) -> dict[str, int]:
    """kind -> wave from the markdown table under '### Sync waves'."""
    section = text.split("### Sync waves", 1)[1].split("\n## ", 1)[0]
    table: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].isdigit():
            continue
        # Parenthesised remarks are reasons, not kinds; "; " separates groups of kinds.
        kinds = re.sub(r"\([^)]*\)", "", cells[1])
        for part in re.split(r"[;,]", kinds):
            kind = part.strip().removesuffix("bootstrap").strip()
            if kind:
                table[kind] = int(cells[0])
    return table


def test_gitops_wave_table_is_the_rendered_waves() -> None:
    table = _wave_table((DOCS / "gitops.md").read_text())
    assert table == syncwaves.WAVES


def test_the_wave_table_parser_reads_groups_and_remarks() -> None:
    sample = "### Sync waves\n| wave | kinds |\n|---|---|\n| 3 | A (needs B, C); D |\n| 4 | E, F |\n"
    assert _wave_table(sample) == {"A": 3, "D": 3, "E": 4, "F": 4}


def test_every_doc_names_the_one_server_side_apply_threshold() -> None:
    kib = syncoptions.SERVER_SIDE_APPLY_ABOVE_BYTES // 1024
    assert kib == 128  # the literal the docs are checked against below
    seen = 0
    for doc in [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]:
        for paragraph in re.split(r"\n\s*\n", doc.read_text()):
            flat = " ".join(paragraph.split())
            if "ServerSideApply" in flat or "server-side apply" in flat.lower():
                # 256 KiB is the API server's annotation limit, the other size named beside it.
                sizes = {int(size) for size in re.findall(r"(\d+) KiB", flat)} - {256}
                assert sizes <= {kib}, f"{doc.name}: {flat[:200]}"
                seen += len(sizes)
    assert seen >= 2, "docs/gitops.md and docs/monitoring.md both name the threshold"


def test_training_queues_hold_only_topology_flavors_as_kueue_md_says() -> None:
    text = (DOCS / "kueue.md").read_text()
    assert "still mix" not in text
    for env in ("staging", "prod"):
        objects = rendered_objects(env).values()
        topology = {
            o["metadata"]["name"]
            for o in objects
            if o["kind"] == "ResourceFlavor" and o["spec"].get("topologyName")
        }
        queues = {
            o["metadata"]["name"]: {f["name"] for g in o["spec"]["resourceGroups"] for f in g["flavors"]}
            for o in objects
            if o["kind"] == "ClusterQueue"
        }
        training = {name: flavors for name, flavors in queues.items() if flavors & topology}
        assert topology and training, env
        for name, flavors in training.items():  # a queue with a topology flavor has no other
            assert flavors <= topology, (env, name, sorted(flavors - topology))
