"""`generate.py doctor` against the real pinned Prometheus, loaded with series shaped like the
exporters emit them: complete, and with each prerequisite missing.

One TSDB holds every scene, each in its own hour (two hours apart, so Prometheus' 5-minute
lookback never sees the previous scene); doctor evaluates at the end of a scene's hour
(--time). The series are the live-query tests' synthetic cluster (tests/monitoring/
synthetic.py), changed the way a cluster that lacks the prerequisite would change them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from generators.cli import main
from generators.components import monitoring
from generators.model.environment import Environment
from generators.promql.reads import label_uses, selectors
from generators.validation import doctor
from tests.monitoring import synthetic
from tests.monitoring.conftest import ENVIRONMENTS, load_shipped
from tests.support import ROOT, free_port
from tests.support.prometheus import backfill_text, serve

pytestmark = pytest.mark.slow

SCENE_SECONDS = 2 * 3600
Change = Callable[[synthetic.Series], synthetic.Series | None]


def unchanged(s: synthetic.Series) -> synthetic.Series:
    return s


def no_allowlist(s: synthetic.Series) -> synthetic.Series:
    """kube-state-metrics without --metric-labels-allowlist: kube_node_labels has no label_*."""
    if s.name == "kube_node_labels":
        s.labels = {k: v for k, v in s.labels.items() if not k.startswith("label_")}
    return s


def lowercase_host(s: synthetic.Series) -> synthetic.Series:
    """dcgm-exporter with the `hostname` rename (its main branch after 4.8.2)."""
    if "Hostname" in s.labels:
        s.labels["hostname"] = s.labels.pop("Hostname")
    return s


def honor_labels_off(s: synthetic.Series) -> synthetic.Series:
    """A ServiceMonitor without honorLabels: the pod's labels move to exported_*, the target's
    own (the exporter pod) take their place."""
    if s.name.startswith("DCGM_") and "pod" in s.labels:
        for label in ("namespace", "pod", "container"):
            s.labels[f"exported_{label}"] = s.labels.pop(label)
        s.labels.update(
            namespace="gpu-operator", pod="nvidia-dcgm-exporter-x7k2p", container="nvidia-dcgm-exporter"
        )
    return s


def no_profiling(s: synthetic.Series) -> synthetic.Series | None:
    """dcgm-exporter without profiling fields (no SYS_ADMIN, or another profiler holds them)."""
    return None if s.name.startswith("DCGM_FI_PROF_") else s


def no_mountstats(s: synthetic.Series) -> synthetic.Series | None:
    """node_exporter with its defaults: the mountstats collector is off."""
    return None if s.name.startswith("node_mountstats_") else s


def no_health_target(s: synthetic.Series) -> synthetic.Series | None:
    """backend trainyard, but the controller was never applied: no target, no series."""
    return None if s.labels.get("job") == "gpu-health" else s


def health_down(s: synthetic.Series) -> synthetic.Series:
    """The controller's target is discovered but every scrape fails (e.g. a NetworkPolicy)."""
    if s.name == "up" and s.labels.get("job") == "gpu-health":
        s.base = 0
    return s


@dataclass(frozen=True)
class Scene:
    env: str
    change: Change


SCENES = {
    **{f"complete-{name}": Scene(name, unchanged) for name in ENVIRONMENTS},
    "no-allowlist": Scene("prod", no_allowlist),
    "lowercase-host": Scene("prod", lowercase_host),
    "honor-labels-off": Scene("prod", honor_labels_off),
    "no-profiling": Scene("prod", no_profiling),
    "no-mountstats": Scene("dev", no_mountstats),
    "no-health-target": Scene("prod", no_health_target),
    "health-down": Scene("prod", health_down),
}
ORDER = list(SCENES)


def scene_start(scene: str) -> int:
    return synthetic.START + ORDER.index(scene) * SCENE_SECONDS


def scene_time(scene: str) -> str:
    return str(scene_start(scene) + synthetic.STEP * (synthetic.SAMPLES - 1))


def scene_series(env: Environment, scene: str) -> list[synthetic.Series]:
    cluster = synthetic.cluster(env)
    if env.overflow is not None:  # the gate's target, which the live-query tests do not need
        cluster.add(
            "up",
            {"job": "overflow-gate", "namespace": env.overflow.namespace, "instance": "gate:8080"},
            base=1,
        )
    controller = env.health.controller if env.health is not None else None
    if controller is not None:  # the health controller's target (its ServiceMonitor's job)
        cluster.add(
            "up",
            {"job": "gpu-health", "namespace": controller.namespace, "instance": "gpu-health:8080"},
            base=1,
        )
    out = []
    for s in cluster.series:
        changed = SCENES[scene].change(
            synthetic.Series(s.name, {**s.labels, "scene": scene}, s.slope, s.base)
        )
        if changed is not None:
            out.append(changed)
    return out


