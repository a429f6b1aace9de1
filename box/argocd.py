"""The real Argo CD v3.5.1 beside the box: what `box up ENV --argocd` deploys with.

Argo CD runs as upstream's install runs it, minus what the box does not need:
- the application controller and the repo server, as host processes of the pinned build
  (tools/install.py `argocd`, one multi-call binary: $ARGOCD_BINARY_NAME picks the component,
  cmd/main.go), and a Redis (the pinned miniredis, the Redis Argo CD itself runs for
  `argocd --core`); no API server, UI, Dex, notifications or ApplicationSet controller;
- the ServiceAccounts, RBAC, ConfigMaps and Secret of upstream's manifests/core-install.yaml
  (read from the pinned source archive) for those two components, in the namespace the
  environment names (`cluster.argocd.namespace`). Their Deployments, StatefulSet, Services
  and NetworkPolicies are left out: the processes stand in for the pods;
- the destination cluster registered as `argocd cluster add` registers one: a ServiceAccount
  `argocd-manager` in kube-system bound to upstream's argocd-manager-role
  (util/clusterauth/clusterauth.go:29-40) and a cluster Secret holding its token and the
  cluster CA, for the environment Application's destination (the box's apiserver URL,
  box/argocd_repo.py);
- the controller's own cluster (the bootstrap Application's https://kubernetes.default.svc)
  is the box too: outside a pod, Argo CD's ARGOCD_FAKE_IN_CLUSTER=true reads the in-cluster
  destination from $KUBECONFIG (pkg/apis/application/v1alpha1/types.go:3971), here the
  controller's ServiceAccount token, so it acts with exactly upstream's RBAC.

Flags and environment, from upstream's manifests where they apply and otherwise as they were
found to run here (../shared/src/SOURCES.txt, entry 4): the repo server with
`--disable-tls --client-ca-path=` (it refuses --disable-tls with a client CA path), GPG off,
and upstream's hack/git-verify-wrapper.sh and hack/gpg-wrapper.sh on PATH (the repo server
always runs the first, reposerver/repository/repository.go:535); the controller with
`--repo-server-plaintext`. Every listener but the controller's metrics (it binds 0.0.0.0,
controller/appcontroller.go:321) is on 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from box import memo
from box.daemon import Daemon, free_port
from box.kube import Kube, Obj
from tools.toolchain import ARCHIVES, PINS, archive_path, tool_path

API = "argoproj.io/v1alpha1"
VERSION = PINS["argocd"].lstrip("v")
ARCHIVE = f"argo-cd-{VERSION}.tar.gz"
TOP = f"argo-cd-{VERSION}/"
INSTALL = f"{TOP}manifests/core-install.yaml"
SCRIPTS = (f"{TOP}hack/git-verify-wrapper.sh", f"{TOP}hack/gpg-wrapper.sh")
# Upstream's components the box runs (app.kubernetes.io/component of their RBAC); objects
# without a component label are the shared configuration (argocd-cm, argocd-secret, ...).
COMPONENTS = {"application-controller", "repo-server"}
KINDS = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Secret"}
CONTROLLER_ACCOUNT = "argocd-application-controller"
# What `argocd cluster add` creates in the destination (util/clusterauth/clusterauth.go:21-40).
MANAGER_ACCOUNT = "argocd-manager"
MANAGER_NAMESPACE = "kube-system"
MANAGER_ROLE = "argocd-manager-role"
CLUSTER_SECRET_TYPE = "argocd.argoproj.io/secret-type"
READY_SECONDS = 180  # a cold start of the 280 MB binary on a busy machine
IN_CLUSTER = "https://kubernetes.default.svc"
FINISHED = ("Succeeded", "Failed", "Error")  # an operation's terminal phases

Say = Callable[[str], None]


def _install_parts() -> dict[str, Any]:
    """Upstream's objects for the components the box runs, and the two hack/ scripts."""
    with tarfile.open(archive_path(ARCHIVE)) as tar:
        wanted = {INSTALL, *SCRIPTS}
        texts: dict[str, str] = {}
        for member in tar:
            if member.name in wanted:
                handle = tar.extractfile(member)
                assert handle is not None
                texts[member.name] = handle.read().decode()
    objects = []
    # Split first and parse only what is kept: the CRDs are most of the 1.9 MB.
    for document in texts[INSTALL].split("\n---\n"):
        if "kind: CustomResourceDefinition" in document:
            continue
        obj = yaml.safe_load(document)
        if not obj or obj.get("kind") not in KINDS:
            continue
        component = ((obj.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/component")
        if component is None or component in COMPONENTS:
            objects.append(obj)
    return {"objects": objects, "scripts": {Path(name).name: texts[name] for name in SCRIPTS}}


def install_parts() -> dict[str, Any]:
    """`_install_parts()`, parsed once per archive (box/memo.py)."""
    return memo.memo("argocd-install", [ARCHIVE, ARCHIVES[ARCHIVE][1]], _install_parts)  # type: ignore[no-any-return]


def upstream_objects(namespace: str, settings: dict[str, str]) -> list[Obj]:
    """Upstream's RBAC and configuration for the controller and the repo server, placed in
    `namespace`; `settings` are added to argocd-cm's data; argocd-secret gets the
    server.secretkey the settings manager insists on (util/settings/settings.go)."""
    placed = []
    for obj in install_parts()["objects"]:
        obj = json.loads(json.dumps(obj))
        kind, meta = obj["kind"], obj["metadata"]
        if kind not in ("ClusterRole", "ClusterRoleBinding"):
            meta["namespace"] = namespace
        for subject in obj.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount":
                subject["namespace"] = namespace
        if kind == "ConfigMap" and meta["name"] == "argocd-cm":
            obj["data"] = {**(obj.get("data") or {}), **settings}
        if kind == "Secret" and meta["name"] == "argocd-secret":
            obj["stringData"] = {"server.secretkey": secrets.token_urlsafe(32)}
        placed.append(obj)
    return placed


def manager_objects() -> list[Obj]:
    """The ServiceAccount and cluster-wide role `argocd cluster add` creates in a destination."""
    rules = [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": MANAGER_ACCOUNT, "namespace": MANAGER_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": MANAGER_ROLE},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{MANAGER_ROLE}-binding"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MANAGER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": MANAGER_ACCOUNT, "namespace": MANAGER_NAMESPACE}],
        },
    ]


