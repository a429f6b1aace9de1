"""Bad overflow sections: one `environments/bad.yaml:line:col: error:` line each, exit 1, and
rendered/ left byte-identical. Positions are computed from the edited text, not typed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.overflow_spec import BASE, OVERFLOW, SECOND_PROVIDER
from tests.support.scratch import repo_with, run_cli, tree_digest

ONE_LINE = re.compile(r"^environments/bad\.yaml:\d+:\d+: error: [^\n]+$")

# (id, old text, new text, marker: where after the edit the error must point, message part);
# cases whose id starts with "2:" edit an environment with a second, dearer provider.
CASES = [
    (
        "close-equals-open",
        "closeWhenFreeGpusAtLeast: 16",
        "closeWhenFreeGpusAtLeast: 4",
        "4",
        "closeWhenFreeGpusAtLeast (4) must be greater than openWhenFreeGpusBelow (4)",
    ),
    (
        "close-below-open",
        "closeWhenFreeGpusAtLeast: 16",
        "closeWhenFreeGpusAtLeast: 3",
        "3",
        "closeWhenFreeGpusAtLeast (3) must be greater than openWhenFreeGpusBelow (4)",
    ),
    (
        "missing-cap",
        "    maxPodsToEvictPerNode: 2\n",
        "",
        "maxPodsToEvictPerNamespace",
        "'maxPodsToEvictPerNode' is a required property",
    ),
    (
        "zero-cap",
        "maxPodsToEvictTotal: 4",
        "maxPodsToEvictTotal: 0",
        "0",
        "number 0 is below the minimum of 1",
    ),
    (
        "unknown-tier",
        "tier: serve",
        "tier: serv",
        "serv",
        "unknown tier 'serv' (overflow.inference[0].tier); did you mean 'serve'?",
    ),
    (
        "training-tier",
        "tier: serve",
        "tier: train",
        "train",
        "tier 'train' is a training tier, not an inference tier",
    ),
    ("namespace-of-no-team", "namespace: web", "namespace: wbe", "wbe", "namespace 'wbe' belongs to no team"),
    (
        "training-namespace",
        "    - namespace: web",
        "    - namespace: alpha",
        "alpha",
        "namespace 'alpha' is a training namespace of team 'alpha': its pods run at a training tier",
    ),
    ("2:duplicate-provider", "name: dear", "name: cheap", "cheap", "duplicate provider name 'cheap'"),
    (
        "2:stagger-too-deep",
        "    openWhenFreeGpusBelow: 4\n",
        "    openWhenFreeGpusBelow: 4\n    staggerFreeGpus: 4\n",
        "4\n    image",
        "provider 'dear' would open only below 0 free GPUs",
    ),
    # Below 1.36 overflow works when the provider's program registers its node closed and
    # labelled (interLink); node-cli's mock cannot, and is refused at its type with the fix.
    (
        "kubernetes-too-old-for-mock",
        '"1.36.2"',
        '"1.35.4"',
        "mock\n",
        "provider 'cheap' of type mock cannot come up closed on Kubernetes 1.35.4",
    ),
    (
        "mock-without-capacity",
        'config: {cpu: "8", memory: 64Gi, pods: "110"}',
        'config: {cpu: "8", memory: 64Gi}',
        "{cpu",
        "'pods' is a required property",
    ),
    ("floating-tag", "tag: 0.1.0", "tag: latest", "latest", "'latest' is refused here"),
    # A tag in the repository once rendered ghcr.io/example/gate:0.1.0:0.1.0.
    (
        "tag-in-repository",
        "repository: ghcr.io/example/gate,",
        "repository: ghcr.io/example/gate:0.1.0,",
        "ghcr.io/example/gate:0.1.0",
        "'ghcr.io/example/gate:0.1.0' is refused here (overflow.gate.image.repository); "
        "write the tag in 'tag:'",
    ),
    (
        "digest-required",
        "overflow:\n  providers:",
        "overflow:\n  requireImageDigests: true\n  providers:",
        "{repository: ghcr.io/example/vk",
        "image ghcr.io/example/vk:v1.13.0 has no digest (nor "
        "ghcr.io/example/gate:0.1.0, registry.k8s.io/descheduler/descheduler:v0.36.0) and "
        "overflow.requireImageDigests is true",
    ),
    (
        "gate-key-is-provider-key",
        "    openWhenFreeGpusBelow: 4\n",
        "    openWhenFreeGpusBelow: 4\n    taintKey: virtual-kubelet.io/provider\n",
        "virtual-kubelet.io",
        "the gate taint key must differ from 'virtual-kubelet.io/provider'",
    ),
    ("min-above-max", "minReplicas: 1", "minReplicas: 5", "5", "minReplicas (5) exceeds maxReplicas (4)"),
    # The adapter turns each selector key into a PromQL label matcher (docs/monitoring.md).
    (
        "selector-not-a-prometheus-label",
        'metric: {name: queue_depth, averageValue: "5"}',
        'metric: {name: queue_depth, selector: {app.kubernetes.io/name: web}, averageValue: "5"}',
        "{app.kubernetes.io/name",
        "'app.kubernetes.io/name' is not a Prometheus label name",
    ),
    (
        "no-inference-service",
        OVERFLOW[OVERFLOW.index("  inference:\n") :],
        "  inference: []\n",
        "[]",
        "no inference service is declared",
    ),
    (
        "no-inference-pool",
        "role: inference\n",
        "role: training\n",
        "prometheusUrl",
        "no pool inference can use: the default free-GPU query would count nothing",
    ),
]


def _with_second_provider(text: str) -> str:
    return text.replace("  gate:\n", SECOND_PROVIDER + "  gate:\n", 1)


def _position(text: str, edited_at: int, marker: str) -> str:
    """line:col (1-based) of the first `marker` at or after offset `edited_at`."""
    offset = text.index(marker, edited_at)
    return f"{text.count(chr(10), 0, offset) + 1}:{offset - text.rfind(chr(10), 0, offset)}"


def test_base_renders_overflow(tmp_path: Path) -> None:
    root = repo_with(tmp_path, BASE)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    infra = root / "rendered" / "bad" / "overflow" / "trainyard-system"
    assert (infra / "deployment-vk-cheap.yaml").is_file()


@pytest.mark.parametrize(("case", "old", "new", "marker", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_overflow_section(
    tmp_path: Path, case: str, old: str, new: str, marker: str, message: str
) -> None:
    base = _with_second_provider(BASE) if case.startswith("2:") else BASE
    edited_at = base.index(old)
    text = base.replace(old, new, 1)
    root = repo_with(tmp_path, text)
    before = tree_digest(root / "rendered")
    code, out, err = run_cli(root, "render", "bad")
    assert code == 1, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert ONE_LINE.match(lines[0]), lines[0]
    where = _position(text, edited_at, marker)
    assert lines[0].startswith(f"environments/bad.yaml:{where}: error: "), lines[0]
    assert message in lines[0], lines[0]
    assert tree_digest(root / "rendered") == before
    assert not (root / "rendered" / "bad").exists()
