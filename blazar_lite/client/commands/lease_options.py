"""What the lease commands' structured options hold: reservations, reservation changes and events,
each written as a comma-separated KEY=VALUE list or as one JSON object; and durations.

Filters (hypervisor_properties, resource_properties) are JSON lists such as ["==", "$gpu", "true"],
which hold commas themselves, so in a KEY=VALUE list a value that starts with '[' runs to its
matching ']' (brackets inside JSON strings do not count). Values are converted as the service
reads them: integers for sizes and counts, True/False/None for affinity, filters as JSON text.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import click

from blazar_lite.client.leases import parse_duration

PHYSICAL_HOST = "physical:host"
# The fields each reservation type takes at create, as the service reads them.
RESERVATION_KEYS = {
    PHYSICAL_HOST: ("min", "max", "hypervisor_properties", "resource_properties", "before_end"),
    "virtual:instance": ("amount", "vcpus", "memory_mb", "disk_gb", "affinity", "resource_properties"),
    "flavor:instance": ("flavor_id", "amount", "affinity", "resource_properties"),
}
# What an update may change on a reservation; the service says which of these its type allows.
CHANGEABLE_KEYS = ("min", "max", "hypervisor_properties", "resource_properties", "before_end", "amount", "vcpus",
                   "memory_mb", "disk_gb", "affinity")
EVENT_KEYS = ("event_type", "event_date")
INTEGER_KEYS = ("min", "max", "amount", "vcpus", "memory_mb", "disk_gb")
FILTER_KEYS = ("hypervisor_properties", "resource_properties")
_AFFINITY = {"true": True, "false": False, "none": None}
_INTEGER = re.compile(r"\s*-?\d+\s*", re.ASCII)
_FILTER_EXAMPLE = '[">=", "$vcpus", "2"]'


def _closing(text: str, start: int) -> int | None:
    """The index just past the ']' that closes the '[' at `start`, or None when none does."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def split_pairs(text: str) -> dict[str, str]:
    """KEY=VALUE[,KEY=VALUE…] as {key: value}, a value that starts with '[' running to its matching
    ']'; ValueError saying what is wrong."""
    pairs: dict[str, str] = {}
    position = 0
    while True:
        equals, comma = text.find("=", position), text.find(",", position)
        if equals < 0 or 0 <= comma < equals:
            item = text[position:comma if comma >= 0 else len(text)].strip()
            if not item:
                raise ValueError("there is an empty item (two commas in a row, or a comma at an end).")
            raise ValueError(f"{item!r} is not KEY=VALUE.")
        key = text[position:equals].strip()
        if not key:
            item = text[position:comma if comma >= 0 else len(text)].strip()
            raise ValueError(f"{item!r} has no KEY before its '='.")
        start = equals + 1
        value_start = len(text) - len(text[start:].lstrip())
        if text.startswith("[", value_start):
            end = _closing(text, value_start)
            if end is None:
                raise ValueError(f"the value of {key} opens a '[' that is never closed.")
            trailing = text[end:].lstrip()
            if trailing and not trailing.startswith(","):
                raise ValueError(f"the value of {key} goes on after its closing ']' ({trailing[:20]!r}); "
                                 "separate KEY=VALUE items with commas.")
            value = text[start:end]
            end = len(text) - len(trailing)
        else:
            end = text.find(",", start)
            end = len(text) if end < 0 else end
            value = text[start:end]
        if key in pairs:
            raise ValueError(f"{key} is given twice.")
        pairs[key] = value.strip()
        if end >= len(text):
            return pairs
        position = end + 1


def read_spec(text: str) -> dict[str, Any]:
    """A JSON object (values as JSON), or a KEY=VALUE list (values as text)."""
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"this is not a JSON object: {exc.msg} at character {exc.pos}.") from None
        if not isinstance(value, dict):
            raise ValueError("give a JSON object or a KEY=VALUE list.")
        return value
    return split_pairs(text)


