"""The Kubernetes versions trainyard renders for, and what the output needs of each.

One home for the range the README states and for the API features that decide what is
rendered: the spec checks refuse a version outside the range at cluster.kubernetesVersion,
and components choose their objects by these predicates, never by comparing versions
themselves.

Supported: 1.32 to 1.37 (kubernetes-validate 1.37.0 ships the schemas `validate` checks
against for each). 1.32 is the oldest minor the large managed offerings still run under
standard support in late 2026; ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1,
GA in 1.30) is the floor of what the priority enforcement needs. Tested on a real
kube-apiserver: 1.36.5 (tools/toolchain.py), the others by kubeconform only.
"""

from __future__ import annotations

from typing import Final

OLDEST: Final = (1, 32)
NEWEST: Final = (1, 37)
# MutatingAdmissionPolicy went GA (admissionregistration.k8s.io/v1, on by default) in 1.36;
# before that it is beta and off unless the cluster enables its feature gate and API.
MUTATING_ADMISSION: Final = (1, 36)


def minor(version: str) -> tuple[int, int]:
    """(major, minor) of a version such as 1.36.2."""
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def name(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def supported(version: str) -> bool:
    return OLDEST <= minor(version) <= NEWEST


def has_mutating_admission(version: str) -> bool:
    """True where a MutatingAdmissionPolicy can default and patch pods and nodes."""
    return minor(version) >= MUTATING_ADMISSION
