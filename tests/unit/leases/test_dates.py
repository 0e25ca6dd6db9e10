"""Lease dates: Blazar's input forms, our output forms, and the rules for a lease's window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blazar_lite.exceptions import BadRequest
from blazar_lite.leases.dates import (
    MAX_DURATION,
    before_end_time,
    describe_date,
    describe_duration,
    format_date,
    format_timestamp,
    parse_before_end,
    parse_date,
    parse_duration,
    start_of_minute,
    validate_window,
    validate_window_update,
)

NOW = datetime(2030, 5, 1, 12, 34, 56, 789000, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def bad_request(call, *args, **kwargs) -> str:
    with pytest.raises(BadRequest) as caught:
        call(*args, **kwargs)
    return caught.value.message


# parse_date


def test_blazar_input_format_is_read_as_utc():
    assert parse_date("2030-05-02 10:00", NOW) == datetime(2030, 5, 2, 10, 0, tzinfo=UTC)


def test_now_is_the_current_time():
    assert parse_date("now", NOW) == NOW


def test_now_is_read_in_any_case_and_with_blanks():
    assert parse_date(" Now ", NOW) == NOW


def test_now_given_naive_comes_back_as_utc():
    assert parse_date("now", NOW.replace(tzinfo=None)) == NOW


def test_the_date_format_we_answer_with_reads_back():
    assert parse_date("2030-05-02T10:00:30.123456", NOW) == datetime(2030, 5, 2, 10, 0, 30, 123456, tzinfo=UTC)


def test_format_date_output_round_trips_through_parse_date():
    moment = datetime(2031, 1, 2, 3, 4, 5, 600007, tzinfo=UTC)
    assert parse_date(format_date(moment), NOW) == moment


@pytest.mark.parametrize("text, expected", [
    ("2030-05-02T10:00", datetime(2030, 5, 2, 10, 0, tzinfo=UTC)),
    ("2030-05-02 10:00:30", datetime(2030, 5, 2, 10, 0, 30, tzinfo=UTC)),
    ("2030-05-02T10:00:30Z", datetime(2030, 5, 2, 10, 0, 30, tzinfo=UTC)),
    ("2030-05-02t10:00:30z", datetime(2030, 5, 2, 10, 0, 30, tzinfo=UTC)),
    ("2030-05-02T10:00:30.5", datetime(2030, 5, 2, 10, 0, 30, 500000, tzinfo=UTC)),
    ("2030-05-02T10:00:30,25", datetime(2030, 5, 2, 10, 0, 30, 250000, tzinfo=UTC)),
    ("2030-05-02T10:00:30.1234567891", datetime(2030, 5, 2, 10, 0, 30, 123456, tzinfo=UTC)),
    ("2030-05-02T12:00:00+02:00", datetime(2030, 5, 2, 10, 0, tzinfo=UTC)),
    ("2030-05-02T12:00:00+0200", datetime(2030, 5, 2, 10, 0, tzinfo=UTC)),
    ("2030-05-02T12:00:00+02", datetime(2030, 5, 2, 10, 0, tzinfo=UTC)),
    ("2030-05-02T05:30:00.000001-04:30", datetime(2030, 5, 2, 10, 0, 0, 1, tzinfo=UTC)),
    ("2030-05-02 10:00+00:00", datetime(2030, 5, 2, 10, 0, tzinfo=UTC)),
])
def test_iso_8601_with_seconds_fractions_and_offsets_is_read_as_utc(text, expected):
    parsed = parse_date(text, NOW)
    assert parsed == expected
    assert parsed.tzinfo is UTC


def test_an_offset_that_crosses_midnight_moves_the_day():
    assert parse_date("2030-01-01T01:00:00+03:00", NOW) == datetime(2029, 12, 31, 22, 0, tzinfo=UTC)


def test_a_datetime_passes_through_as_utc():
    paris = timezone(timedelta(hours=2))
    assert parse_date(datetime(2030, 5, 2, 12, 0, tzinfo=paris), NOW) == datetime(2030, 5, 2, 10, 0, tzinfo=UTC)


def test_a_naive_datetime_is_taken_as_utc():
    assert parse_date(datetime(2030, 5, 2, 12, 0), NOW) == datetime(2030, 5, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", [
    "", "tomorrow", "2030-05-02", "2030-05-02 10", "2030-5-2 10:00", "02-05-2030 10:00",
    "2030-13-01 10:00", "2030-02-30 10:00", "2030-05-02 24:00", "2030-05-02 10:60", "2030-05-02 10:00:60",
    "2030-05-02T10:00:00+24:00", "2030-05-02T10:00:00+02:60", "2030-05-02T10:00:00 +02:00",
    "2030-05-02T10:00:00.", "20300502T1000", "2030-05-02T10:00:00UTC", "0000-01-01 00:00",
    "0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00", "٢٠٣٠-05-02 10:00", "now please",
])
def test_unreadable_dates_get_blazars_message(text):
    assert bad_request(parse_date, text, NOW) == f"{text} is an invalid date. Required format: %Y-%m-%d %H:%M"


@pytest.mark.parametrize("text", ["9000-01-01 00:00", "9999-12-31T23:59:59", "0999-12-31T23:59:59.999999"])
def test_dates_outside_the_accepted_range_are_refused_with_the_range(text):
    assert bad_request(parse_date, text, NOW) == (f"{text} is out of range: dates must be from 1000-01-01 00:00 "
                                                  "and before 9000-01-01 00:00 (UTC).")


@pytest.mark.parametrize("value", [None, 1714560000, ["2030-05-02 10:00"], {"date": "x"}])
def test_values_that_are_not_strings_get_blazars_message(value):
    assert bad_request(parse_date, value, NOW) == f"{value} is an invalid date. Required format: %Y-%m-%d %H:%M"


@settings(deadline=None)
@given(st.text(max_size=40))
def test_parse_date_refuses_any_text_only_with_bad_request(text):
    try:
        parsed = parse_date(text, NOW)
    except BadRequest as exc:
        assert exc.message.endswith((" is an invalid date. Required format: %Y-%m-%d %H:%M",
                                     "and before 9000-01-01 00:00 (UTC)."))
    else:
        assert parsed.tzinfo is UTC


@settings(deadline=None)
@given(st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(8999, 12, 30), timezones=st.just(UTC)))
def test_every_formatted_date_reads_back_as_itself(moment):
    assert parse_date(format_date(moment), NOW) == moment


# Output formats


def test_format_date_always_has_six_fraction_digits():
    assert format_date(datetime(2030, 5, 2, 10, 0, tzinfo=UTC)) == "2030-05-02T10:00:00.000000"


def test_format_date_converts_to_utc():
    tokyo = timezone(timedelta(hours=9))
    assert format_date(datetime(2030, 5, 2, 9, 0, 1, 5, tzinfo=tokyo)) == "2030-05-02T00:00:01.000005"


def test_format_date_treats_naive_as_utc():
    assert format_date(datetime(2030, 5, 2, 9, 0)) == "2030-05-02T09:00:00.000000"


def test_format_date_pads_early_years():
    assert format_date(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000000"


def test_format_timestamp_has_seconds_and_no_fraction():
    assert format_timestamp(datetime(2030, 5, 2, 10, 0, 7, 999999, tzinfo=UTC)) == "2030-05-02 10:00:07"


def test_format_timestamp_converts_to_utc():
    minus_five = timezone(timedelta(hours=-5))
    assert format_timestamp(datetime(2030, 5, 2, 21, 0, tzinfo=minus_five)) == "2030-05-03 02:00:00"


@pytest.mark.parametrize("moment, text", [
    (datetime(2030, 5, 2, 10, 0, tzinfo=UTC), "2030-05-02 10:00"),
    (datetime(2030, 5, 2, 10, 0, 5, tzinfo=UTC), "2030-05-02 10:00:05"),
    (datetime(2030, 5, 2, 10, 0, 0, 5, tzinfo=UTC), "2030-05-02 10:00:00.000005"),
])
def test_describe_date_shows_seconds_only_when_there_are_some(moment, text):
    assert describe_date(moment) == text


def test_start_of_minute_drops_seconds_and_fraction():
    assert start_of_minute(NOW) == datetime(2030, 5, 1, 12, 34, tzinfo=UTC)


# validate_window: creating a lease


def test_a_future_window_is_returned_in_utc():
    assert validate_window("2030-05-02 10:00", "2030-05-03 10:00", NOW) == (at("2030-05-02 10:00"),
                                                                           at("2030-05-03 10:00"))


def test_a_window_starting_now_is_valid():
    start, end = validate_window("now", "2030-05-03 10:00", NOW)
    assert start == NOW
    assert end == at("2030-05-03 10:00")


def test_a_start_within_the_current_minute_is_valid():
    # What the client sends when the user typed the current time: earlier than now by seconds.
    start, _ = validate_window("2030-05-01 12:34", "2030-05-03 10:00", NOW)
    assert start == at("2030-05-01 12:34")


def test_a_start_before_the_current_minute_is_refused():
    assert bad_request(validate_window, "2030-05-01 12:33", "2030-05-03 10:00", NOW) == \
        "Start date must be later than current date"


def test_a_start_one_microsecond_before_the_current_minute_is_refused():
    start = start_of_minute(NOW) - timedelta(microseconds=1)
    assert bad_request(validate_window, start, "2030-05-03 10:00", NOW) == "Start date must be later than current date"


def test_an_end_equal_to_the_start_is_refused():
    assert bad_request(validate_window, "2030-05-02 10:00", "2030-05-02 10:00", NOW) == \
        "End date must be later than start date."


def test_an_end_before_the_start_is_refused():
    assert bad_request(validate_window, "2030-05-02 10:00", "2030-05-02 09:59", NOW) == \
        "End date must be later than start date."


def test_an_end_of_now_with_a_start_of_now_is_refused():
    assert bad_request(validate_window, "now", "now", NOW) == "End date must be later than start date."


def test_a_missing_end_date_is_named():
    assert bad_request(validate_window, "now", None, NOW) == "Missing parameter end_date"


def test_a_missing_start_date_is_named():
    assert bad_request(validate_window, None, "2030-05-03 10:00", NOW) == "Missing parameter start_date"


def test_both_missing_dates_are_named():
    assert bad_request(validate_window, None, None, NOW) == "Missing parameter start_date, end_date"


def test_an_unreadable_end_date_gets_blazars_message():
    assert bad_request(validate_window, "now", "soon", NOW) == \
        "soon is an invalid date. Required format: %Y-%m-%d %H:%M"


def test_offsets_are_compared_in_utc():
    # 14:00+02:00 is 12:00 UTC, before the current minute 12:34 UTC.
    assert bad_request(validate_window, "2030-05-01T14:00:00+02:00", "2030-05-03 10:00", NOW) == \
        "Start date must be later than current date"


# validate_window with started=True: a running lease


def test_a_started_lease_keeps_its_past_start():
    start, end = validate_window(at("2030-04-01 00:00"), "2030-05-03 10:00", NOW, started=True)
    assert (start, end) == (at("2030-04-01 00:00"), at("2030-05-03 10:00"))


def test_a_started_lease_cannot_end_before_the_current_minute():
    assert bad_request(validate_window, at("2030-04-01 00:00"), "2030-05-01 12:33", NOW, started=True) == \
        "End date must be later than current date"


def test_a_started_lease_may_end_now():
    _, end = validate_window(at("2030-04-01 00:00"), "now", NOW, started=True)
    assert end == NOW


# validate_window_update


CURRENT_START, CURRENT_END = at("2030-05-02 10:00"), at("2030-05-03 10:00")
RUNNING_START, RUNNING_END = at("2030-05-01 10:00"), at("2030-05-02 10:00")


def test_an_update_without_dates_keeps_the_window():
    assert validate_window_update(CURRENT_START, CURRENT_END, None, None, NOW) == (CURRENT_START, CURRENT_END)


def test_a_pending_lease_may_move_its_start():
    assert validate_window_update(CURRENT_START, CURRENT_END, "2030-05-02 11:00", None, NOW) == \
        (at("2030-05-02 11:00"), CURRENT_END)


def test_a_pending_lease_may_not_move_its_start_into_the_past():
    assert bad_request(validate_window_update, CURRENT_START, CURRENT_END, "2030-05-01 12:00", None, NOW) == \
        "Start date must be later than current date"


def test_a_pending_lease_may_not_move_its_start_past_its_end():
    assert bad_request(validate_window_update, CURRENT_START, CURRENT_END, "2030-05-04 10:00", None, NOW) == \
        "End date must be later than start date."


def test_a_running_lease_may_be_extended():
    assert validate_window_update(RUNNING_START, RUNNING_END, None, "2030-05-05 10:00", NOW) == \
        (RUNNING_START, at("2030-05-05 10:00"))


def test_a_running_lease_may_be_shortened_to_end_now():
    assert validate_window_update(RUNNING_START, RUNNING_END, None, "now", NOW) == (RUNNING_START, NOW)


def test_a_running_lease_may_not_end_before_the_current_minute():
    assert bad_request(validate_window_update, RUNNING_START, RUNNING_END, None, "2030-05-01 11:00", NOW) == \
        "End date must be later than current date"


def test_a_running_lease_may_not_move_its_start():
    assert bad_request(validate_window_update, RUNNING_START, RUNNING_END, "2030-05-01 11:00", None, NOW) == \
        "Cannot modify the start date of already started leases"


def test_a_running_lease_may_send_back_its_own_start():
    assert validate_window_update(RUNNING_START, RUNNING_END, "2030-05-01T10:00:00.000000", "2030-05-03 10:00",
                                  NOW) == (RUNNING_START, at("2030-05-03 10:00"))


def test_a_lease_that_starts_this_very_instant_counts_as_started():
    assert bad_request(validate_window_update, NOW, RUNNING_END, "2030-05-01 13:00", None, NOW) == \
        "Cannot modify the start date of already started leases"


def test_a_terminated_lease_cannot_change_its_dates():
    assert bad_request(validate_window_update, at("2030-04-01 10:00"), at("2030-04-02 10:00"), None,
                       "2030-05-03 10:00", NOW) == "Terminated leases can only be renamed"


def test_a_terminated_lease_accepts_its_own_dates_unchanged():
    start, end = at("2030-04-01 10:00"), at("2030-04-02 10:00")
    assert validate_window_update(start, end, "2030-04-01 10:00", "2030-04-02T10:00:00.000000", NOW) == (start, end)


def test_an_update_with_an_unreadable_date_gets_blazars_message():
    assert bad_request(validate_window_update, CURRENT_START, CURRENT_END, None, "2030-05-03", NOW) == \
        "2030-05-03 is an invalid date. Required format: %Y-%m-%d %H:%M"


# before_end


def test_no_before_end_date_is_none():
    assert parse_before_end(None, CURRENT_START, CURRENT_END, NOW) is None
    assert parse_before_end("", CURRENT_START, CURRENT_END, NOW) is None


def test_a_before_end_date_inside_the_lease_is_read():
    assert parse_before_end("2030-05-03 09:00", CURRENT_START, CURRENT_END, NOW) == at("2030-05-03 09:00")


@pytest.mark.parametrize("text", ["2030-05-02 10:00", "2030-05-03 10:00", "2030-05-04 10:00"])
def test_a_before_end_date_on_or_outside_the_lease_limits_is_refused(text):
    assert bad_request(parse_before_end, text, CURRENT_START, CURRENT_END, NOW) == \
        "before_end_date must be later than start_date and earlier than end_date"


def test_before_end_fires_at_the_date_the_lease_names():
    assert before_end_time(CURRENT_START, CURRENT_END, at("2030-05-02 11:00"), 60) == at("2030-05-02 11:00")


def test_before_end_fires_the_configured_minutes_before_the_end():
    assert before_end_time(CURRENT_START, CURRENT_END, None, 60) == at("2030-05-03 09:00")


def test_before_end_never_fires_before_the_start():
    assert before_end_time(CURRENT_START, CURRENT_START + 10 * MINUTE, None, 60) == CURRENT_START


def test_before_end_does_not_fire_when_configured_off():
    assert before_end_time(CURRENT_START, CURRENT_END, None, 0) is None


# Durations.

@pytest.mark.parametrize("text, expected", [
    ("90m", timedelta(minutes=90)), ("24h", timedelta(hours=24)), ("2d", timedelta(days=2)),
    ("1d12h", timedelta(days=1, hours=12)), (" 1H30M ", timedelta(hours=1, minutes=30)),
])
def test_a_duration_is_numbers_with_units(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("value", ["", "2", "2w", "1.5h", "h", "-1h", None, 5])
def test_anything_else_is_not_a_duration_and_the_message_names_the_field(value: object) -> None:
    with pytest.raises(BadRequest, match="Invalid input for field 'length': .* is not a duration; write a number"):
        parse_duration(value, "length")


@pytest.mark.parametrize("text", ["36525d1m", "99999999999999d", "9" * 5000 + "m", "20000d20000d"])
def test_a_duration_longer_than_the_limit_is_refused_with_the_limit(text: str) -> None:
    with pytest.raises(BadRequest, match="Invalid input for field 'length': .* is longer than the limit of 36525d"):
        parse_duration(text, "length")


def test_the_longest_duration_is_accepted() -> None:
    assert parse_duration("36525d") == MAX_DURATION


def test_a_duration_of_zero_is_refused() -> None:
    with pytest.raises(BadRequest, match="'0m' is not longer than zero"):
        parse_duration("0m")


@pytest.mark.parametrize("value, expected", [
    (timedelta(minutes=90), "1h30m"), (timedelta(days=2), "2d"), (timedelta(days=1, hours=12), "1d12h"),
    (timedelta(seconds=30), "0m"),
])
def test_a_duration_is_described_as_it_is_written(value: timedelta, expected: str) -> None:
    assert describe_duration(value) == expected
