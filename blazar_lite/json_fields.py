"""Marshmallow fields for JSON bodies that take JSON's types at their word: a string, a number or
a boolean never stands in for another (marshmallow would otherwise accept "8" or 1 for true)."""

from __future__ import annotations

from marshmallow import ValidationError, fields


class Int(fields.Integer):
    """A JSON integer: no strings, no floats, no booleans (JSON true is not 1 to a client)."""

    def __init__(self, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(value, bool):
            raise ValidationError("Not a valid integer.")
        return super()._deserialize(value, attr, data, **kwargs)


class Bool(fields.Boolean):
    """A JSON boolean: no strings or numbers standing in for one."""

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[no-untyped-def]
        if not isinstance(value, bool):
            raise ValidationError("Not a valid boolean (use true or false).")
        return value
