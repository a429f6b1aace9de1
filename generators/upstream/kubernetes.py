"""The Kubernetes versions trainyard renders for, and what the output needs of each.

One home for the range the README states and for the API features that decide what is
rendered: the spec checks refuse a version outside the range at cluster.kubernetesVersion,
and components choose their objects by `mechanism(feature, version)`, never by comparing
versions themselves.

Supported: 1.32 to 1.37 (kubernetes-validate 1.37.0 ships the schemas `validate` checks
against for each). 1.32 is the oldest minor the large managed offerings still run under
standard support in late 2026; ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1,
GA in 1.30) is the floor of what every mechanism below needs. Tested on a real
kube-apiserver: 1.36.5 (tools/toolchain.py), and 1.33 to 1.35 through its compatibility
versions (`--emulated-version=kube=1.3X`, the cluster in a box: docs/controlplane.md); 1.32
and 1.37 by kubeconform only.

Each headline feature works on every supported minor, by the mechanism that minor allows:

- training priority: DEFAULT from 1.36 (a class-less training pod and Job get the default
  tier); REQUIRE below (the pod, Job, JobSet, RayJob and Workload naming no class are
  refused, the message naming the class to set);
- quarantine toleration: DEFAULT from 1.36 (inference pods get it); REQUIRE below (an
  inference pod or workload template without it is refused, naming it);
- default topology: DEFAULT from 1.36 (a gang naming no topology gets its queue's preferred
  level); WARN below (admitted, with a warning naming the annotation to add);
- virtual node closed and labelled: POLICY from 1.36 (a MutatingAdmissionPolicy labels the
  node and closes its gate at registration); PROVIDER below (the provider program registers
  it so from its own config: interLink NodeLabels/NodeTaints).

docs/scheduling.md ("Kubernetes versions") has the same table per minor; a test holds them equal.

MutatingAdmissionPolicy went GA (admissionregistration.k8s.io/v1, on by default) in 1.36;
before that it is beta and off unless the cluster enables its feature gate and API, which
the managed offerings do not. ValidatingAdmissionPolicy bindings with validationActions
[Warn] (GA with the API in 1.30) make a warning `kubectl` prints.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

OLDEST: Final = (1, 32)
NEWEST: Final = (1, 37)
MUTATING_ADMISSION: Final = (1, 36)


class Mechanism(Enum):
    """How a feature is enforced on a minor (module docstring)."""

    DEFAULT = "a MutatingAdmissionPolicy fills it in"
    REQUIRE = "a ValidatingAdmissionPolicy refuses what lacks it, naming the fix"
    WARN = "a ValidatingAdmissionPolicy warns (validationActions: [Warn]), naming the fix"
    POLICY = "a MutatingAdmissionPolicy labels the node and closes its gate at registration"
    PROVIDER = "the provider program registers its node labelled and closed (its own config)"


class Feature(Enum):
    TRAINING_PRIORITY = "training priority"
    QUARANTINE_TOLERATION = "quarantine toleration"
    DEFAULT_TOPOLOGY = "default topology"
    VIRTUAL_NODE = "virtual node closed and labelled"


# feature -> (from MUTATING_ADMISSION on, below it): the one table the components read.
MECHANISMS: Final[dict[Feature, tuple[Mechanism, Mechanism]]] = {
    Feature.TRAINING_PRIORITY: (Mechanism.DEFAULT, Mechanism.REQUIRE),
    Feature.QUARANTINE_TOLERATION: (Mechanism.DEFAULT, Mechanism.REQUIRE),
    Feature.DEFAULT_TOPOLOGY: (Mechanism.DEFAULT, Mechanism.WARN),
    Feature.VIRTUAL_NODE: (Mechanism.POLICY, Mechanism.PROVIDER),
}


def minor(version: str) -> tuple[int, int]:
    """(major, minor) of a version such as 1.36.2."""
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def name(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def supported(version: str) -> bool:
    return OLDEST <= minor(version) <= NEWEST


def minors() -> list[tuple[int, int]]:
    """Every supported minor, oldest first."""
    return [(OLDEST[0], m) for m in range(OLDEST[1], NEWEST[1] + 1)]


def has_mutating_admission(version: str) -> bool:
    """True where a MutatingAdmissionPolicy can default and patch pods and nodes."""
    return minor(version) >= MUTATING_ADMISSION


def mechanism(feature: Feature, version: str) -> Mechanism:
    """How `feature` works on a cluster running `version`."""
    newer, older = MECHANISMS[feature]
    return newer if has_mutating_admission(version) else older
