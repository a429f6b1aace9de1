"""`box up ENV --argocd`, step 5: the rendered tree deployed by the real Argo CD.

In place of the box's own applier (box/manifests.py apply_all), in order:
1. the box's git repository (box/argocd_repo.py): environments/ and the render of the
   environment pointed at the box, one commit on the spec's targetRevision;
2. Argo CD's namespace, upstream's RBAC and configuration for the controller and the repo
   server, the destination registered as `argocd cluster add` does (box/argocd.py);
3. Redis, the repo server and the application controller, up once each answers /healthz;
4. `kubectl apply -R -f rendered/<env>/argocd/` of that repository, what docs/adopting.md
   tells a user to run once. From here on Argo CD applies everything: the bootstrap
   Application syncs the Argo CD objects, the environment Application the rest, wave by wave;
5. where the environment syncs manually (prod), the box presses Sync once Argo CD has
   compared the Application, as a person does after merging (`PressSync`);
6. up once Argo CD reports both Applications Synced and Healthy with their last operation
   Succeeded. Meanwhile the box wires the prometheus-adapter as it does without Argo CD
   (box/adapter.py): once Argo CD has created the adapter's Deployment, Service and
   APIService, the adapter runs as a host process and the Service and the APIService's port
   are pointed at it; argocd-cm tells Argo CD to ignore exactly those two wired fields
   (`wiring_settings`). Beside those, argocd-cm gets the rendered health overrides
   (`health_settings`), as docs/gitops.md tells a user to install them.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from box import accounts, adapter, argocd, argocd_repo
from box.daemon import Daemon, port_open
from box.kube import Kube, Obj
from generators.components.argocd import COMPONENT, names
from generators.layout import RENDERED
from generators.model.environment import Environment

SYNC_SECONDS = 1200  # the first sync of staging: 122 objects in 8 waves, health-gated (40-60 s seen)
APISERVICE_GROUP = "apiregistration.k8s.io"


class NotDeployedByArgoCD(RuntimeError):
    """A scene about deploying ran on a box `box up` deployed without --argocd."""


@dataclass
class Deployed:
    """What the box records about its Argo CD (argocd/deployed.json in the run folder), for
    scenes: where the repository is, which Applications to read."""

    namespace: str
    application: str
    bootstrap: str
    repo_folder: str
    branch: str
    server: str
    sync_seconds: float = 0.0

    @staticmethod
    def path(folder: Path) -> Path:
        return folder / "argocd" / "deployed.json"

    def save(self, folder: Path) -> None:
        self.path(folder).write_text(json.dumps(self.__dict__, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Deployed | None:
        try:
            return cls(**json.loads(cls.path(folder).read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None

    @classmethod
    def require(cls, folder: Path) -> Deployed:
        """What the box recorded, or NotDeployedByArgoCD (a scene about deploying needs it)."""
        deployed = cls.load(folder)
        if deployed is None:
            raise NotDeployedByArgoCD(
                f"the box in {folder} was not deployed by Argo CD; bring it up with: "
                "generate.py box down ENV && generate.py box up ENV --argocd"
            )
        return deployed

    def repo(self) -> argocd_repo.Repo:
        return argocd_repo.Repo(Path(self.repo_folder), self.branch)


def first_sync_path(folder: Path) -> Path:
    """Where `box up --argocd` records what Argo CD reported during the first sync."""
    return folder / "argocd" / "first-sync.jsonl"


def health_settings(checkout: Path, env_name: str) -> dict[str, str]:
    """The rendered argocd-cm health overrides (rendered/ENV/installers/argocd-cm-health.yaml,
    `configs.cm`), as docs/gitops.md tells a user to install them: without them a sync that
    prunes waits for ever on the dashboards' health where no grafana-operator runs."""
    path = checkout / RENDERED / env_name / "installers" / "argocd-cm-health.yaml"
    if not path.is_file():
        return {}
    values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in ((values.get("configs") or {}).get("cm") or {}).items()}


