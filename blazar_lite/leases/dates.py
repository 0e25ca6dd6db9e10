"""Lease dates: what Blazar clients send, what they parse back, and the rules for a lease's window.

Time is UTC. Every datetime this module returns is timezone-aware UTC; a naive datetime or a date
written without an offset is taken to be UTC.

Accepted in requests (`parse_date`):
- `"YYYY-MM-DD HH:MM"`, the format Blazar documents and its client sends;
- `"now"` (any case), which means the `now` the caller passes in;
- ISO 8601 with `T` or a space between date and time, optional seconds, an optional fraction
  (`.` or `,`, any number of digits, truncated to microseconds) and an optional offset (`Z`,
  `+HH`, `+HHMM`, `+HH:MM`). This covers `"YYYY-MM-DDTHH:MM:SS.ffffff"`, the format we answer
  with, so a client can PUT back a date it read. A date without a time of day is refused, as
  Blazar refuses it.
Dates are accepted from EARLIEST_DATE up to (not including) LATEST_DATE, and durations up to
MAX_DURATION: far enough for any lease, near enough that adding the spans the service works with
(a search window, a duration, cleaning time) can never run past what a datetime holds.

Returned in responses: `format_date` for lease and event dates (`YYYY-MM-DDTHH:MM:SS.ffffff`,
the format python-blazarclient parses for --prolong-for and friends) and `format_timestamp` for
`created_at` / `updated_at` (`YYYY-MM-DD HH:MM:SS`).

"In the past" is decided at minute granularity, as Blazar decides it: a date is in the past when it
is earlier than the start of the current minute. So `"now"`, and any time within the current
minute, is a valid start, even though by the time the request is served it lies a few seconds back.
"""

from __future__ import annotations

import re
import reprlib
from datetime import UTC, datetime, timedelta, timezone

from blazar_lite.exceptions import BadRequest

# The format Blazar names in its invalid-date message; clients and test suites look for the message.
INPUT_FORMAT = "%Y-%m-%d %H:%M"

START_IN_THE_PAST = "Start date must be later than current date"
END_NOT_AFTER_START = "End date must be later than start date."
END_IN_THE_PAST = "End date must be later than current date"
STARTED_LEASE_START_CHANGE = "Cannot modify the start date of already started leases"
TERMINATED_LEASE_CHANGE = "Terminated leases can only be renamed"
BEFORE_END_OUTSIDE_LEASE = "before_end_date must be later than start_date and earlier than end_date"

EARLIEST_DATE = datetime(1000, 1, 1, tzinfo=UTC)
LATEST_DATE = datetime(9000, 1, 1, tzinfo=UTC)
MAX_DURATION = timedelta(days=36525)

_DATE = re.compile(
    r"""
    (?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})
    [T\ ]
    (?P<hour>\d{2}):(?P<minute>\d{2})
    (?: :(?P<second>\d{2}) (?:[.,](?P<fraction>\d+))? )?
    (?P<offset> Z | (?P<sign>[+-])(?P<offset_hours>\d{2})(?::?(?P<offset_minutes>\d{2}))? )?
    """,
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)


def as_utc(value: datetime) -> datetime:
    """`value` as timezone-aware UTC; a naive datetime is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def start_of_minute(value: datetime) -> datetime:
    """The start of the minute `value` falls in, in UTC."""
    return as_utc(value).replace(second=0, microsecond=0)


def invalid_date_message(value: object) -> str:
    """Blazar's message for a date it cannot read, word for word."""
    return f"{value} is an invalid date. Required format: {INPUT_FORMAT}"


def parse_date(value: object, now: datetime) -> datetime:
    """The UTC datetime a request's date stands for, or BadRequest with Blazar's message.

    `value` is a string in one of the accepted forms (module docstring) or a datetime, which is
    passed through as UTC so that callers can mix stored and requested dates.
    """
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "now":
            return as_utc(now)
        match = _DATE.fullmatch(text)
        if match is not None:
            try:
                moment = _datetime_of(match)
            except (ValueError, OverflowError):
                # Out-of-range fields (month 13, 25:00, an offset pushing year 1 back) fall through.
                pass
            else:
                if not EARLIEST_DATE <= moment < LATEST_DATE:
                    raise BadRequest(f"{value} is out of range: dates must be from {describe_date(EARLIEST_DATE)} "
                                     f"and before {describe_date(LATEST_DATE)} (UTC).")
                return moment
    raise BadRequest(invalid_date_message(value))


def _datetime_of(match: re.Match[str]) -> datetime:
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    offset = UTC
    if match["sign"]:
        hours, minutes = int(match["offset_hours"]), int(match["offset_minutes"] or 0)
        if minutes >= 60:
            raise ValueError("offset minutes out of range")
        delta = timedelta(hours=hours, minutes=minutes)
        offset = timezone(-delta if match["sign"] == "-" else delta)
    moment = datetime(int(match["year"]), int(match["month"]), int(match["day"]), int(match["hour"]),
                      int(match["minute"]), int(match["second"] or 0), int(fraction), tzinfo=offset)
    return moment.astimezone(UTC)


