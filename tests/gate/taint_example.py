"""The TaintPolicy contract example as text the tests load, edit and feed to the controller:
the one gate/README.md shows ("Policy file"), read from there so that the documented contract
is the one tested, then a second gate (salad) for the cases about more than one gate."""

from __future__ import annotations

from tests.support import GATE_DIR


def _documented() -> str:
    """The yaml block of gate/README.md's "Policy file" section: the policy with one gate
    (lambda), as the overflow generator renders it into ConfigMap key policy.yaml."""
    section = (GATE_DIR / "README.md").read_text(encoding="utf-8").split("\n## Policy file\n", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


EXAMPLE = (
    _documented()
    + """\
    - name: salad
      nodeSelector:
        matchLabels: {type: virtual-kubelet, trainyard.dev/provider: salad}
      taint: {key: trainyard.dev/overflow-gate, value: closed, effect: NoSchedule}
      closeWhenFreeGpusAtLeast: 64
      closeAfterSeconds: 600
      openWhenFreeGpusBelow: 8
      openAfterSeconds: 120
"""
)
