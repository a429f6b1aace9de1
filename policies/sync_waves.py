"""Argo CD applies things in an order Kueue and Kubernetes accept.

Every object carries an integer argocd.argoproj.io/sync-wave. ResourceFlavors, Topologies
and Cohorts come in an earlier wave than any ClusterQueue (a queue naming a missing flavor
goes inactive), ClusterQueues earlier than any LocalQueue (spec.clusterQueue is immutable
and must resolve), and a rendered Namespace earlier than the objects in it. Argo CD waits
for a wave to be healthy before the next, and prunes in reverse.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

from policies.context import SYNC_WAVE, Context, Finding, RenderedObject

ID = "sync-waves"
RATIONALE = (
    "Argo CD applies wave by wave, so an object must come in a later wave than "
    "everything it depends on, or the first sync of a cluster fails or half-applies"
)
SEVERITY = "error"
# Each stage must be in strictly earlier waves than the next.
STAGES: tuple[tuple[str, ...], ...] = (
    ("ResourceFlavor", "Topology", "Cohort"),
    ("ClusterQueue",),
    ("LocalQueue",),
)
_INTEGER = re.compile(r"^-?[0-9]+$")


def wave(item: RenderedObject) -> int | None:
    raw = item.annotations.get(SYNC_WAVE)
    text = str(raw).strip() if raw is not None else ""
    return int(text) if _INTEGER.match(text) else None


def check(ctx: Context) -> Iterable[Finding]:
    waves: dict[RenderedObject, int] = {}
    for item in ctx.objects:
        value = wave(item)
        if value is None:
            raw = item.annotations.get(SYNC_WAVE)
            yield item.finding(
                f"annotation {SYNC_WAVE} is " + ("missing" if raw is None else f"{raw!r}, not an integer")
            )
        else:
            waves[item] = value
    yield from _stages(ctx, waves)
    yield from _namespaces(ctx, waves)


def _stages(ctx: Context, waves: dict[RenderedObject, int]) -> Iterator[Finding]:
    for earlier, later in itertools.pairwise(STAGES):
        before = [(waves[i], i) for i in ctx.of_kind(*earlier) if i in waves]
        if not before:
            continue
        last, last_item = max(before, key=lambda pair: pair[0])
        for item in ctx.of_kind(*later):
            if item in waves and waves[item] <= last:
                yield item.finding(
                    f"sync wave {waves[item]} is not after {last_item.kind} {last_item.name!r} "
                    f"(wave {last}): {'/'.join(earlier)} must be applied before {item.kind}"
                )


def _namespaces(ctx: Context, waves: dict[RenderedObject, int]) -> Iterator[Finding]:
    namespaces = {i.name: i for i in ctx.of_kind("Namespace") if i in waves}
    for item in ctx.objects:
        namespace = namespaces.get(item.namespace or "")
        if namespace is not None and item in waves and waves[item] <= waves[namespace]:
            yield item.finding(
                f"sync wave {waves[item]} is not after its Namespace "
                f"{namespace.name!r} (wave {waves[namespace]})"
            )