def format_date(value: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS.ffffff` in UTC, always six fraction digits: how lease dates go out."""
    moment = as_utc(value)
    # Spelled out rather than strftime, which does not zero-pad years before 1000 on every platform.
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}")


def format_optional_date(value: datetime | None) -> str | None:
    """`format_date`, or None for a date that is not set (an updated_at never updated)."""
    return format_date(value) if value is not None else None


def format_timestamp(value: datetime) -> str:
    """`YYYY-MM-DD HH:MM:SS` in UTC: how created_at and updated_at go out."""
    moment = as_utc(value)
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}")


def describe_date(value: datetime) -> str:
    """A UTC date for messages: `YYYY-MM-DD HH:MM`, with seconds and fraction only when present."""
    moment = as_utc(value)
    text = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}")
    if moment.second or moment.microsecond:
        text += f":{moment.second:02d}"
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text


def validate_window(start: object, end: object, now: datetime,
                    started: bool = False) -> tuple[datetime, datetime]:
    """The lease window (start, end) in UTC, or BadRequest with the message Blazar clients expect.

    `start` and `end` are request values (strings in an accepted form, or datetimes); None means
    the request did not name the date ("Missing parameter start_date" / "... end_date").
    Rules:
    - unless `started`, the start must not be in the past (earlier than the current minute);
      `started` says the lease is already running, so its start is history and not checked;
    - the end must be later than the start;
    - the end must not be in the past (which for an unstarted lease follows from the two above).
    """
    missing = [name for name, value in (("start_date", start), ("end_date", end)) if value is None]
    if missing:
        raise BadRequest(f"Missing parameter {', '.join(missing)}")
    start_at = parse_date(start, now)
    end_at = parse_date(end, now)
    current_minute = start_of_minute(now)
    if not started and start_at < current_minute:
        raise BadRequest(START_IN_THE_PAST)
    if end_at <= start_at:
        raise BadRequest(END_NOT_AFTER_START)
    if end_at < current_minute:
        raise BadRequest(END_IN_THE_PAST)
    return start_at, end_at


def validate_window_update(current_start: datetime, current_end: datetime, start: object, end: object,
                           now: datetime) -> tuple[datetime, datetime]:
    """The window a lease update asks for, checked against the lease's current window.

    `start` / `end` are the request's values, None when the update leaves that date alone.
    A request that moves neither date is accepted as it is, whatever the lease's state, so a client
    may send back the dates it read. Otherwise, in this order:
    - a lease whose end has passed can only be renamed;
    - a lease whose start has passed cannot move its start;
    - then `validate_window` (with `started` for a lease whose start has passed).
    """
    current_start, current_end = as_utc(current_start), as_utc(current_end)
    start_at = current_start if start is None else parse_date(start, now)
    end_at = current_end if end is None else parse_date(end, now)
    if (start_at, end_at) == (current_start, current_end):
        return start_at, end_at
    if current_end <= as_utc(now):
        raise BadRequest(TERMINATED_LEASE_CHANGE)
    started = current_start <= as_utc(now)
    if started and start_at != current_start:
        raise BadRequest(STARTED_LEASE_START_CHANGE)
    return validate_window(start_at, end_at, now, started=started)


def parse_before_end(value: object, start: datetime, end: datetime, now: datetime) -> datetime | None:
    """The lease's before_end_date in UTC, None when not given (None or ""), else strictly inside
    (start, end) or BadRequest."""
    if value is None or value == "":
        return None
    moment = parse_date(value, now)
    if not as_utc(start) < moment < as_utc(end):
        raise BadRequest(BEFORE_END_OUTSIDE_LEASE)
    return moment


def before_end_time(start: datetime, end: datetime, before_end: datetime | None,
                    minutes_before_end: int) -> datetime | None:
    """When a lease's before_end_lease event fires: at `before_end` when the lease names one, else
    `minutes_before_end` before the end (never before the start), or not at all when that is 0."""
    if before_end is not None:
        return as_utc(before_end)
    if minutes_before_end <= 0:
        return None
    return max(as_utc(start), as_utc(end) - timedelta(minutes=minutes_before_end))


_DURATION_PART = re.compile(r"(\d+)([mhd])", re.ASCII)
_DURATION_UNITS = (("d", timedelta(days=1)), ("h", timedelta(hours=1)), ("m", timedelta(minutes=1)))
_UNIT_MINUTES = {unit: length // timedelta(minutes=1) for unit, length in _DURATION_UNITS}
# A number with more significant digits than MAX_DURATION has minutes is over the limit whatever
# its unit; checking this first keeps int() from reading an arbitrarily long number.
_DURATION_DIGITS = len(str(MAX_DURATION // timedelta(minutes=1)))


def parse_duration(value: object, name: str = "duration") -> timedelta:
    """A positive duration written as a number and a unit, or several: 90m, 24h, 2d, 1d12h
    (m minutes, h hours, d days), at most MAX_DURATION; BadRequest naming the field `name` otherwise."""
    text = value.strip().lower() if isinstance(value, str) else ""
    shown = reprlib.repr(value)
    if not text or _DURATION_PART.sub("", text):
        raise BadRequest(f"Invalid input for field '{name}': {shown} is not a duration; write a number and a "
                         "unit (m, h or d) such as 90m, 24h, 2d or 1d12h.")
    parts = _DURATION_PART.findall(text)
    too_long = any(len(number.lstrip("0")) > _DURATION_DIGITS for number, _ in parts)
    minutes = 0 if too_long else sum(int(number) * _UNIT_MINUTES[unit] for number, unit in parts)
    if too_long or minutes > MAX_DURATION // timedelta(minutes=1):
        raise BadRequest(f"Invalid input for field '{name}': {shown} is longer than the limit of "
                         f"{describe_duration(MAX_DURATION)}.")
    duration = timedelta(minutes=minutes)
    if duration <= timedelta(0):
        raise BadRequest(f"Invalid input for field '{name}': {shown} is not longer than zero.")
    return duration


def describe_duration(value: timedelta) -> str:
    """A duration for messages, as `parse_duration` reads it: 2d, 1d12h, 90m becomes 1h30m."""
    rest = value
    parts = []
    for unit, length in _DURATION_UNITS:
        count, rest = divmod(rest, length)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0m"