def cluster_secret(namespace: str, name: str, server: str, token: str, ca_pem: bytes) -> Obj:
    """A declarative cluster Secret (Argo CD's docs, operator-manual/declarative-setup.md)."""
    config = {"bearerToken": token, "tlsClientConfig": {"caData": base64.b64encode(ca_pem).decode()}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": namespace,
            "labels": {CLUSTER_SECRET_TYPE: "cluster"},
        },
        "stringData": {"name": name, "server": server, "config": json.dumps(config)},
    }


def apiserver(kubeconfig: Path) -> tuple[str, bytes]:
    """The apiserver URL and CA certificate (PEM) of an admin kubeconfig."""
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    cluster = config["clusters"][0]["cluster"]
    if "certificate-authority-data" in cluster:
        ca = base64.b64decode(cluster["certificate-authority-data"])
    else:
        ca = (kubeconfig.parent / cluster["certificate-authority"]).read_bytes()
    return cluster["server"], ca


@dataclass(frozen=True)
class Processes:
    """The three processes, not started."""

    redis: Daemon
    repo_server: Daemon
    controller: Daemon

    def all(self) -> tuple[Daemon, Daemon, Daemon]:
        return self.redis, self.repo_server, self.controller

    def health_urls(self) -> dict[str, str]:
        return {
            self.repo_server.name: f"http://127.0.0.1:{self.repo_server.ports[1]}/healthz",
            self.controller.name: f"http://127.0.0.1:{self.controller.ports[0]}/healthz",
        }


