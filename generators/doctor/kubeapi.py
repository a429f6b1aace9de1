"""A read-only Kubernetes API client from a kubeconfig, in the standard library.

The generators' runtime dependencies carry no Kubernetes client (the official one is a dev
dependency, for the gate and the tests), so doctor reads the kubeconfig itself, as kubectl
does (k8s.io/client-go tools/clientcmd):
- files: --kubeconfig, else every file of $KUBECONFIG (path-list separated, missing ones
  skipped), else ~/.kube/config; merged by name, the first file to define a cluster, user
  or context wins, and the first current-context set wins; relative file references resolve
  against the file that names them;
- server trust: certificate-authority(-data), insecure-skip-tls-verify;
- credentials: client-certificate(-data) and client-key(-data), token, tokenFile,
  username/password, and exec plugins (client.authentication.k8s.io ExecCredential: a token
  or a client certificate), which is how the managed offerings log in
  (gke-gcloud-auth-plugin, aws eks get-token, kubelogin);
- proxy-url.
A kubeconfig naming something else (an auth-provider: removed from kubectl in 1.26; a
tls-server-name) is refused with one line rather than read half-way.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generators.k8s.objects import Obj

PAGE = 500  # list page size: a large cluster's nodes arrive in a few requests
EXEC_TIMEOUT_SECONDS = 60  # an exec plugin may open a browser-less token refresh


class KubeconfigError(Exception):
    """The kubeconfig cannot be read or names what this client does not do; `fix` says what to
    do about it."""

    def __init__(self, what: str, fix: str = "pass --kubeconfig FILE and --context NAME") -> None:
        super().__init__(what)
        self.fix = fix


class Unreachable(Exception):
    """The API server did not answer, or refused a read doctor needs."""


def default_paths(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """kubectl's kubeconfig files when --kubeconfig is not given."""
    listed = environ.get("KUBECONFIG", "")
    if listed:
        return [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


@dataclass
class Merged:
    clusters: dict[str, tuple[Obj, Path]] = field(default_factory=dict)
    users: dict[str, tuple[Obj, Path]] = field(default_factory=dict)
    contexts: dict[str, Obj] = field(default_factory=dict)
    current: str = ""


def _merge(paths: list[Path], explicit: bool) -> Merged:
    merged = Merged()
    read = 0
    for path in paths:
        if not path.is_file():
            if explicit:
                raise KubeconfigError(f"{path}: no such file")
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            raise KubeconfigError(f"{path}: not a readable kubeconfig ({str(err).splitlines()[0]})") from None
        if not isinstance(data, dict):
            raise KubeconfigError(f"{path}: not a kubeconfig (a mapping with clusters, users, contexts)")
        read += 1
        base = path.resolve().parent
        for key, into, inner in (("clusters", merged.clusters, "cluster"), ("users", merged.users, "user")):
            for entry in data.get(key) or []:
                if isinstance(entry, dict) and isinstance(entry.get(inner), dict):
                    into.setdefault(str(entry.get("name")), (entry[inner], base))
        for entry in data.get("contexts") or []:
            if isinstance(entry, dict) and isinstance(entry.get("context"), dict):
                merged.contexts.setdefault(str(entry.get("name")), entry["context"])
        merged.current = merged.current or str(data.get("current-context") or "")
    if not read:
        raise KubeconfigError(
            f"no kubeconfig at {os.pathsep.join(map(str, paths))}", "pass --kubeconfig FILE or set KUBECONFIG"
        )
    return merged


def _file(value: Any, base: Path) -> Path:
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else base / path


def _data(entry: Obj, key: str, base: Path) -> bytes | None:
    """`<key>-data` (base64) or the file `<key>` names, if either is set."""
    if entry.get(f"{key}-data"):
        return base64.b64decode(str(entry[f"{key}-data"]))
    if entry.get(key):
        path = _file(entry[key], base)
        try:
            return path.read_bytes()
        except OSError as err:
            raise KubeconfigError(f"{key} {path}: {err.strerror}") from None
    return None


@dataclass
class Credentials:
    headers: dict[str, str] = field(default_factory=dict)
    cert: bytes | None = None
    key: bytes | None = None


def _exec(spec: Obj, cluster: Obj) -> Credentials:
    """Run a client-go exec credential plugin and read its ExecCredential status."""
    command = spec.get("command")
    if not command:
        raise KubeconfigError("user.exec has no command")
    api_version = str(spec.get("apiVersion") or "client.authentication.k8s.io/v1")
    info: Obj = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = {
            "server": cluster.get("server"),
            "certificate-authority-data": cluster.get("certificate-authority-data"),
            "insecure-skip-tls-verify": bool(cluster.get("insecure-skip-tls-verify")),
        }
    env = dict(os.environ, KUBERNETES_EXEC_INFO=json.dumps(info))
    env.update({str(e["name"]): str(e["value"]) for e in spec.get("env") or [] if isinstance(e, dict)})
    argv = [str(command), *(str(a) for a in spec.get("args") or [])]
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=EXEC_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise KubeconfigError(f"exec plugin {argv[0]}: {err}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise KubeconfigError(f"exec plugin {argv[0]} exited {done.returncode}: {last}")
    try:
        status = json.loads(done.stdout).get("status") or {}
    except (json.JSONDecodeError, AttributeError):
        raise KubeconfigError(f"exec plugin {argv[0]} printed no ExecCredential JSON") from None
    if status.get("token"):
        return Credentials({"Authorization": f"Bearer {status['token']}"})
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return Credentials(
            cert=str(status["clientCertificateData"]).encode(), key=str(status["clientKeyData"]).encode()
        )
    raise KubeconfigError(f"exec plugin {argv[0]} returned neither a token nor a client certificate")


def _credentials(user: Obj, base: Path, cluster: Obj) -> Credentials:
    if user.get("auth-provider"):
        name = (user["auth-provider"] or {}).get("name", "?")
        raise KubeconfigError(
            f"auth-provider {name} is not supported (kubectl dropped it in 1.26): use its exec "
            "plugin (e.g. gke-gcloud-auth-plugin, kubelogin)"
        )
    if user.get("exec"):
        return _exec(user["exec"], cluster)
    found = Credentials(cert=_data(user, "client-certificate", base), key=_data(user, "client-key", base))
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = _file(user["tokenFile"], base).read_text(encoding="utf-8").strip()
        except OSError as err:
            raise KubeconfigError(f"tokenFile {user['tokenFile']}: {err.strerror}") from None
    if token:
        found.headers["Authorization"] = f"Bearer {token}"
    elif user.get("username"):
        pair = f"{user['username']}:{user.get('password', '')}".encode()
        found.headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    return found


def _tls(cluster: Obj, base: Path, creds: Credentials) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        authority = _data(cluster, "certificate-authority", base)
        if authority is not None:
            context.load_verify_locations(cadata=authority.decode("ascii", "replace"))
    if (creds.cert is None) != (creds.key is None):
        raise KubeconfigError("a client certificate needs its key (client-key) and the key its certificate")
    if creds.cert is not None and creds.key is not None:
        # ssl loads a chain only from files: written for the moment of loading, then removed.
        with tempfile.TemporaryDirectory(prefix="trainyard-doctor-") as scratch:
            cert, key = Path(scratch, "cert.pem"), Path(scratch, "key.pem")
            cert.write_bytes(creds.cert)
            key.touch(mode=0o600)
            key.write_bytes(creds.key)
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as err:
                raise KubeconfigError(f"client certificate or key unreadable: {err.reason}") from None
    return context


@dataclass
class Api:
    """GETs against one API server; bodies are plain dicts."""

    server: str  # https://host:port, no trailing slash
    context_name: str
    opener: urllib.request.OpenerDirector
    headers: dict[str, str]
    timeout: float

    def get(self, path: str, query: Mapping[str, str] | None = None) -> Obj | None:
        """The decoded body of GET `path`; None when the server says 404 (not there, or not
        served). Anything but 200 or 404, or no answer, raises Unreachable."""
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json", **self.headers})
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                body: Obj = json.loads(response.read())
                return body
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            message = _status_message(err)
            raise Unreachable(
                f"GET {path}: {err.code} {err.reason}{': ' + message if message else ''}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise Unreachable(f"{self.server}: {reason}") from None

    def list(self, path: str, label_selector: str | None = None) -> list[Obj] | None:
        """Every item of a list, page by page; None when the resource is not served."""
        items: list[Obj] = []
        query = {"limit": str(PAGE)}
        if label_selector:
            query["labelSelector"] = label_selector
        while True:
            page = self.get(path, query)
            if page is None:
                return None
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = token


def _status_message(err: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(err.read()).get("message", ""))
    except (ValueError, AttributeError, OSError):
        return ""


def connect(kubeconfig: Path | None, context: str | None, timeout: float) -> Api:
    """An Api for `context` (default: the current context) of the kubeconfig kubectl would
    read, or of `kubeconfig` when given (then it must exist)."""
    if kubeconfig is not None:
        return _connect(_merge([kubeconfig], explicit=True), context, timeout)
    return connect_paths(default_paths(), context, timeout)


def connect_paths(paths: list[Path], context: str | None, timeout: float) -> Api:
    """connect() over a kubeconfig list such as $KUBECONFIG's (missing files skipped)."""
    return _connect(_merge(paths, explicit=False), context, timeout)


def _connect(merged: Merged, context: str | None, timeout: float) -> Api:
    name = context or merged.current
    if not name:
        raise KubeconfigError("the kubeconfig sets no current-context", "pass --context NAME")
    if name not in merged.contexts:
        known = ", ".join(sorted(merged.contexts)) or "none"
        raise KubeconfigError(f"no context {name!r}", f"pass --context with one of: {known}")
    chosen = merged.contexts[name]
    cluster_name, user_name = str(chosen.get("cluster", "")), str(chosen.get("user", ""))
    if cluster_name not in merged.clusters:
        raise KubeconfigError(f"context {name!r} names cluster {cluster_name!r}, which no kubeconfig defines")
    cluster, cluster_base = merged.clusters[cluster_name]
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"cluster {cluster_name!r} has no http(s) server URL")
    user, user_base = merged.users.get(user_name, ({}, cluster_base))
    creds = _credentials(user, user_base, cluster)
    if cluster.get("tls-server-name"):
        raise KubeconfigError(
            f"cluster {cluster_name!r} sets tls-server-name, which doctor does not support: "
            "use a server URL whose host the serving certificate names"
        )
    tls = _tls(cluster, cluster_base, creds)
    handlers: list[urllib.request.BaseHandler] = [urllib.request.HTTPSHandler(context=tls)]
    proxy = cluster.get("proxy-url")
    # No proxy-url: the environment's HTTPS_PROXY/NO_PROXY, as client-go's ProxyFromEnvironment.
    handlers.append(urllib.request.ProxyHandler({"https": proxy, "http": proxy} if proxy else None))
    opener = urllib.request.build_opener(*handlers)
    return Api(server, name, opener, creds.headers, timeout)
