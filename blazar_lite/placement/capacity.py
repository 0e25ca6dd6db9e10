"""Capacity arithmetic, shared by allocation writes and allocation candidates."""

from __future__ import annotations


def capacity(total: int, reserved: int, allocation_ratio: float) -> float:
    """How much of an inventory may be allocated: (total - reserved) x allocation_ratio."""
    return (total - reserved) * allocation_ratio


def fits(amount: int, used: int, total: int, reserved: int, allocation_ratio: float) -> bool:
    return used + amount <= capacity(total, reserved, allocation_ratio)


def unit_problem(amount: int, min_unit: int, max_unit: int, step_size: int) -> str | None:
    """Why `amount` is not a valid single request against this inventory, or None if it is."""
    if amount < min_unit:
        return f"{amount} is below the min_unit of {min_unit}"
    if amount > max_unit:
        return f"{amount} is above the max_unit of {max_unit}"
    if amount % step_size:
        return f"{amount} is not a multiple of the step_size of {step_size}"
    return None
