"""Capacity arithmetic: (total - reserved) x allocation_ratio, and the per-request unit rules."""

from __future__ import annotations

import pytest

from blazar_lite.placement.capacity import capacity, fits, unit_problem


def test_capacity_is_total_without_reserved_or_overcommit():
    assert capacity(8, 0, 1.0) == 8


def test_capacity_subtracts_reserved_before_applying_the_ratio():
    assert capacity(8, 2, 4.0) == 24


def test_capacity_with_a_fractional_ratio():
    assert capacity(1000, 0, 0.5) == 500


def test_capacity_of_fully_reserved_inventory_is_zero():
    assert capacity(4, 4, 16.0) == 0


def test_an_amount_that_reaches_capacity_exactly_fits():
    assert fits(2, 6, 8, 0, 1.0)


def test_an_amount_one_past_capacity_does_not_fit():
    assert not fits(3, 6, 8, 0, 1.0)


def test_fits_counts_reserved_and_ratio():
    # (4 - 1) x 2.0 = 6
    assert fits(1, 5, 4, 1, 2.0)
    assert not fits(2, 5, 4, 1, 2.0)


def test_nothing_fits_on_fully_reserved_inventory():
    assert not fits(1, 0, 4, 4, 1.0)


def test_fractional_capacity_is_not_rounded_up():
    # (3 - 0) x 1.5 = 4.5: 4 fits, 5 does not.
    assert fits(4, 0, 3, 0, 1.5)
    assert not fits(5, 0, 3, 0, 1.5)


@pytest.mark.parametrize("amount", [2, 4, 6, 8])
def test_amounts_within_the_units_have_no_problem(amount):
    assert unit_problem(amount, 2, 8, 2) is None


def test_below_min_unit_is_a_problem_that_says_so():
    assert unit_problem(1, 2, 8, 1) == "1 is below the min_unit of 2"


def test_above_max_unit_is_a_problem_that_says_so():
    assert unit_problem(9, 1, 8, 1) == "9 is above the max_unit of 8"


def test_an_amount_off_the_step_is_a_problem_that_says_so():
    assert unit_problem(5, 1, 8, 2) == "5 is not a multiple of the step_size of 2"


def test_min_and_max_unit_are_inclusive():
    assert unit_problem(2, 2, 4, 1) is None
    assert unit_problem(4, 2, 4, 1) is None


def test_min_unit_is_checked_before_the_step():
    assert unit_problem(1, 2, 8, 2) == "1 is below the min_unit of 2"
