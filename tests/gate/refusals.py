"""How a gate test expects a policy file refused, for either kind's parser: one line,
`policy.yaml:LINE:COL: error: <what> (<spec path>)` (gate/README.md), raised as PolicyError."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from trainyard_gate.runtime.reader import PolicyError

from tests.support.edits import edited

ONE_LINE_ERROR = re.compile(r"^policy\.yaml:\d+:\d+: error: [^\n]+ \([^\n)]+\)$")
Parse = Callable[[str, str], object]  # trainyard_gate.<kind>.policy.parse


def refusal(parse: Parse, text: str) -> str:
    """The one-line message `parse` refuses `text` with (as file policy.yaml)."""
    with pytest.raises(PolicyError) as caught:
        parse(text, "policy.yaml")
    message = str(caught.value)
    assert ONE_LINE_ERROR.match(message), message
    return message


def refusal_of_edit(parse: Parse, example: str, old: str, new: str) -> str:
    """The refusal of `example` with its first `old` replaced by `new` (`edited`: `old` must
    be in the example)."""
    return refusal(parse, edited(example, old, new))
