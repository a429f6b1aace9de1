"""The CustomResourceDefinitions of the job kinds the policy tests create (RayJob, TrainJob;
JobSet through box/jobset.py), as the versions Kueue v0.19.2 builds against ship them.

Read from the Go module cache, where building the pinned Kueue (tools/install.py) puts the
modules it imports: KubeRay's ray-operator v1.6.2 and Kubeflow Trainer v2.2.1 (Kueue's
go.mod). Each file is checked against the sha256 pinned here: other bytes are refused.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import yaml

from box.kube import Obj

# module@version, path in the module, sha256
RAYJOB = (
    "github.com/ray-project/kuberay/ray-operator@v1.6.2",
    "config/crd/bases/ray.io_rayjobs.yaml",
    "ecae45d9a5dc1be68f1074ba784c495ef9d439d295253b61e1bd51f7b08522f5",
)
TRAINJOB = (
    "github.com/kubeflow/trainer/v2@v2.2.1",
    "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
    "4e0ef90484ed1bbb60e4b6eb43a1bfffe033fd92e3d22504e0317324ce965c29",
)


class CrdMissing(RuntimeError):
    """The module is not in the Go module cache, or the file holds other bytes than pinned."""


def crd(pin: tuple[str, str, str]) -> Obj:
    module, relative, sha256 = pin
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout
    path = Path(cache.strip()) / module / relative
    if not path.is_file():
        raise CrdMissing(
            f"{path} is missing; run: python tools/install.py --force kueue (it fetches {module})"
        )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise CrdMissing(f"{path} has sha256 {digest}, pinned {sha256} (tests/upstream/job_crds.py)")
    [document] = [doc for doc in yaml.safe_load_all(data) if doc]
    return dict(document)
