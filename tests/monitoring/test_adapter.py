"""The rendered prometheus-adapter config, read against the adapter's own source.

The keys come from upstream: every key the rendered config uses must be a yaml tag of the
struct it sits in, read from pkg/config/config.go inside the pinned source archive
(../shared/src/prometheus-adapter-v0.12.0.tar.gz), since the adapter reads the file with
yaml.UnmarshalStrict (pkg/config/loader.go:28) and an unknown key would stop it. Which
metrics get a rule comes from the committed HPAs, not from the generator. Behaviour (the
adapter serving the HPA's request) is tests/controlplane/test_prometheus_adapter.py's.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import ROOT, archive
from tools.toolchain import PINS

CONFIG = Path("monitoring") / "monitoring" / "configmap-prometheus-adapter.yaml"
ARCHIVE = "prometheus-adapter-v0.12.0.tar.gz"
# Which struct each level of an external rule is (pkg/config/config.go at v0.12.0).
NESTING = {
    (): "MetricsDiscoveryConfig",
    ("externalRules",): "DiscoveryRule",
    ("externalRules", "resources"): "ResourceMapping",
    ("externalRules", "name"): "NameMapping",
    ("externalRules", "resources", "overrides", "*"): "GroupResource",
}


def _rendered(env: str, relative: Path) -> Any:
    return yaml.safe_load((ROOT / "rendered" / env / relative).read_text(encoding="utf-8"))


def _config(env: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(_rendered(env, CONFIG)["data"]["config.yaml"])
    return config


def _struct_tags() -> dict[str, set[str]]:
    with tarfile.open(archive(ARCHIVE)) as source_archive:
        member = source_archive.extractfile("prometheus-adapter-v0.12.0/pkg/config/config.go")
        assert member is not None
        source = member.read().decode()
    tags: dict[str, set[str]] = {}
    for name, body in re.findall(r"type (\w+) struct \{(.*?)\n\}", source, re.DOTALL):
        tags[name] = set(re.findall(r'yaml:"([^",]+)', body))
    return tags


def _keys(value: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """(struct path, key) of every mapping key, lists stepped through."""
    found = []
    if isinstance(value, list):
        for item in value:
            found += _keys(item, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            found.append((path, key))
            child = (*path, "*") if path and path[-1] == "overrides" else (*path, key)
            found += _keys(item, child)
    return found


@pytest.mark.parametrize("env", ["staging", "prod"])
def test_every_key_is_one_the_adapter_reads(env: str) -> None:
    tags = _struct_tags()
    for path, key in _keys(_config(env), ()):
        if path and path[-1] == "overrides":
            continue  # a Prometheus label name, mapped to a GroupResource
        struct = NESTING[path]
        where = ".".join((*path, key))
        assert key in tags[struct], f"{where}: not a yaml key of {struct} {sorted(tags[struct])}"


@pytest.mark.parametrize("env", ["staging", "prod"])
def test_one_rule_per_metric_the_hpas_name(env: str) -> None:
    hpas = sorted((ROOT / "rendered" / env / "overflow").rglob("horizontalpodautoscaler-*.yaml"))
    names = {
        yaml.safe_load(p.read_text(encoding="utf-8"))["spec"]["metrics"][0]["external"]["metric"]["name"]
        for p in hpas
    }
    rules = _config(env)["externalRules"]
    assert [r["name"]["as"] for r in rules] == sorted(names)
    for rule in rules:
        assert rule["seriesQuery"] == f'{{__name__="{rule["name"]["as"]}",namespace!=""}}'
        overrides = {"namespace": {"resource": "namespace"}}
        assert rule["resources"] == {"overrides": overrides, "namespaced": True}


def test_prod_serves_its_three_metrics() -> None:
    assert [r["name"]["as"] for r in _config("prod")["externalRules"]] == [
        "embeddings_queue_depth",
        "scoring_backlog_items",
        "vllm_num_requests_waiting",
    ]


def test_no_adapter_without_inference_services() -> None:
    assert not list((ROOT / "rendered" / "dev").rglob("*prometheus-adapter*"))
    assert not list((ROOT / "rendered" / "dev").rglob("apiservice-*"))


def test_the_image_is_the_release_the_tests_run() -> None:
    deployment = _rendered("staging", Path("monitoring/monitoring/deployment-prometheus-adapter.yaml"))
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"registry.k8s.io/prometheus-adapter/prometheus-adapter:{PINS['prometheus-adapter']}"


def test_docs_show_the_rendered_staging_config() -> None:
    text = (ROOT / "docs" / "monitoring.md").read_text(encoding="utf-8")
    section = text.split("## External metrics for the HPAs", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    assert yaml.safe_load(block.group(1)) == _config("staging")


def test_none_renders_nothing_for_a_cluster_that_brings_its_own(tmp_path: Path) -> None:
    """`monitoring.externalMetricsAdapter: none` (KEDA or another adapter owns the APIService):
    staging's HPAs stay, nothing of the adapter is rendered, the APIService above all."""
    from generators.model.load import load
    from generators.pipeline.render import objects, render_tree
    from tests.support.scratch import copy_repo

    root = copy_repo(tmp_path, ["environments"])
    path = root / "environments" / "staging.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count("\nmonitoring:\n") == 1
    path.write_text(
        text.replace("\nmonitoring:\n", "\nmonitoring:\n  externalMetricsAdapter: none\n"), encoding="utf-8"
    )
    rendered = objects(render_tree(load(root, "staging")))
    assert [o["metadata"]["name"] for o in rendered if o["kind"] == "HorizontalPodAutoscaler"] == ["chat-api"]
    assert not [o for o in rendered if o["kind"] == "APIService" or "adapter" in o["metadata"]["name"]]
