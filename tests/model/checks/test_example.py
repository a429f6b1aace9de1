"""The shipped examples' placeholders (github.com/example, ghcr.io/example images,
*.example.* hosts) are warnings at their line:col in an environment that is not marked
`example: true`; the environment still renders
(generators/model/checks/example.py, docs/adopting.md). Inputs and expected lines are literals."""

from __future__ import annotations

from pathlib import Path

from tests.support import CORPUS, ROOT
from tests.support.scratch import repo_with, run_cli

HINT = "use your own (docs/adopting.md), or mark an example environment with `example: true`"
OWN = (
    'cluster:\n  kubernetesVersion: "1.36.2"\n  argocd: {repoURL: https://git.acme.test/ml/trainyard.git}\n'
    'monitoring:\n  rules: {runbookUrlPattern: "https://wiki.acme.test/runbooks/%s"}\n'
    'health:\n  runbookUrlPattern: "https://wiki.acme.test/health/%s"\n'
)


def _minimal() -> str:
    return (CORPUS / "valid-minimal.yaml").read_text()


def test_placeholders_warn_at_their_line_and_still_render(tmp_path: Path) -> None:
    text = _minimal().replace(
        'cluster: {kubernetesVersion: "1.36.2"}\n',
        OWN.replace("https://git.acme.test/ml/trainyard.git", "https://github.com/example/trainyard.git"),
    )
    code, _, err = run_cli(repo_with(tmp_path, text), "render", "bad")
    assert code == 0, err
    assert err.splitlines() == [
        "environments/bad.yaml:5:21: warning: 'https://github.com/example/trainyard.git' is a placeholder "
        "of the shipped examples: Argo CD would sync this environment from the example repository, not "
        f"yours (cluster.argocd.repoURL); {HINT}",
    ]
    assert (tmp_path / "rendered" / "bad").is_dir()


def test_a_default_placeholder_says_it_is_the_default(tmp_path: Path) -> None:
    code, _, err = run_cli(repo_with(tmp_path, _minimal()), "render", "bad")
    assert code == 0
    assert (
        "environments/bad.yaml:3:10: warning: the default 'https://github.com/example/trainyard.git' "
        "is a placeholder of the shipped examples"
    ) in err
    assert "(monitoring.rules.runbookUrlPattern)" in err and "(health.runbookUrlPattern)" in err
    assert err.count(": warning: ") == 3


def test_example_true_and_own_values_are_quiet(tmp_path: Path) -> None:
    for folder, text in (
        ("flagged", _minimal() + "example: true\n"),
        ("own", _minimal().replace('cluster: {kubernetesVersion: "1.36.2"}\n', OWN)),
    ):
        (tmp_path / folder).mkdir()
        code, _, err = run_cli(repo_with(tmp_path / folder, text), "render", "bad")
        assert (code, err) == (0, ""), (folder, err)


def test_the_example_images_warn_at_each_use(tmp_path: Path) -> None:
    prod = (ROOT / "environments" / "prod.yaml").read_text()
    text = prod.replace("name: prod\n", "name: bad\n", 1).replace("example: true\n", "", 1)
    code, _, err = run_cli(repo_with(tmp_path, text), "render", "bad")
    assert code == 0, err
    lines = err.splitlines()
    gate = (
        "warning: 'ghcr.io/example/trainyard-gate' is a placeholder of the shipped examples: no "
        "registry serves it: the pods would never start (ImagePullBackOff)"
    )
    at_health, at_gate = _line(text, "health:") + 2, _line(text, "  gate:") + 6
    assert f"environments/bad.yaml:{at_health}:23: {gate} (health.image.repository); {HINT}" in lines, lines
    assert f"environments/bad.yaml:{at_gate}:25: {gate} (overflow.gate.image.repository); {HINT}" in lines
    assert not any("example.com" in line for line in lines)  # hosts are the reader's to fill in


def _line(text: str, start: str) -> int:
    """1-based line number of the first line that is `start`."""
    return text.splitlines().index(start) + 1


def test_the_shipped_examples_are_marked_and_render_quietly(tmp_path: Path) -> None:
    for name in ("dev", "staging", "prod"):
        assert "\nexample: true\n" in (ROOT / "environments" / f"{name}.yaml").read_text()
