"""The upstream Helm charts whose values trainyard renders (rendered/<env>/installers/), at
the versions this project has checked: the one home of each chart's version, reference and
release name, read by the rendered values' headers (the install commands), the docs and the
chart tests.

Each version is the archive in ../shared/charts (tools/toolchain.py ARCHIVES names
`<name>-<version>.tgz`) that tests/monitoring/test_charts.py renders with the pinned helm, so a
command can only name a chart the tests have rendered with our values.

Decision: every command carries `--version` (without it helm takes
whatever the repository's newest is, and the values were checked against none of it) and
none carries `--reuse-values`, which keeps the previous release's computed values and so
ignores new chart defaults:
- Kueue's values are the whole install (trainyard owns it): plain `-f`, the release is what
  git says, nothing carried over.
- gpu-operator and kube-prometheus-stack belong to the platform (docs/monitoring.md: trainyard
  does not own those installs), which may have set other values: `--reset-then-reuse-values`
  takes the new chart's defaults, keeps the values the platform last passed, and merges ours
  last. A key trainyard stops rendering stays in the release until the platform passes its own
  values afresh (plain `-f <platform values> -f <ours>`), which is what its own pipeline should do.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    name: str  # the chart's name (Chart.yaml)
    version: str  # exactly as `helm --version` and the archive name take it
    reference: str  # what `helm upgrade --install` takes: an OCI reference or a chart name
    repo: str | None  # --repo URL when the chart is not an OCI reference
    release: str  # the release name the commands and the docs use
    reuse: bool  # keep the platform's values (--reset-then-reuse-values) or not (plain -f)

    @property
    def archive(self) -> str:
        """The archive name in ../shared/charts and tools/toolchain.py ARCHIVES."""
        return f"{self.name}-{self.version}.tgz"

    def command(self, namespace: str, values: str, release: str | None = None) -> str:
        """The install/upgrade command, as it goes into a header or a doc (continuation lines
        indented by four spaces). `release`: a release of this chart someone else installed
        (not ours): then `helm upgrade` without `--install` and `--create-namespace`, which
        fails when no such release exists instead of installing a second one."""
        source = f"{self.reference} --repo {self.repo}" if self.repo else self.reference
        keep = " --reset-then-reuse-values" if self.reuse else ""
        if release is not None and release != self.release:
            return (
                f"helm upgrade {release} {source} --version {self.version} \\\n"
                f"    --namespace {namespace}{keep} -f {values}"
            )
        return (
            f"helm upgrade --install {self.release} {source} --version {self.version} \\\n"
            f"    --namespace {namespace} --create-namespace{keep} -f {values}"
        )


KUEUE = Chart("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts/kueue", None, "kueue", reuse=False)
KUBE_PROMETHEUS_STACK = Chart(
    "kube-prometheus-stack",
    "88.5.3",
    "oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack",
    None,
    "kube-prometheus-stack",
    reuse=True,
)
GPU_OPERATOR = Chart(
    "gpu-operator",
    "v26.7.0",
    "gpu-operator",
    "https://helm.ngc.nvidia.com/nvidia",
    "gpu-operator",
    reuse=True,
)
CHARTS = (KUBE_PROMETHEUS_STACK, GPU_OPERATOR, KUEUE)  # in install order (docs/monitoring.md)