def _shown(key: str, value: Any) -> str:
    return f"{key}={value if isinstance(value, str) else json.dumps(value)}"


def _integer(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise ValueError(f"{_shown(key, value)} is not an integer.")


def _affinity(key: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _AFFINITY:
        return _AFFINITY[value.strip().lower()]
    raise ValueError(f"{_shown(key, value)} is not one of True, False or None.")


def _filter(key: str, value: Any) -> str:
    # The service stores and shows a filter as JSON text, the form Blazar's clients send.
    if isinstance(value, list):
        return json.dumps(value)
    if isinstance(value, str):
        if not value.strip():
            return ""
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{_shown(key, value)} is not JSON ({exc.msg}); write a filter such as "
                             f"{_FILTER_EXAMPLE}.") from None
        if isinstance(parsed, list):
            return value.strip()
    raise ValueError(f"{_shown(key, value)} is not a JSON list; write a filter such as {_FILTER_EXAMPLE}.")


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{_shown(key, value)}: {key} takes text.")
    return value


def _convert(key: str, value: Any) -> Any:
    if key in INTEGER_KEYS:
        return _integer(key, value)
    if key == "affinity":
        return _affinity(key, value)
    if key in FILTER_KEYS:
        return _filter(key, value)
    return _text(key, value)


def _refuse_unknown(spec: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    unknown = [key for key in spec if key not in allowed]
    if unknown:
        raise ValueError(f"{what} has no {', '.join(unknown)}; its fields are {', '.join(allowed)}.")


def reservation(spec: Mapping[str, Any], *, resource_type: str | None = None) -> dict[str, Any]:
    """A reservation for a lease create: its resource_type (`resource_type` unless the spec names
    it) and the fields that type takes, converted."""
    given = spec.get("resource_type", resource_type)
    if given is None:
        raise ValueError(f"give its resource_type: {', '.join(RESERVATION_KEYS)}.")
    if resource_type is not None and given != resource_type:
        raise ValueError(f"resource_type={given}: this option makes {resource_type} reservations; "
                         "use --reservation for the others.")
    if given not in RESERVATION_KEYS:
        raise ValueError(f"{_shown('resource_type', given)} is not one of {', '.join(RESERVATION_KEYS)}.")
    fields = {key: value for key, value in spec.items() if key != "resource_type"}
    _refuse_unknown(fields, RESERVATION_KEYS[given], f"a {given} reservation")
    return {"resource_type": given, **{key: _convert(key, value) for key, value in fields.items()}}


def reservation_change(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A change to one reservation of a lease: its id and the fields to change, converted."""
    if "id" not in spec:
        raise ValueError("give the id of the reservation to change (id=UUID).")
    fields = {key: value for key, value in spec.items() if key != "id"}
    _refuse_unknown(fields, CHANGEABLE_KEYS, "a reservation change")
    if not fields:
        raise ValueError("give a field to change besides the id.")
    return {"id": _text("id", spec["id"]), **{key: _convert(key, value) for key, value in fields.items()}}


def event(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An event as Blazar's lease create body lists it."""
    _refuse_unknown(spec, EVENT_KEYS, "an event")
    return {key: _text(key, value) for key, value in spec.items()}


class Spec(click.ParamType):
    """An option value read by `read_spec` and then by `read`; a usage error (exit 2) saying what
    is wrong otherwise."""

    def __init__(self, name: str, read: Callable[[Mapping[str, Any]], dict[str, Any]]) -> None:
        self.name = name
        self.read = read

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        try:
            return self.read(read_spec(str(value)))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Duration(click.ParamType):
    """A duration such as 30m, 12h, 1d or 1d12h, as the client's date arithmetic reads it."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


PHYSICAL_RESERVATION = Spec("physical reservation", functools.partial(reservation, resource_type=PHYSICAL_HOST))
RESERVATION = Spec("reservation", reservation)
RESERVATION_CHANGE = Spec("reservation change", reservation_change)
EVENT = Spec("event", event)
DURATION = Duration()
