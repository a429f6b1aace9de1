"""etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK, started by kwokctl.

kwokctl's binary runtime (sigs.k8s.io/kwok v0.8.0) runs every component as a plain process
from the binaries it is given: a local path is symlinked into the cluster's folder
(pkg/utils/file/download.go, getCacheOrDownload: a source with no http(s) scheme is used as
is), so with all five `--*-binary` flags pointing at the pinned builds of tools/install.py it
never touches the network. It also writes the PKI, the components' kubeconfigs and the
kwok-controller's configuration, which is the wiring a hand-written harness would have to
copy. Its Stages are given (kwok-stages.yaml beside this file: its defaults, with a
pod-complete that can hold a Job pod Running for a set time), since kwokctl keeps none of its
defaults once its configuration holds one (pkg/kwokctl/runtime/cluster.go). Decided over
extending tests/controlplane/harness.py for that reason (docs/controlplane.md, "Cluster in a
box").

An older Kubernetes minor is the same binaries run at a compatibility version: kube-apiserver,
kube-controller-manager and kube-scheduler v1.36.5 take `--emulated-version=kube=1.3X`
(Kubernetes compatibility versions, KEP-4330) and then serve that minor's APIs with its
feature gates' defaults, so a 1.35 box serves no admissionregistration.k8s.io/v1
MutatingAdmissionPolicy. Emulation reaches back three minors (EMULATED); 1.32 would need
binaries of its own and is checked by kubeconform schemas only (docs/controlplane.md).

Everything lives under the run directory (KWOK_WORKDIR), never in ~/.kwok; `--kubeconfig=`
keeps ~/.kube/config untouched; every listener binds 127.0.0.1 (kwokctl's default is
0.0.0.0, wrong on a shared machine).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from box.daemon import group_alive, verify_gone
from tools.toolchain import PINS, file_lock, tool_path

# KWOK's Stages (its defaults, pod-complete holding a Job pod for its annotation's time).
STAGES = Path(__file__).with_name("kwok-stages.yaml")
CREATE_SECONDS = 600  # a cold apiserver start on 2 busy cores installs ~100 built-in types
# The components that take --emulated-version (KWOK and etcd do not).
EMULATING = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _binary_minor() -> tuple[int, int]:
    major, minor, *_ = PINS["kube-apiserver"].lstrip("v").split(".")
    return int(major), int(minor)


# The minors the pinned binaries emulate: their own and the three before it.
EMULATED: tuple[tuple[int, int], ...] = tuple(
    (_binary_minor()[0], _binary_minor()[1] - n) for n in (3, 2, 1, 0)
)


def emulation_args(minor: tuple[int, int]) -> dict[str, dict[str, str]]:
    """Component -> extra flags running the pinned binaries as Kubernetes `minor`; none at
    their own minor. Raises ValueError outside EMULATED."""
    if minor not in EMULATED:
        oldest, newest = (f"{m[0]}.{m[1]}" for m in (EMULATED[0], EMULATED[-1]))
        raise ValueError(
            f"the box runs Kubernetes {oldest} to {newest} (the pinned {PINS['kube-apiserver']} "
            f"binaries emulate three minors back), not {minor[0]}.{minor[1]}"
        )
    if minor == _binary_minor():
        return {}
    return {name: {"--emulated-version": f"kube={minor[0]}.{minor[1]}"} for name in EMULATING}


BINARY_FLAGS = {
    "etcd": "--etcd-binary",
    "kube-apiserver": "--kube-apiserver-binary",
    "kube-controller-manager": "--kube-controller-manager-binary",
    "kube-scheduler": "--kube-scheduler-binary",
    "kwok": "--kwok-controller-binary",
}


class ClusterError(RuntimeError):
    """kwokctl failed; the message ends with its output."""


# One machine-wide lock file, whatever TRAINYARD_BOX_DIR says: the collision it prevents is
# between boxes of different checkouts (CI beside a developer's box, two worktrees).
CREATE_LOCK = Path(tempfile.gettempdir()) / "trainyard-kwokctl-create.lock"


@contextlib.contextmanager
def _create_lock() -> Iterator[None]:
    """Hold the machine-wide lock while kwokctl creates and starts a cluster.

    kwokctl chooses each component's port when it creates the cluster, walking down from
    32767 and taking the first port a test listen succeeds on (sigs.k8s.io/kwok v0.8.0,
    pkg/utils/net/unused_port.go:33-58), and binds it only when that component starts; two
    clusters created in the same second once chose the same etcd peer port, and one never
    started (docs/testing.md, flake table). Under the lock, the
    ports of a cluster are listened on (`--wait` returns once it is ready) before the next
    cluster chooses, so its probe sees them taken. Held for one start (about 10 to 30 s); a
    box that waits here is slower, never wrong."""
    with file_lock(CREATE_LOCK):
        yield


@dataclass(frozen=True)
class Cluster:
    """One kwokctl cluster named `name` whose state lives in `workdir` (KWOK_WORKDIR)."""

    name: str
    workdir: Path

    @property
    def folder(self) -> Path:
        return self.workdir / "clusters" / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig.yaml"

    @property
    def config_path(self) -> Path:
        return self.workdir / "kwokctl.yaml"

    def _run(self, *args: str, timeout: float) -> str:
        env = {**os.environ, "KWOK_WORKDIR": str(self.workdir)}
        argv = [str(tool_path("kwokctl")), "--name", self.name, "--config", str(self.config_path), *args]
        done = subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise ClusterError(
                f"kwokctl {' '.join(args[:2])} failed ({done.returncode}):\n"
                f"{(done.stdout + done.stderr)[-4000:]}"
            )
        return done.stdout + done.stderr

    def create(
        self, apiserver_args: dict[str, str] | None = None, minor: tuple[int, int] | None = None
    ) -> None:
        """Create and start the cluster, and wait until kwokctl reports it ready. `minor`:
        the Kubernetes minor to emulate (emulation_args; default the binaries' own)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = emulation_args(minor) if minor else {}
        args.setdefault("kube-apiserver", {}).update(apiserver_args or {})
        patches = [
            {
                "name": name,
                "extraArgs": [{"key": k.removeprefix("--"), "value": v} for k, v in sorted(flags.items())],
            }
            for name, flags in sorted(args.items())
            if flags
        ]
        config = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            # kubectl: kwokctl's readiness check (`--wait`) runs `kubectl get --raw /healthz`,
            # and would download one from dl.k8s.io without this.
            "options": {
                "bindAddress": "127.0.0.1",
                "runtime": "binary",
                "kubectlBinary": str(tool_path("kubectl")),
            },
            "componentsPatches": patches,
        }
        # One file, several documents: kwokctl reads the Stages beside its configuration.
        self.config_path.write_text(
            yaml.safe_dump(config) + "---\n" + STAGES.read_text(encoding="utf-8"), encoding="utf-8"
        )
        binaries = [f"{flag}={tool_path(tool)}" for tool, flag in BINARY_FLAGS.items()]
        with _create_lock():
            self._run(
                "create",
                "cluster",
                "--runtime",
                "binary",
                "--kubeconfig=",
                "--quiet-pull",
                f"--wait={CREATE_SECONDS}s",
                *binaries,
                timeout=CREATE_SECONDS + 60,
            )

    def component_pids(self) -> dict[str, int]:
        """Component -> pid, from the pid files kwokctl writes (each is its own session)."""
        pids = {}
        for path in sorted((self.folder / "pids").glob("*.pid")):
            text = path.read_text(encoding="utf-8").strip()
            if text.isdigit():
                pids[path.stem] = int(text)
        return pids

    def delete(self) -> None:
        """Stop every component and remove the cluster's folder; verify no process is left.

        kwokctl's own `delete cluster` stops the components; whatever it leaves (it signals
        and does not wait) is killed here by its session, which kwokctl gave each one, and
        waited for. Killed, not asked: the cluster's data goes with its folder, so nothing is
        left to flush (kwokctl kills too, sigs.k8s.io/kwok v0.8.0 pkg/utils/exec/cmd.go:27-47),
        and etcd's graceful stop took 1.8 s of every `box down`."""
        pids = self.component_pids()
        if self.folder.exists():
            with contextlib.suppress(ClusterError):  # the processes are stopped below by pid anyway
                self._run("delete", "cluster", timeout=120)
        for component, pid in pids.items():
            if group_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                verify_gone(component, pid, ())
