"""box/nodes.py: the capacity a KWOK node is registered with is what the apiserver reports
back. `box up` waits until each node's allocatable equals it (box/up.py `_schedulable`), and
the apiserver stores every quantity in its canonical form: a pool of 2000Gi memory
(2147483648000 bytes, a multiple of 1000) reads back as 2147483648k, so the box wrote
"2147483648000", waited for it, and timed out after 300 s (the trial's H200 pool,
tests/corpus/trial.yaml). Expected strings are what kube-apiserver v1.36.5 printed."""

from __future__ import annotations

from fractions import Fraction

from box.nodes import quantity


def test_a_whole_multiple_of_1000_is_written_as_the_apiserver_prints_it() -> None:
    assert quantity(Fraction(2000 * 2**30)) == "2147483648k"  # 2000Gi of memory


def test_other_quantities_are_unchanged() -> None:
    assert quantity(Fraction(1800 * 2**30)) == "1932735283200"  # staging's 1800Gi
    assert quantity(Fraction(192)) == "192"
    assert quantity(Fraction(1, 2)) == "500m"