def wiring_settings(objects: list[Obj]) -> dict[str, str]:
    """argocd-cm keys ignoring the fields the box rewires (box/adapter.py register): the
    adapter Service's spec (an ExternalName to the loopback) and its APIService's port."""
    expressions: dict[str, list[str]] = {}
    for obj in objects:
        if not adapter.deferred(obj):
            continue
        meta = obj["metadata"]
        if obj["kind"] == "Service":
            key = "Service"
            expression = (
                f'select(.metadata.namespace == "{meta["namespace"]}" and .metadata.name == "{meta["name"]}")'
                " | .spec"
            )
        else:
            key = f"{APISERVICE_GROUP}_APIService"
            expression = f'select(.metadata.name == "{meta["name"]}") | .spec.service.port'
        expressions.setdefault(key, []).append(expression)
    return {
        f"resource.customizations.ignoreDifferences.{key}": yaml.safe_dump({"jqPathExpressions": found})
        for key, found in sorted(expressions.items())
    }


@dataclass(frozen=True)
class Checks:
    """box/up.py's readiness checks (the ones it uses for every other process), passed in so
    this module does not import box.up, which imports it."""

    http_ok: Callable[[str], bool]
    https_ok: Callable[[str], bool]
    seconds: float


@dataclass
class AdapterWiring:
    """Called with every read of the Application while the first sync runs: starts and wires
    the adapter once Argo CD has created its Deployment, Service and APIService."""

    kube: Kube
    admin_kubeconfig: Path
    objects: list[Obj]
    folder: Path
    prometheus: str
    speed: int
    record: Callable[[Daemon], None]
    say: Callable[[str], None]
    checks: Checks
    daemon: Daemon | None = None
    wired: bool = False
    wanted: list[Obj] = field(default_factory=list)

    def __post_init__(self) -> None:
        deployment = adapter.deployment_of(self.objects)
        self.wanted = [deployment, *filter(adapter.deferred, self.objects)] if deployment else []
        self.wired = not self.wanted

    def __call__(self, _: Obj | None) -> None:
        if self.wired or not all(self._exists(o) for o in self.wanted):
            return
        if self.daemon is None:
            self.say(
                "Argo CD created the prometheus-adapter objects: starting it, pointing its APIService at it"
            )
            self.daemon = adapter.start(
                self.kube, self.admin_kubeconfig, self.objects, self.folder, self.prometheus, self.speed
            )
            assert self.daemon is not None
            self.record(self.daemon)
            self.daemon.wait_until(
                functools.partial(self.checks.https_ok, f"https://127.0.0.1:{self.daemon.ports[0]}/healthz"),
                self.checks.seconds,
                "/healthz ok",
            )
        adapter.register(self.kube, self.objects, self.daemon.ports[0])
        self.wired = True

    def _exists(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        return self.kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) is not None


@dataclass
class PressSync:
    """Called with every read of the environment Application while the first sync runs:
    where the spec says `syncPolicy: manual` (prod), nothing syncs until a person presses
    Sync, so once Argo CD has compared the Application (OutOfSync) the box presses it once,
    as `argocd app sync` does (box/argocd.py sync_operation)."""

    kube: Kube
    say: Callable[[str], None]
    pressed: bool = False

    def __call__(self, app: Obj | None) -> None:
        if self.pressed or app is None or argocd.sync_status(app) != "OutOfSync" or app.get("operation"):
            return
        meta = app["metadata"]
        self.say(f"{meta['namespace']}/{meta['name']} syncs manually: pressing Sync (argocd app sync)")
        operation = argocd.sync_operation(app)
        self.kube.merge_patch(
            argocd.API, "Application", meta["name"], {"operation": operation}, meta["namespace"]
        )
        self.pressed = True


