"""How the client commands print for people: table cells and aligned columns; KEY=VALUE options."""

from __future__ import annotations

import click
import pytest

from blazar_lite.client.commands.common import KEY_VALUE, cell, table


@pytest.mark.parametrize(("value", "text"), [
    (None, ""), (True, "True"), (7, "7"), ("a b", "a b"), (["x", "y"], "x, y"),
    ({"b": "2", "a": None}, "a=, b=2"), ([], "")])
def test_cells_spell_values_on_one_line(value: object, text: str) -> None:
    assert cell(value) == text


def test_tables_align_columns_under_a_rule() -> None:
    assert table(("id", "name"), [["1", "compute-1"], [12, None]]).splitlines() == [
        "id  name",
        "--  ---------",
        "1   compute-1",
        "12"]


def test_a_table_of_no_rows_is_its_header() -> None:
    assert table(("id", "name"), []).splitlines() == ["id  name", "--  ----"]


def test_key_value_splits_at_the_first_equals_sign() -> None:
    assert KEY_VALUE.convert("a=b=c", None, None) == ("a", "b=c")
    assert KEY_VALUE.convert("a=", None, None) == ("a", "")


@pytest.mark.parametrize("text", ["a", "=b"])
def test_key_value_without_a_key_is_refused(text: str) -> None:
    with pytest.raises(click.BadParameter):
        KEY_VALUE.convert(text, None, None)
