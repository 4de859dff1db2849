"""Hardening of the pure readers (issue #24, items 4 and 7): a seed line or CSV cell of any
length is one rejected line, and a stored GP4C function of any depth a clear ``ValueError``.

The pages and commands that show these messages are tested in ``tests/test_security_uploads.py``.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from hacs.evaluation import TERMINALS
from hacs.formats.seeds import parse_seed_list
from hacs.learning.gp4c import MAX_DEPTH, ScoreFunction

LONG = 200_000  # past csv's field_size_limit (131,072), which raised out of the reader before


def too_long(length: int) -> str:
    return f"{length:,} characters, longer than the 8,192 a seed line may have"


def test_a_200000_character_line_first_in_a_plain_list_is_rejected_and_the_rest_read() -> None:
    result = parse_seed_list(f"{'x' * LONG}\nhttp://a.edu/~x/\n")
    assert result.format == "text"
    assert [(r.line, r.key) for r in result.rows] == [(2, "edu,a)/~x")]
    [rejected] = result.rejected
    assert (rejected.line, rejected.reason) == (1, too_long(LONG))
    assert rejected.text == "x" * 200  # shown cut, like every rejected line


def test_a_200000_character_line_later_in_a_plain_list_names_its_length_and_the_limit() -> None:
    long_url = "http://b.edu/~" + "y" * LONG
    result = parse_seed_list(f"http://a.edu/~x/\n\n{long_url}\nhttp://c.edu/~z/\n")
    assert [r.line for r in result.rows] == [1, 4]
    assert [(r.line, r.reason) for r in result.rejected] == [(3, too_long(len(long_url)))]


def test_a_200000_character_csv_cell_is_a_rejected_row_and_the_other_rows_read() -> None:
    data = f"url,author\nhttp://a.edu/~x/,{'A' * LONG}\nhttp://b.edu/~y/,Bea\n"
    result = parse_seed_list(data.encode())
    assert result.format == "csv"
    assert [(r.line, r.author) for r in result.rows] == [(3, "Bea")]
    assert [(r.line, r.reason) for r in result.rejected] == [(2, too_long(17 + LONG))]


def test_a_long_quoted_cell_on_one_line_is_rejected_and_the_rows_after_it_read() -> None:
    data = f'url,author\nhttp://a.edu/~x/,"{"A," * (LONG // 2)}"\nhttp://b.edu/~y/,Bea\n'
    result = parse_seed_list(data.encode())
    assert [(r.line, r.author) for r in result.rows] == [(3, "Bea")]
    assert [r.line for r in result.rejected] == [2]


def test_rows_are_numbered_by_their_line_in_the_file_around_multi_line_cells() -> None:
    data = (
        "url,author\n"
        'http://a.edu/~x/,"Ada\nLovelace"\n'  # lines 2-3: one row
        "not a url,Bob\n"  # line 4
        f"http://c.edu/~z/,{'C' * LONG}\n"  # line 5
        'http://d.edu/~w/,"Dee\n\nDee"\n'  # lines 6-8
        "ftp://e.edu/~v/,Eve\n"  # line 9
    )
    result = parse_seed_list(data.encode())
    assert [(r.line, r.author) for r in result.rows] == [(2, "Ada\nLovelace"), (6, "Dee\n\nDee")]
    assert [r.line for r in result.rejected] == [4, 5, 9]


def test_a_quoted_cell_spanning_many_short_lines_is_one_rejected_row_naming_them() -> None:
    # Each line is short; together they are past both limits (ours and csv's).
    cell = "\n".join(["B" * 8000] * 30)
    data = f'url,author\nhttp://a.edu/~x/,"{cell}"\nhttp://c.edu/~z/,Cy\nnot a url,Dan\n'
    result = parse_seed_list(data.encode())
    assert [(r.line, r.author) for r in result.rows] == [(32, "Cy")]
    first, second = result.rejected
    assert first.line == 2
    assert "(lines 2–31: a quoted cell spans them)" in first.reason
    assert first.reason.endswith("longer than the 8,192 a seed line may have")
    assert second.line == 33  # counting goes on right after it


def test_a_row_of_quotes_past_csvs_own_limit_is_still_one_rejected_row() -> None:
    # Pairs of quotes inside a quoted cell are one character each: a cell past csv's limit
    # even once ordinary characters are set aside.
    quotes = '"' * 300_001
    data = f"url,author\nhttp://a.edu/~x/,{quotes}\nhttp://c.edu/~z/,Cy\n"
    result = parse_seed_list(data.encode())
    assert [(r.line, r.author) for r in result.rows] == [(3, "Cy")]
    assert [(r.line, r.reason) for r in result.rejected] == [(2, too_long(17 + 300_001))]


@pytest.fixture()
def small_csv_field_limit() -> Iterator[None]:
    """Some other code in the process lowered csv's field size limit (it is process-wide)."""
    before = csv.field_size_limit(20)
    yield
    csv.field_size_limit(before)


