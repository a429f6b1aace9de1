"""The policy kinds this program runs, picked by the file's `kind`. A kind is a package
(overflow/, health/) with a policy module (`parse`) and a controller module (`start`);
adding one is a package plus a line in PARSERS and in start()."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .health import controller as health_controller
from .health import policy as health_policy
from .overflow import controller as overflow_controller
from .overflow import policy as overflow_policy
from .runtime.document import InvalidDocument, load_with_positions
from .runtime.program import Controller, Options
from .runtime.reader import Reader, read_text

Policy = overflow_policy.TaintPolicy | health_policy.NodeHealthPolicy

# kind -> parse(text, source); the first is what a file without a readable kind is read as.
PARSERS: dict[str, Callable[[str, str], Policy]] = {
    overflow_policy.KIND: overflow_policy.parse,
    health_policy.KIND: health_policy.parse,
}


def load_policy(path: Path) -> Policy:
    """Read a policy file of any kind; raises PolicyError (one line) on any problem."""
    text = read_text(path)
    try:
        data, positions = load_with_positions(text)
    except InvalidDocument:
        data, positions = None, {}  # the first kind's parser reports it with its position
    kind = data.get("kind") if isinstance(data, dict) else None
    first = next(iter(PARSERS))
    if kind is not None and kind not in PARSERS:
        expected = " or ".join(repr(name) for name in PARSERS)
        raise Reader(str(path), positions).fail(("kind",), f"expected {expected}, got {kind!r}")
    return PARSERS[kind if kind is not None else first](text, str(path))


def start(policy: Policy, options: Options) -> Controller:
    """The controller for the policy's kind."""
    if isinstance(policy, health_policy.NodeHealthPolicy):
        return health_controller.start(policy, options)
    return overflow_controller.start(policy, options)