def openmetrics() -> str:
    families: dict[str, list[str]] = {}
    for scene in ORDER:
        env = load_shipped(SCENES[scene].env).env
        start = scene_start(scene)
        for s in scene_series(env, scene):
            text = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            families.setdefault(s.name, []).extend(
                f"{s.name}{{{text}}} {s.base + s.slope * i:g} {start + synthetic.STEP * i}"
                for i in range(synthetic.SAMPLES)
            )
    return "\n".join(line for name in sorted(families) for line in families[name]) + "\n# EOF\n"


@pytest.fixture(scope="module")
def prometheus(
    promtool: Path, prometheus_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    work = tmp_path_factory.mktemp("doctor-prometheus")
    backfill_text(promtool, work, openmetrics())
    with serve(prometheus_binary, work) as url:
        yield url


def gaps(url: str, scene: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Doctor's lines for `scene`, which lacks a prerequisite: a gap found is exit 1."""
    code, out, _ = run_doctor_err(url, scene, capsys)
    assert code == 1, (code, out)
    return out


def run_doctor_err(url: str, scene: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    capsys.readouterr()
    env = SCENES[scene].env
    code = main(["-C", str(ROOT), "doctor", env, "--prometheus", url, "--time", scene_time(scene)])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_complete_cluster_is_clean(name: str, prometheus: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = run_doctor_err(prometheus, f"complete-{name}", capsys)
    assert (code, lines) == (0, [])
    fams = doctor.families(load_shipped(name).env)
    summary = re.fullmatch(
        rf"{name}: no gaps \((\d+) metrics and (\d+) labels checked at {prometheus}\)\n", err
    )
    assert summary, err
    # every metric; the labels of every metric present (event-only families may be absent)
    assert int(summary[1]) == len(fams) and 100 < int(summary[2]) <= sum(len(f.labels) for f in fams)


def test_a_scene_is_invisible_at_another_scenes_time(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scenes do not leak into each other: at an hour with no data, every target is missing."""
    capsys.readouterr()
    code = main(
        [
            "-C",
            str(ROOT),
            "doctor",
            "dev",
            "--prometheus",
            prometheus,
            "--time",
            str(scene_start(ORDER[-1]) + SCENE_SECONDS),
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines and all(line.startswith("no ") and " target: " in line for line in lines), lines
    # what the stack's Prometheus selects, with its chart's defaults (dev: the default release)
    assert all("label its ServiceMonitor release: kube-prometheus-stack" in line for line in lines), lines


def test_kube_state_metrics_without_the_allowlist_names_the_flag(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = gaps(prometheus, "no-allowlist", capsys)
    env = load_shipped("prod").env
    fragment = "rendered/prod/installers/kube-prometheus-stack-values.yaml"
    assert lines == [
        f"kube_node_labels has no {label}: add {monitoring.ksm_allowlist(env)} to kube-state-metrics "
        f"--metric-labels-allowlist ({fragment})"
        for label in sorted(monitoring.ksm_node_labels(env))
    ]
    assert "nodes=[nvidia.com/gpu.product,trainyard.dev/pool]" in lines[0]


def test_lowercase_host_label_under_a_hostname_spec_names_the_fix(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = gaps(prometheus, "lowercase-host", capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith("DCGM series carry hostname, not Hostname: ")
    assert "monitoring.exporters.dcgmExporter" in lines[0] and "generators/model/exporters.py" in lines[0]
    assert lines[0].endswith(
        "(outside 4.5.0 to 4.8.2, state monitoring.exporters.labelContract."
        "dcgmExporter.hostLabel: hostname; generators/model/exporters.py)"
    ), lines[0]


# Scenes whose whole report is one line: the gap, and the fix it names.
ONE_LINE_GAPS = {
    "honor-labels-off": (
        "DCGM series carry exported_namespace/exported_pod: the dcgm-exporter ServiceMonitor lacks "
        "honorLabels: true, so namespace/pod name the exporter's pod; set "
        "dcgmExporter.serviceMonitor.honorLabels: true (rendered/prod/installers/gpu-operator-values.yaml)"
    ),
    "no-mountstats": (
        "node_mountstats_nfs_write_bytes_total absent: node_exporter's mountstats collector is off by "
        "default: add --collector.mountstats (prometheus-node-exporter.extraArgs in "
        "rendered/dev/installers/kube-prometheus-stack-values.yaml), and an NFS mount"
    ),
    # prod runs health.backend trainyard in trainyard-system; its eleven trainyard_health_*
    # families are the controller's (not the checkpoint query's): one gap, the target.
    "no-health-target": (
        'no gpu-health target: nothing Prometheus scrapes matches {job="gpu-health", '
        'namespace="trainyard-system"}: health.backend is trainyard, so apply rendered/prod/health/ '
        "(its Deployment, Service and ServiceMonitor); the quarantine dashboard and the GpuHealth* "
        "alerts read its series"
    ),
    "health-down": (
        'gpu-health target down: Prometheus finds {job="gpu-health", namespace="trainyard-system"} but '
        "up == 0: check that its pods run and that the port its ServiceMonitor names answers"
    ),
}


@pytest.mark.parametrize("scene", ONE_LINE_GAPS)
def test_a_missing_prerequisite_is_one_line_naming_the_fix(
    scene: str, prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gaps(prometheus, scene, capsys) == [ONE_LINE_GAPS[scene]]


def test_missing_profiling_fields_name_what_they_need(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = gaps(prometheus, "no-profiling", capsys)
    read = {f.name for f in doctor.families(load_shipped("prod").env) if f.name.startswith("DCGM_FI_PROF_")}
    assert {line.split(" ", 1)[0] for line in lines} == read
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in read
    for line in lines:
        assert " absent: profiling metrics need " in line and "SYS_ADMIN" in line
        assert "rendered/prod/installers/gpu-operator-values.yaml" in line


def unreachable(url: str) -> str:
    """The error of `generate.py doctor` at a URL nothing answers: exit 2, one line, no report."""
    done = subprocess.run(
        [sys.executable, "generate.py", "doctor", "dev", "--prometheus", url, "--timeout", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("generate.py doctor: error: cannot reach")
    return done.stderr


def test_unreachable_prometheus_is_exit_2_with_one_line() -> None:
    unreachable(f"http://127.0.0.1:{free_port()}")  # nothing listens there


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-C", str(ROOT), "doctor", "dev", "--prometheus", "prometheus:9090"]) == 2
    assert main(["-C", str(ROOT), "doctor", "nope", "--prometheus", "http://x"]) == 2


def test_the_checked_list_is_read_from_the_shipped_expressions() -> None:
    """No second list: every selector and label the expressions read is in families(), and a
    metric only a new panel would read shows up there without touching doctor."""
    env = load_shipped("prod").env
    fams = {(f.name, label) for f in doctor.families(env) for label in f.labels}
    names = {f.name for f in doctor.families(env)}
    for expr in doctor.expressions(env):
        assert {s.name for s in selectors(expr)} - {"up"} <= names
        assert {(u.selector.name, u.label) for u in label_uses(expr) if u.selector.name != "up"} <= fams
    assert ("DCGM_FI_DEV_GPU_TEMP", "Hostname") in fams
    assert ("kube_node_labels", "label_trainyard_dev_pool") in fams


def test_event_only_families_are_ones_the_expressions_read() -> None:
    read = {f.name for name in ENVIRONMENTS for f in doctor.families(load_shipped(name).env)}
    assert set(doctor.EVENT_ONLY) <= read, set(doctor.EVENT_ONLY) - read


def test_health_series_belong_to_the_controller_not_the_checkpoint_query() -> None:
    owners = {f.name: f.exporter for f in doctor.families(load_shipped("prod").env)}
    health = {name: owner for name, owner in owners.items() if name.startswith("trainyard_health_")}
    assert len(health) == 11 and set(health.values()) == {"gpu-health"}, health


def test_an_unreachable_in_cluster_url_gets_the_port_forward_hint() -> None:
    error = unreachable("http://prometheus-operated.monitoring.svc:9090")  # resolves only in a cluster
    assert error.rstrip().endswith(
        "hint: http://prometheus-operated.monitoring.svc:9090 is a cluster-internal name; from outside "
        "the cluster run `kubectl -n monitoring port-forward svc/prometheus-operated 9090` and pass "
        "--prometheus http://localhost:9090"
    ), error