def processes(folder: Path, namespace: str, controller_kubeconfig: Path) -> Processes:
    """Redis, the repo server and the application controller (Daemons, not started)."""
    binary = str(tool_path("argocd"))
    folder.mkdir(parents=True, exist_ok=True)
    hack = folder / "bin"
    hack.mkdir(exist_ok=True)
    for name, text in install_parts()["scripts"].items():
        script = hack / name
        script.write_text(text, encoding="utf-8")
        script.chmod(0o755)
    home = folder / "home"  # git and gpg keep their state here, not in the user's home
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    redis_port = free_port()
    redis = Daemon(
        "argocd-redis",
        [str(tool_path("miniredis")), f"-addr=127.0.0.1:{redis_port}"],
        folder / "redis.log",
        ports=(redis_port,),
    )
    redis_address = f"127.0.0.1:{redis_port}"
    base = {**os.environ, "HOME": str(home), "TMPDIR": str(home / "tmp")}
    repo_port, repo_metrics = free_port(), free_port()
    repo_server = Daemon(
        "argocd-repo-server",
        [
            binary,
            "--address=127.0.0.1",
            f"--port={repo_port}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={repo_metrics}",
            "--disable-tls",
            "--client-ca-path=",
            f"--redis={redis_address}",
        ],
        folder / "repo-server.log",
        ports=(repo_port, repo_metrics),
        env={
            **base,
            "ARGOCD_BINARY_NAME": "argocd-repo-server",
            "ARGOCD_GPG_ENABLED": "false",
            "PATH": f"{hack}{os.pathsep}{os.environ.get('PATH', '')}",
        },
        cwd=home,
    )
    controller_metrics = free_port()
    controller = Daemon(
        "argocd-application-controller",
        [
            binary,
            f"--kubeconfig={controller_kubeconfig}",
            f"--namespace={namespace}",
            f"--repo-server=127.0.0.1:{repo_port}",
            "--repo-server-plaintext",
            f"--redis={redis_address}",
            f"--metrics-port={controller_metrics}",
        ],
        folder / "application-controller.log",
        ports=(controller_metrics,),
        env={
            **base,
            "ARGOCD_BINARY_NAME": "argocd-application-controller",
            "ARGOCD_FAKE_IN_CLUSTER": "true",
            "KUBECONFIG": str(controller_kubeconfig),
        },
        cwd=home,
    )
    return Processes(redis, repo_server, controller)