@pytest.mark.usefixtures("small_csv_field_limit")
def test_a_lowered_csv_field_limit_gives_rejected_lines_never_an_exception() -> None:
    result = parse_seed_list(b"url,author\nhttp://a.edu/~x/,An author name past twenty\n")
    [rejected] = result.rejected
    assert rejected.line == 2
    assert rejected.reason.startswith("not readable as CSV: field larger than field limit")


def test_a_line_of_exactly_the_limit_is_read_and_one_more_character_is_not() -> None:
    from hacs.formats.seeds import MAX_LINE_LENGTH

    prefix = "http://a.edu/~x/,"
    fits = prefix + "A" * (MAX_LINE_LENGTH - len(prefix))
    result = parse_seed_list(f"url,author\n{fits}\n{fits}A\n".encode())
    assert [(r.line, r.author) for r in result.rows] == [(2, "A" * 300)]  # cut to its column
    assert [(r.line, r.reason) for r in result.rejected] == [(3, too_long(MAX_LINE_LENGTH + 1))]
    assert MAX_LINE_LENGTH == 8_192


def deep(depth: int) -> str:
    return "log(" * depth + "X" + ")" * depth


@pytest.mark.parametrize("depth", [3_000, 26_000])
def test_a_function_nested_thousands_deep_is_refused_with_its_depth_and_the_limit(
    depth: int,
) -> None:
    with pytest.raises(ValueError) as raised:
        ScoreFunction(deep(depth))
    assert str(raised.value) == (
        f"score function nested {depth:,} deep; a score function may be at most 100 deep "
        "(GP4C learns functions at most 10 deep)"
    )


def test_a_function_longer_than_the_cap_is_refused_by_its_size_before_its_depth() -> None:
    with pytest.raises(ValueError) as raised:
        ScoreFunction(deep(100_000))
    assert str(raised.value) == (
        "score function of 500,001 characters; a score function may be at most 131,008 "
        "characters long"
    )


def test_the_depth_is_measured_before_anything_recurses() -> None:
    # Even unbalanced, and even with little stack left, the refusal comes first.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        with pytest.raises(ValueError, match="nested 3,000 deep"):
            ScoreFunction("add(X, " * 3_000)
    finally:
        sys.setrecursionlimit(limit)


def test_a_function_at_the_loading_limit_loads_scores_and_reads_as_a_formula() -> None:
    from hacs.learning.gp4c import MAX_LOADED_DEPTH

    assert MAX_LOADED_DEPTH == 10 * MAX_DEPTH
    function = ScoreFunction(f"add({deep(MAX_LOADED_DEPTH - 1)}, t)")
    assert function.depth == MAX_LOADED_DEPTH
    columns = {name: np.full(3, 2.0) for name in TERMINALS}
    assert np.isfinite(function.score(columns)).all()
    assert function.formula.startswith("log(log(")
    with pytest.raises(ValueError, match="nested 101 deep"):
        ScoreFunction(f"add({deep(MAX_LOADED_DEPTH)}, t)")