def deploy(
    kube: Kube,
    admin_kubeconfig: Path,
    root: Path,
    env: Environment,
    scale: int,
    speed: int,
    objects: list[Obj],
    folder: Path,
    prometheus: str,
    record: Callable[[Daemon], None],
    say: Callable[[str], None],
    checks: Checks,
) -> Deployed:
    """Steps 1-6 of the module docstring; returns what scenes need to find Argo CD again."""
    workdir = folder / "argocd"
    workdir.mkdir(parents=True, exist_ok=True)
    namespace = env.argocd.namespace
    server, ca_pem = argocd.apiserver(admin_kubeconfig)
    repo, _, _ = argocd_repo.create(
        root, env.name, scale, speed, workdir / "repo", env.argocd.target_revision, server
    )
    say(f"serving the box's repository {repo.url} ({env.argocd.target_revision} at {repo.head()[:12]})")
    settings = {**health_settings(repo.checkout, env.name), **wiring_settings(objects)}
    controller_config = _configure(
        kube, admin_kubeconfig, env.name, namespace, settings, server, ca_pem, workdir
    )
    say("starting Argo CD v3.5.1: Redis, repo server, application controller")
    _start(workdir, namespace, controller_config, record, checks)
    application, bootstrap = names(env)
    deployed = Deployed(namespace, application, bootstrap, str(repo.folder), repo.branch, server)
    deployed.save(folder)
    timeline = argocd.Timeline(first_sync_path(folder))
    _bootstrap(admin_kubeconfig, repo.checkout / RENDERED / env.name / COMPONENT, say)
    wiring = AdapterWiring(
        kube,
        admin_kubeconfig,
        objects,
        folder / "monitoring" / "prometheus-adapter",
        prometheus,
        speed,
        record,
        say,
        checks,
    )
    began = time.monotonic()
    say(f"waiting for Argo CD to sync {namespace}/{bootstrap} and {namespace}/{application}")
    ticks: list[Callable[[Obj | None], None]] = [timeline, wiring]
    if not env.argocd.automated:
        ticks.append(PressSync(kube, say))
    argocd.wait_settled(kube, namespace, application, SYNC_SECONDS, ticks=ticks)
    argocd.wait_settled(kube, namespace, bootstrap, SYNC_SECONDS)
    deployed.sync_seconds = round(time.monotonic() - began, 1)
    deployed.save(folder)
    if not wiring.wired:
        raise RuntimeError("Argo CD reported the Application Healthy before the prometheus-adapter was wired")
    return deployed


def _configure(
    kube: Kube,
    admin_kubeconfig: Path,
    env_name: str,
    namespace: str,
    settings: dict[str, str],
    server: str,
    ca_pem: bytes,
    workdir: Path,
) -> Path:
    """Step 2: Argo CD's namespace, upstream's RBAC and configuration (argocd-cm with
    `settings`), the destination cluster registered with the manager account's token as
    `argocd cluster add` does. Returns the application controller's kubeconfig."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for obj in [*argocd.upstream_objects(namespace, settings), *argocd.manager_objects()]:
        kube.apply(obj)
    manager = accounts.token_kubeconfig(
        kube,
        admin_kubeconfig,
        argocd.MANAGER_NAMESPACE,
        argocd.MANAGER_ACCOUNT,
        workdir / "kubeconfig-manager",
    )
    token = yaml.safe_load(manager.read_text(encoding="utf-8"))["users"][0]["user"]["token"]
    kube.apply(argocd.cluster_secret(namespace, env_name, server, token, ca_pem))
    return accounts.token_kubeconfig(
        kube, admin_kubeconfig, namespace, argocd.CONTROLLER_ACCOUNT, workdir / "kubeconfig-controller"
    )


def _start(
    workdir: Path, namespace: str, controller_config: Path, record: Callable[[Daemon], None], checks: Checks
) -> None:
    """Step 3: Redis, the repo server and the application controller, each recorded in the
    box's state, up once Redis listens and the other two answer /healthz."""
    running = argocd.processes(workdir, namespace, controller_config)
    for daemon in running.all():
        daemon.start()
        record(daemon)
    urls = running.health_urls()
    running.redis.wait_until(
        functools.partial(port_open, running.redis.ports[0]), argocd.READY_SECONDS, "a Redis listener"
    )
    for daemon in (running.repo_server, running.controller):
        daemon.wait_until(
            functools.partial(checks.http_ok, urls[daemon.name]), argocd.READY_SECONDS, "/healthz ok"
        )


def _bootstrap(admin_kubeconfig: Path, bootstrap_folder: Path, say: Callable[[str], None]) -> None:
    """Step 4: `kubectl apply -R -f` the repository's rendered/ENV/argocd/ (docs/adopting.md).
    The AppProjects first: `kubectl apply -R` alone goes in file-name order, application-*
    before appproject-*, and Argo CD's first attempt at the environment Application then
    fails (InvalidSpecError: its project does not exist yet) and is retried."""
    projects = sorted(p for p in bootstrap_folder.rglob("*.yaml") if _kind(p) == "AppProject")
    shown = "/".join(bootstrap_folder.parts[-3:]) + "/"
    say(
        f"kubectl apply the {len(projects)} AppProjects, then -R -f {shown} (the bootstrap, docs/adopting.md)"
    )
    argocd.kubectl_apply(admin_kubeconfig, *projects)
    argocd.kubectl_apply(admin_kubeconfig, bootstrap_folder)


def _kind(path: Path) -> str:
    return str((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("kind", ""))