def kubectl_apply(kubeconfig: Path, *paths: Path) -> str:
    """`kubectl apply -R -f PATH...`, as docs/adopting.md tells a user to apply the bootstrap."""
    files = [argument for path in paths for argument in ("-f", str(path))]
    done = subprocess.run(
        [str(tool_path("kubectl")), f"--kubeconfig={kubeconfig}", "apply", "-R", *files],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"kubectl apply -R {' '.join(files)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
    return done.stdout


# ------------------------------------------------------------------ reading what Argo CD reports


def application(kube: Kube, namespace: str, name: str) -> Obj | None:
    return kube.get(API, "Application", name, namespace)


def sync_status(app: Obj) -> str:
    return str(((app.get("status") or {}).get("sync") or {}).get("status") or "Unknown")


def health_status(app: Obj) -> str:
    return str(((app.get("status") or {}).get("health") or {}).get("status") or "Unknown")


def operation_state(app: Obj) -> dict[str, Any]:
    return dict((app.get("status") or {}).get("operationState") or {})


def resources(app: Obj) -> list[dict[str, Any]]:
    """status.resources: each managed object with its sync status and health."""
    return list((app.get("status") or {}).get("resources") or [])


def resource_name(resource: dict[str, Any]) -> str:
    namespace = resource.get("namespace")
    group = resource.get("group") or "core"
    return f"{group}/{resource['kind']} {namespace + '/' if namespace else ''}{resource['name']}"


def settled(app: Obj) -> bool:
    """Synced, Healthy, and the last operation Succeeded at the revision it reports."""
    operation = operation_state(app)
    return (
        sync_status(app) == "Synced"
        and health_status(app) == "Healthy"
        and operation.get("phase") == "Succeeded"
    )


def wait_settled(
    kube: Kube,
    namespace: str,
    name: str,
    timeout: float,
    ticks: Sequence[Callable[[Obj | None], None]] = (),
    interval: float = 2.0,
) -> Obj:
    """Poll the Application until settled(); each of `ticks` sees every read (the box wires
    the adapter and records the timeline from them). Raises TimeoutError with what Argo CD
    reported last."""
    deadline = time.monotonic() + timeout
    app: Obj | None = None
    while True:
        app = application(kube, namespace, name)
        for tick in ticks:
            tick(app)
        if app is not None and settled(app):
            return app
        if app is not None and operation_state(app).get("phase") in FINISHED[1:]:
            # Terminal: a failed attempt with retries left is reported Running (retrying).
            raise RuntimeError(f"Argo CD's sync of {namespace}/{name} failed: {describe(app)}")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"Application {namespace}/{name} not Synced and Healthy after {timeout:.0f}s: {describe(app)}"
            )
        time.sleep(interval)


def describe(app: Obj | None) -> str:
    """One line: sync, health, operation phase and message, and the objects not yet done."""
    if app is None:
        return "no such Application"
    operation = operation_state(app)
    pending = [
        f"{resource_name(r)} {r.get('status')}/{(r.get('health') or {}).get('status', '-')}"
        for r in resources(app)
        if r.get("status") != "Synced" or (r.get("health") or {}).get("status") not in (None, "Healthy")
    ]
    return (
        f"sync {sync_status(app)}, health {health_status(app)}, operation {operation.get('phase', 'none')}"
        f" ({operation.get('message', '')}); not done: {', '.join(pending[:10]) or 'none'}"
    )


