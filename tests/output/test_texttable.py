"""generators/output/texttable.py: terminal tables (`plan`, `diff --format text`): columns two
spaces apart, a column of numbers (or '-') right-aligned, no trailing blanks."""

from __future__ import annotations

import pytest

from generators.output.texttable import table


@pytest.mark.parametrize(
    ("header", "rows", "lines"),
    [
        pytest.param(
            ["team", "gpus", "share"],
            [["alpha", 8, "25%"], ["mid", 128, "-"]],
            ["team   gpus  share", "-----  ----  -----", "alpha     8  25%", "mid     128  -"],
            id="numbers_are_right_aligned_and_words_left_aligned",
        ),
        pytest.param(
            ["memory", "used"],
            [["1Ti", "3 / 8"], ["512Gi", "10 / 16"]],
            ["memory     used", "------  -------", "   1Ti    3 / 8", " 512Gi  10 / 16"],
            id="quantities_with_units_and_fractions_count_as_numbers",
        ),
    ],
)
def test_alignment(header: list[str], rows: list[list[object]], lines: list[str]) -> None:
    assert table(header, rows).splitlines() == lines


def test_a_column_with_one_word_among_numbers_is_left_aligned() -> None:
    assert table(["n"], [["12"], ["many"]]).splitlines() == ["n", "----", "12", "many"]


def test_no_rows_is_the_header_and_its_rule() -> None:
    assert table(["team", "gpus"], []) == "team  gpus\n----  ----"
