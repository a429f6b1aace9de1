"""How a gate test expects a policy file refused, for either kind's parser: one line,
`policy.yaml:LINE:COL: error: <what> (<spec path>)` (gate/README.md), raised as PolicyError."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from trainyard_gate.runtime.reader import PolicyError

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
    """The refusal of `example` with its first `old` replaced by `new`. `old` must be in the
    example: a case whose `old` drifted away would test the unedited, valid file."""
    assert old in example
    return refusal(parse, example.replace(old, new, 1))