class Timeline:
    """What Argo CD reported about one Application at each read, as transitions: a JSON line
    per change of the Application's sync, health or operation, or of one object's sync or
    health, with the seconds since the recording began. `box up --argocd` records the first
    sync in argocd/first-sync.jsonl; the first-sync scene reads it back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.began = time.time()
        self.last: dict[str, tuple[str, ...]] = {}
        path.write_text(json.dumps({"began": self.began}) + "\n", encoding="utf-8")

    def __call__(self, app: Obj | None) -> None:
        if app is None:
            return
        operation = operation_state(app)
        now: dict[str, tuple[str, ...]] = {
            "": (
                sync_status(app),
                health_status(app),
                str(operation.get("phase", "")),
                str(operation.get("retryCount", 0)),
                str(operation.get("message", "")),
            )
        }
        for resource in resources(app):
            health = resource.get("health") or {}
            now[resource_name(resource)] = (
                str(resource.get("status", "")),
                str(health.get("status", "")),
                str(health.get("message", "")),
            )
        changed = {key: value for key, value in now.items() if self.last.get(key) != value}
        if changed:
            record = {"t": round(time.time() - self.began, 1), "changed": changed}
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        self.last.update(now)


def read_timeline(path: Path) -> tuple[float, list[tuple[float, dict[str, list[str]]]]]:
    """A Timeline file: when it began (epoch seconds), and its records (seconds since then,
    {object, or "" for the Application: its reported state})."""
    header, *lines = path.read_text(encoding="utf-8").splitlines()
    records = []
    for line in lines:
        record = json.loads(line)
        records.append((float(record["t"]), record["changed"]))
    return float(json.loads(header)["began"]), records


# ------------------------------------------------------------------ every operation of a change

WATCH_SECONDS = 5  # one watch request; between two, the deadline and `done` are checked


@dataclass
class Operation:
    """One sync operation as Argo CD last reported it (status.operationState): how it was
    started, how it ended, and each object's result in the order Argo CD ran them.

    The order is Argo CD's own: gitops-engine numbers a result when a task first gets one
    (`Order = len(syncRes) + 1`, pkg/sync/sync_context.go:1774 of v3.5.1, during the wet run),
    `GetState` sorts by it (:755) and the controller writes the list in that order
    (controller/sync.go:374-391), so a prune listed after every applied object ran after them.
    """

    started: str
    phase: str
    message: str
    retries: int
    revision: str
    automated: bool
    named: list[str]  # operation.sync.resources: what a selfHeal (a partial sync) was limited to
    results: list[dict[str, Any]]

    @classmethod
    def of(cls, state: dict[str, Any]) -> Operation:
        operation = state.get("operation") or {}
        sync = operation.get("sync") or {}
        return cls(
            started=str(state.get("startedAt", "")),
            phase=str(state.get("phase", "")),
            message=str(state.get("message", "")),
            retries=int(state.get("retryCount") or 0),
            revision=str((state.get("syncResult") or {}).get("revision", "")),
            automated=bool((operation.get("initiatedBy") or {}).get("automated")),
            named=[resource_name(r) for r in sync.get("resources") or []],
            results=list((state.get("syncResult") or {}).get("resources") or []),
        )

    def with_status(self, status: str) -> list[str]:
        return [resource_name(r) for r in self.results if r.get("status") == status]

    def pruned_before_applied(self) -> list[str]:
        """Each pruned object Argo CD reports before an object it applied in the same
        operation (PruneLast=true promises none)."""
        found, seen_prune = [], []
        for result in self.results:
            if result.get("status") == "Pruned":
                seen_prune.append(resource_name(result))
            elif seen_prune:
                found.append(f"{', '.join(seen_prune)} pruned before {resource_name(result)} was applied")
                seen_prune = []
        return found

    def line(self) -> str:
        how = "automated" if self.automated else "manual"
        if self.named:
            how += f", selfHeal limited to {', '.join(self.named)}"
        pruned = len(self.with_status("Pruned"))
        order = "then" if not self.pruned_before_applied() else "and, not all after them,"
        return (
            f"{self.started} ({how}): {self.phase}, {self.retries} retries, "
            f"{len(self.results) - pruned} applied, {order} {pruned} pruned: {self.message}"
        )


@dataclass
class Watched:
    """What a watch of one Application saw: every operation that started during it, in
    order, and the Application as last read."""

    operations: list[Operation]
    app: Obj | None
    restarts: int  # watches the apiserver ended with an error (410 Gone): a gap is possible


def watch_operations(
    kube: Kube,
    namespace: str,
    name: str,
    since: Obj,
    done: Callable[[Obj], bool],
    timeout: float,
) -> Watched:
    """Watch the Application from the read `since` (its resourceVersion) until `done(app)`,
    keeping each operation's last reported state. A watch delivers every write of the
    object, so an operation that ends and is followed at once by another (selfHeal starts its
    first one without delay: controller/appcontroller.go:2511-2541 with 0 attempts) is seen
    with its final results, which polling would miss. Raises TimeoutError with what Argo CD
    reported last."""
    resource = kube.resource(API, "Application")
    before = str(operation_state(since).get("startedAt", ""))
    version = str(since["metadata"]["resourceVersion"])
    states: list[dict[str, Any]] = []  # one per operation, its last reported state
    app: Obj | None = since
    restarts = 0
    deadline = time.monotonic() + timeout
    while True:
        for event in kube.dynamic.watch(
            resource, namespace=namespace, name=name, resource_version=version, timeout=WATCH_SECONDS
        ):
            raw = event["raw_object"]
            if event["type"] == "ERROR":  # the resourceVersion is too old: read, go on from now
                restarts += 1
                app = application(kube, namespace, name)
                version = str((app or {}).get("metadata", {}).get("resourceVersion", ""))
                break
            app = dict(raw)
            version = str(app["metadata"]["resourceVersion"])
            state = operation_state(app)
            started = str(state.get("startedAt", ""))
            if state and started != before:
                last = states[-1] if states else {}
                # startedAt has whole seconds: a Running state after a finished one with the
                # same startedAt is a new operation too.
                again = last.get("phase") in FINISHED and state.get("phase") == "Running"
                if not last or last.get("startedAt") != started or again:
                    states.append(state)
                else:
                    states[-1] = state
            if done(app):
                return Watched([Operation.of(s) for s in states], app, restarts)
        if app is not None and done(app):
            return Watched([Operation.of(s) for s in states], app, restarts)
        if time.monotonic() > deadline:
            raise TimeoutError(f"Application {namespace}/{name}: {describe(app)}")


# ------------------------------------------------------------------ what Argo CD refuses

TRY_SECONDS = 120  # one sync that Argo CD refuses before applying anything (1 to 2 s seen)


@dataclass
class Verdict:
    """What Argo CD reported about one sync of an Application: the operation's phase and
    message, the Application's conditions, each object's result, how many objects it
    compared."""

    phase: str
    message: str
    conditions: list[str]  # "Type: message"
    results: list[dict[str, Any]]
    compared: int  # status.resources

    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r.get("status") == "SyncFailed"]


def sync_operation(app: Obj, retry: dict[str, Any] | None = None) -> dict[str, Any]:
    """The operation `argocd app sync NAME` (or the UI's Sync) sets on an Application, as
    Argo CD v3.5.1's API server builds it (server/application/application.go:2120-2174): the
    Application's source at its targetRevision, its syncOptions and retry, no prune (the
    CLI's default), initiated by a user. `retry` replaces the Application's."""
    spec = app["spec"]
    policy = spec.get("syncPolicy") or {}
    sync: dict[str, Any] = {
        "source": spec["source"],
        "revision": spec["source"].get("targetRevision", "HEAD"),
        "syncOptions": list(policy.get("syncOptions") or []),
    }
    operation: dict[str, Any] = {"initiatedBy": {"username": "trainyard-box"}, "sync": sync}
    if retry is not None or policy.get("retry") is not None:
        operation["retry"] = retry if retry is not None else policy["retry"]
    return operation


def try_sync(kube: Kube, project: Obj, app: Obj, timeout: float = TRY_SECONDS) -> Verdict:
    """Apply `project` and `app` (Argo CD-side objects), start one sync operation of `app`
    as `argocd app sync` does (status.operation, no retry), wait until it ends, read what
    Argo CD reported, and delete both. `app` must have no automated sync and no
    resources-finalizer: deleting it leaves whatever it applied."""
    namespace, name = app["metadata"]["namespace"], app["metadata"]["name"]
    kube.apply(project)
    kube.apply(app)
    try:
        since = application(kube, namespace, name)
        assert since is not None
        operation = sync_operation(app, retry={"limit": 0})
        kube.merge_patch(API, "Application", name, {"operation": operation}, namespace)
        watched = watch_operations(
            kube,
            namespace,
            name,
            since,
            lambda seen: operation_state(seen).get("phase") in FINISHED,
            timeout,
        )
        assert watched.app is not None
        state = operation_state(watched.app)
        status = watched.app.get("status") or {}
        return Verdict(
            phase=str(state.get("phase", "")),
            message=str(state.get("message", "")),
            conditions=[f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or []],
            results=list((state.get("syncResult") or {}).get("resources") or []),
            compared=len(status.get("resources") or []),
        )
    finally:
        kube.delete(API, "Application", name, namespace)
        kube.delete(API, "AppProject", project["metadata"]["name"], project["metadata"]["namespace"])
