"""generators/doctor/kubeapi.py: the kubeconfig read as kubectl reads it (no server needed:
what `connect` resolves is checked on the Api it returns; talking to a real API server is
tests/doctor/test_cluster_controlplane.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.doctor import kubeapi


def kubeconfig(
    path: Path,
    clusters: dict[str, str],
    users: dict[str, Any],
    contexts: dict[str, tuple[str, str]],
    current: str | None,
) -> Path:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": n, "cluster": {"server": s, "insecure-skip-tls-verify": True}}
            for n, s in clusters.items()
        ],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in contexts.items()],
    }
    if current:
        config["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubeconfig_list_first_definition_wins(tmp_path: Path) -> None:
    """$KUBECONFIG: missing files skipped, the first file defining a name wins, the first
    current-context set wins (client-go clientcmd's merge)."""
    first = kubeconfig(
        tmp_path / "a", {"c": "https://first:6443"}, {"u": {"token": "one"}}, {"x": ("c", "u")}, None
    )
    second = kubeconfig(
        tmp_path / "b", {"c": "https://second:6443"}, {"u": {"token": "two"}}, {"x": ("c", "u")}, "x"
    )
    environ = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "absent"), str(first), str(second)])}
    paths = kubeapi.default_paths(environ)
    assert paths == [tmp_path / "absent", first, second]
    api = kubeapi.connect_paths(paths, None, 5)
    assert (api.server, api.context_name, api.headers) == (
        "https://first:6443",
        "x",
        {"Authorization": "Bearer one"},
    )


def test_default_is_the_home_kubeconfig() -> None:
    assert kubeapi.default_paths({}) == [Path("~/.kube/config").expanduser()]


def test_token_file_relative_to_its_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "token").write_text("from-file\n")
    path = kubeconfig(
        tmp_path / "conf" / "config",
        {"c": "https://h:6443/"},
        {"u": {"tokenFile": "token"}},
        {"x": ("c", "u")},
        "x",
    )
    api = kubeapi.connect(path, None, 5)
    assert (api.server, api.headers) == ("https://h:6443", {"Authorization": "Bearer from-file"})


def test_exec_plugin_token(tmp_path: Path) -> None:
    credential = json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"token": "t0k"},
        }
    )
    plugin = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", f"print({credential!r})"],
        }
    }
    path = kubeconfig(tmp_path / "config", {"c": "https://h:6443"}, {"u": plugin}, {"x": ("c", "u")}, "x")
    assert kubeapi.connect(path, None, 5).headers == {"Authorization": "Bearer t0k"}


@pytest.mark.parametrize(
    ("user", "what"),
    [
        (
            {"auth-provider": {"name": "gcp"}},
            "auth-provider gcp is not supported (kubectl dropped it in 1.26)",
        ),
        (
            {"exec": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('expired login')"]}},
            f"exec plugin {sys.executable} exited 1: expired login",
        ),
        ({"client-certificate-data": "AAAA"}, "a client certificate needs its key"),
    ],
)
def test_refused_users(tmp_path: Path, user: dict[str, Any], what: str) -> None:
    path = kubeconfig(tmp_path / "config", {"c": "https://h:6443"}, {"u": user}, {"x": ("c", "u")}, "x")
    with pytest.raises(kubeapi.KubeconfigError) as refused:
        kubeapi.connect(path, None, 5)
    assert str(refused.value).startswith(what), refused.value


def test_context_naming_an_undefined_cluster(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", {}, {"u": {}}, {"x": ("gone", "u")}, "x")
    with pytest.raises(
        kubeapi.KubeconfigError, match="context 'x' names cluster 'gone', which no kubeconfig defines"
    ):
        kubeapi.connect(path, None, 5)
