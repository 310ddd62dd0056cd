"""Time expressions and TimeRange, with a fixed `now` (reference section 22.12)."""

from __future__ import annotations

import math
import os
import time as time_module
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone

import pytest

from langchain_vaultsearch import TimeRange
from langchain_vaultsearch.time_ranges import (
    find_time_expression,
    parse_time_expression,
    resolve_time_range,
)

# The reference's mocked clock: Monday 2024-01-15 12:00, local time.
NOW = datetime(2024, 1, 15, 12, 0)


def local(day: str, at: time = time.min) -> datetime:
    return datetime.combine(date.fromisoformat(day), at).astimezone()


def span(text: str, now: datetime = NOW) -> tuple[str, str] | None:
    parsed = parse_time_expression(text, now)
    if parsed is None:
        return None
    return parsed.start.date().isoformat(), parsed.end.date().isoformat()


REFERENCE_CASES = [
    ("last week", "2024-01-08", "2024-01-14"),
    ("last month", "2023-12-01", "2023-12-31"),
    ("last year", "2023-01-01", "2023-12-31"),
    ("last 3 days", "2024-01-12", "2024-01-15"),
    ("last 2 weeks", "2024-01-01", "2024-01-15"),
    ("last 6 months", "2023-07-15", "2024-01-15"),
    ("this week", "2024-01-15", "2024-01-21"),
    ("this month", "2024-01-01", "2024-01-31"),
    ("this year", "2024-01-01", "2024-12-31"),
    ("next week", "2024-01-22", "2024-01-28"),
    ("next month", "2024-02-01", "2024-02-29"),
    ("week of 2024-01-10", "2024-01-08", "2024-01-14"),
    ("week of last monday", "2024-01-08", "2024-01-14"),
    ("week of january 10", "2024-01-08", "2024-01-14"),
    ("January", "2024-01-01", "2024-01-31"),
    ("Jan", "2024-01-01", "2024-01-31"),
    ("February", "2023-02-01", "2023-02-28"),
    ("mar", "2023-03-01", "2023-03-31"),
    ("December", "2023-12-01", "2023-12-31"),
    ("march 2022", "2022-03-01", "2022-03-31"),
    ("sept 2023", "2023-09-01", "2023-09-30"),
    ("Q1", "2024-01-01", "2024-03-31"),
    ("Q3", "2023-07-01", "2023-09-30"),
    ("Q4 2023", "2023-10-01", "2023-12-31"),
    ("2023", "2023-01-01", "2023-12-31"),
    ("2024-01-10", "2024-01-10", "2024-01-10"),
    ("January 10", "2024-01-10", "2024-01-10"),
    ("last monday", "2024-01-08", "2024-01-08"),
    ("next friday", "2024-01-26", "2024-01-26"),
    ("today", "2024-01-15", "2024-01-15"),
    ("yesterday", "2024-01-14", "2024-01-14"),
    ("tomorrow", "2024-01-16", "2024-01-16"),
    ("from 2024-01-01 to 2024-01-15", "2024-01-01", "2024-01-15"),
    ("from january 1 to january 15", "2024-01-01", "2024-01-15"),
    ("from 2024-01-01 to now", "2024-01-01", "2024-01-15"),
]

MORE_CASES = [
    # relative periods, spelled differently
    ("past 2 weeks", "2024-01-01", "2024-01-15"),
    ("past two weeks", "2024-01-01", "2024-01-15"),
    ("previous 7 days", "2024-01-08", "2024-01-15"),
    ("in the last 7 days", "2024-01-08", "2024-01-15"),
    ("past week", "2024-01-08", "2024-01-15"),
    ("last 2 quarters", "2023-07-15", "2024-01-15"),
    ("LAST WEEK", "2024-01-08", "2024-01-14"),
    ("@vault last week?", "2024-01-08", "2024-01-14"),
    # calendar periods
    ("previous month", "2023-12-01", "2023-12-31"),
    ("this quarter", "2024-01-01", "2024-03-31"),
    ("last quarter", "2023-10-01", "2023-12-31"),
    ("next quarter", "2024-04-01", "2024-06-30"),
    ("next year", "2025-01-01", "2025-12-31"),
    ("3 days ago", "2024-01-12", "2024-01-12"),
    ("2 weeks ago", "2024-01-01", "2024-01-07"),
    ("a month ago", "2023-12-01", "2023-12-31"),
    # week of a day that is later this week: the week has begun, so it is this week
    ("week of january 20", "2024-01-15", "2024-01-21"),
    # months, quarters, years in other spellings
    ("2024 march", "2024-03-01", "2024-03-31"),
    ("2024-03", "2024-03-01", "2024-03-31"),
    ("in march 2023", "2023-03-01", "2023-03-31"),
    ("2024 Q2", "2024-04-01", "2024-06-30"),
    ("quarter 2", "2023-04-01", "2023-06-30"),
    ("year 2023", "2023-01-01", "2023-12-31"),
    # a month or quarter of a year named relative to today
    ("march last year", "2023-03-01", "2023-03-31"),
    ("december of this year", "2024-12-01", "2024-12-31"),
    ("q4 last year", "2023-10-01", "2023-12-31"),
    ("quarter 1 next year", "2025-01-01", "2025-03-31"),
    ("the year of 2023", "2023-01-01", "2023-12-31"),
    ("the year before last", "2022-01-01", "2022-12-31"),
    ("march the year before last", "2022-03-01", "2022-03-31"),
    ("q4 of the year before last", "2022-10-01", "2022-12-31"),
    # halves of a year: January to June, July to December
    ("first half of 2023", "2023-01-01", "2023-06-30"),
    ("the second half of last year", "2023-07-01", "2023-12-31"),
    ("second half of the year", "2024-07-01", "2024-12-31"),  # this year's, begun or not
    ("first half of the year before last", "2022-01-01", "2022-06-30"),
    ("h2 2023", "2023-07-01", "2023-12-31"),
    ("2023-h1", "2023-01-01", "2023-06-30"),
    # days
    ("2024/01/10", "2024-01-10", "2024-01-10"),
    ("2024.01.10", "2024-01-10", "2024-01-10"),
    ("jan 10, 2023", "2023-01-10", "2023-01-10"),
    ("10th of january 2023", "2023-01-10", "2023-01-10"),
    ("december 25", "2023-12-25", "2023-12-25"),
    ("march 5 last year", "2023-03-05", "2023-03-05"),  # not the most recent March 5
    ("march 5th, next year", "2025-03-05", "2025-03-05"),
    ("the day before yesterday", "2024-01-13", "2024-01-13"),
    ("day after tomorrow", "2024-01-17", "2024-01-17"),
    ("this friday", "2024-01-19", "2024-01-19"),
    ("on monday", "2024-01-15", "2024-01-15"),
    ("sunday", "2024-01-14", "2024-01-14"),
    # ranges
    ("between march and may 2023", "2023-03-01", "2023-05-31"),
    ("2024-01-01..2024-01-15", "2024-01-01", "2024-01-15"),
    ("2024-01-01 - 2024-01-15", "2024-01-01", "2024-01-15"),
    ("since january 10", "2024-01-10", "2024-01-15"),
    ("from december to february", "2023-12-01", "2024-02-29"),
    ("from 2024-01-15 to 2024-01-01", "2024-01-01", "2024-01-15"),
    ("from 2014-01-01 to 2023-12-31", "2014-01-01", "2023-12-31"),
]


@pytest.mark.parametrize(("text", "start", "end"), REFERENCE_CASES + MORE_CASES)
def test_expression_table(text: str, start: str, end: str) -> None:
    assert span(text) == (start, end)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("between march and may 2023", "2023-03-01", "2023-05-31"),
        ("from january to march 2024", "2024-01-01", "2024-03-31"),
        ("march to may 2023", "2023-03-01", "2023-05-31"),
        ("from march 2023 to may", "2023-03-01", "2023-05-31"),
        ("from november to february 2024", "2023-11-01", "2024-02-29"),
        ("from november 2023 to february", "2023-11-01", "2024-02-29"),
        ("from march 3 to march 10 2023", "2023-03-03", "2023-03-10"),
        ("from q4 to q1 2024", "2023-10-01", "2024-03-31"),
        ("from december to today", "2025-12-01", "2026-11-27"),  # yearless: most recent
        # Beside a whole year a month is still the latest: the range runs up to it.
        ("between 2020 and march", "2020-01-01", "2026-03-31"),
        ("from 2023 to may", "2023-01-01", "2026-05-31"),
        ("from last year to march", "2025-01-01", "2026-03-31"),
    ],
)
def test_a_range_end_without_a_year_is_in_the_other_ends_year(
    text: str, start: str, end: str
) -> None:
    """Not the most recent March, years after the range's end ("march" of today)."""
    assert span(text, datetime(2026, 11, 27, 12, 0)) == (start, end)


@pytest.mark.parametrize(
    "text",
    [
        "invalid time",
        "",
        "   ",
        "random text",
        "week of invalid",
        "last 0 days",
        "last -3 days",
        "2023-02-29",
        "2024-13-01",
        "2024-13",
        "january 32",
        "01/10/2024",  # month or day first? not guessed
        "last 99999999 days",
        "last 10000 years",
        "from banana to 2024-01-01",
        *("first half", "h1", "h3 2023", "third half of 2023"),  # of which year? no half
        "february 30 last year",
    ],
)
def test_unparseable_text_is_none(text: str) -> None:
    assert parse_time_expression(text, NOW) is None


def test_ranges_cover_whole_local_days() -> None:
    parsed = parse_time_expression("last week", NOW)
    assert parsed is not None
    assert parsed.start == local("2024-01-08")
    assert parsed.end == local("2024-01-14", time.max)
    assert parsed.start.utcoffset() == datetime(2024, 1, 8).astimezone().utcoffset()


def test_last_n_days_include_today() -> None:
    # The original ended at 00:00 today; a note written this morning is a recent note.
    parsed = parse_time_expression("last 7 days", NOW)
    assert parsed is not None
    this_morning = datetime(2024, 1, 15, 9, 30).astimezone()
    assert parsed.contains(this_morning)
    assert parsed.contains(NOW.astimezone())
    assert not parsed.contains(local("2024-01-07", time.max))


@pytest.mark.parametrize(
    ("now", "text", "start", "end"),
    [
        # weeks start on Monday, whatever day today is
        (datetime(2024, 1, 21, 23, 0), "this week", "2024-01-15", "2024-01-21"),
        (datetime(2024, 1, 17, 8, 0), "this week", "2024-01-15", "2024-01-21"),
        (datetime(2024, 1, 17, 8, 0), "last monday", "2024-01-08", "2024-01-08"),
        (datetime(2024, 1, 17, 8, 0), "monday", "2024-01-15", "2024-01-15"),
        # year boundaries
        (datetime(2024, 1, 1, 9, 0), "last week", "2023-12-25", "2023-12-31"),
        (datetime(2024, 1, 1, 9, 0), "yesterday", "2023-12-31", "2023-12-31"),
        (datetime(2024, 1, 1, 9, 0), "last month", "2023-12-01", "2023-12-31"),
        (datetime(2024, 1, 1, 9, 0), "last quarter", "2023-10-01", "2023-12-31"),
        (datetime(2024, 12, 31, 9, 0), "this week", "2024-12-30", "2025-01-05"),
        (datetime(2024, 12, 31, 9, 0), "next quarter", "2025-01-01", "2025-03-31"),
        (datetime(2024, 12, 31, 9, 0), "tomorrow", "2025-01-01", "2025-01-01"),
        (datetime(2025, 1, 2, 9, 0), "last 3 days", "2024-12-30", "2025-01-02"),
        (datetime(2025, 1, 2, 9, 0), "week of december 31", "2024-12-30", "2025-01-05"),
        # leap years
        (datetime(2024, 3, 31, 9, 0), "last month", "2024-02-01", "2024-02-29"),
        (datetime(2023, 3, 31, 9, 0), "last month", "2023-02-01", "2023-02-28"),
        (datetime(2024, 2, 29, 9, 0), "last year", "2023-01-01", "2023-12-31"),
        (datetime(2024, 2, 29, 9, 0), "last 1 year", "2023-02-28", "2024-02-29"),
        (datetime(2024, 3, 31, 9, 0), "last 1 month", "2024-02-29", "2024-03-31"),
        (datetime(2024, 3, 1, 9, 0), "feb 29", "2024-02-29", "2024-02-29"),
        (datetime(2023, 3, 1, 9, 0), "feb 29", "2020-02-29", "2020-02-29"),
        (datetime(2024, 3, 1, 9, 0), "february 2024", "2024-02-01", "2024-02-29"),
        (datetime(2024, 3, 1, 9, 0), "2024-02-29", "2024-02-29", "2024-02-29"),
    ],
)
def test_calendar_edges(now: datetime, text: str, start: str, end: str) -> None:
    assert span(text, now) == (start, end)


def test_label_is_the_expression_as_typed() -> None:
    parsed = parse_time_expression("  Last   Week? ", NOW)
    assert parsed is not None
    assert parsed.label == "Last Week"


def test_aware_now_is_read_in_local_time() -> None:
    aware = NOW.astimezone().astimezone(timezone(timedelta(hours=13)))
    assert span("yesterday", aware) == ("2024-01-14", "2024-01-14")


def test_default_now_is_the_clock() -> None:
    before = date.today()
    parsed = parse_time_expression("today")
    after = date.today()
    assert parsed is not None
    assert parsed.start.date() in {before, after}


def test_ten_year_range_parses_whole_and_caps_to_its_last_365_days() -> None:
    parsed = parse_time_expression("from 2014-01-01 to 2023-12-31", NOW)
    assert parsed is not None
    assert parsed.days > 3650
    capped = parsed.last_days(365)
    assert capped.end == parsed.end
    assert capped.start == parsed.end - timedelta(days=365)
    assert capped.days == pytest.approx(365)
    assert capped.label == parsed.label
    assert not capped.overlaps_day(date(2022, 12, 30))
    assert capped.overlaps_day(date(2023, 1, 1))


def test_cap_never_cuts_a_calendar_year() -> None:
    common_year = parse_time_expression("2023", NOW)
    assert common_year is not None
    assert common_year.last_days(365) is common_year
    # 2024 lasts 366 days; 365 days back from its last instant still reach into 1 January.
    leap_year = parse_time_expression("2024", NOW)
    assert leap_year is not None
    assert leap_year.last_days(365).overlaps_day(date(2024, 1, 1))
    week = parse_time_expression("last week", NOW)
    assert week is not None
    assert week.last_days(365) is week
    with pytest.raises(ValueError, match="positive"):
        week.last_days(0)


# --------------------------------------------------------------------------- TimeRange


def test_time_range_rejects_naive_and_reversed_ends() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        TimeRange(datetime(2024, 1, 1), datetime(2024, 1, 2))
    with pytest.raises(ValueError, match="starts after it ends"):
        TimeRange(local("2024-01-02"), local("2024-01-01"))
    with pytest.raises(ValueError, match="starts after it ends"):
        TimeRange.from_dates(date(2024, 1, 2), date(2024, 1, 1))


def test_from_dates_default_label_and_membership() -> None:
    week = TimeRange.from_dates(date(2024, 1, 8), date(2024, 1, 14))
    assert week.label == "2024-01-08 to 2024-01-14"
    assert TimeRange.from_dates(date(2024, 1, 8), date(2024, 1, 8)).label == "2024-01-08"
    assert week.contains(local("2024-01-08"))
    assert week.contains(local("2024-01-14", time.max))
    assert not week.contains(local("2024-01-15"))
    assert week.contains_ms(local("2024-01-10", time(15)).timestamp() * 1000)
    assert not week.contains_ms(local("2024-01-07", time(23, 59)).timestamp() * 1000)
    assert week.overlaps_day(date(2024, 1, 14))
    assert not week.overlaps_day(date(2024, 1, 7))


def test_epoch_milliseconds_round_trip() -> None:
    start_ms = local("2024-01-08").timestamp() * 1000
    end_ms = local("2024-01-14", time(18)).timestamp() * 1000
    span_ms = TimeRange.from_epoch_ms(start_ms, end_ms, "last week")
    assert span_ms.start_ms == pytest.approx(start_ms)
    assert span_ms.end_ms == pytest.approx(end_ms)
    assert span_ms.label == "last week"
    assert span_ms.start == local("2024-01-08")


@pytest.mark.parametrize(
    ("start_ms", "end_ms"),
    [(0, 1000), (-5, 1000), (1000, 0), (math.nan, 1000), (1000, math.inf), (2000, 1000)],
)
def test_bad_epoch_ranges_are_clear_errors(start_ms: float, end_ms: float) -> None:
    with pytest.raises(ValueError, match=r"epoch|starts after"):
        TimeRange.from_epoch_ms(start_ms, end_ms)


def test_huge_epoch_values_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="out of range"):
        TimeRange.from_epoch_ms(1000, 1e20)


# --------------------------------------------------------------------------- time zones


@pytest.fixture
def new_york() -> Iterator[None]:
    if not hasattr(time_module, "tzset"):
        pytest.fail("time.tzset is needed to test daylight saving time")
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time_module.tzset()
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = previous
        time_module.tzset()


@pytest.mark.usefixtures("new_york")
def test_days_are_local_across_daylight_saving_time() -> None:
    march = parse_time_expression("march 2024", datetime(2024, 4, 2, 12))
    assert march is not None
    assert march.start.utcoffset() == timedelta(hours=-5)
    assert march.end.utcoffset() == timedelta(hours=-4)
    assert (march.start.hour, march.end.hour, march.end.minute) == (0, 23, 59)
    # 31 days minus the hour lost on 10 March
    assert march.days == pytest.approx(31 - 1 / 24, abs=1e-6)


@pytest.mark.usefixtures("new_york")
def test_late_evening_belongs_to_the_local_day() -> None:
    # 23:30 in New York on 14 January is 04:30 UTC on the 15th.
    evening = datetime(2024, 1, 15, 4, 30, tzinfo=timezone.utc)
    yesterday = parse_time_expression("yesterday", datetime(2024, 1, 15, 12))
    assert yesterday is not None
    assert yesterday.contains(evening)


# --------------------------------------------------------------------------- in questions


def found(question: str, now: datetime = NOW) -> tuple[str, str, str] | None:
    """What find_time_expression reads in a question: (label, first day, last day)."""
    period = find_time_expression(question, now)
    if period is None:
        return None
    return period.label, period.start.date().isoformat(), period.end.date().isoformat()


@pytest.mark.parametrize(
    ("question", "label", "start", "end"),
    [
        (
            "What did I decide about [[Project Alpha]] in #meetings last week?",
            "last week",
            "2024-01-08",
            "2024-01-14",
        ),
        ("what did I write yesterday", "yesterday", "2024-01-14", "2024-01-14"),
        # Chinese writes no space around a date.
        ("我在2023-03做了什么？", "2023-03", "2023-03-01", "2023-03-31"),
        ("2023-02-23那天做了什么", "2023-02-23", "2023-02-23", "2023-02-23"),
        ("Summarise my notes from the last 3 days.", "last 3 days", "2024-01-12", "2024-01-15"),
        ("Q1 2023 goals: did I meet them?", "Q1 2023", "2023-01-01", "2023-03-31"),
        ("plans for next month", "next month", "2024-02-01", "2024-02-29"),
        (
            "What happened during the week of 2024-01-03?",
            "week of 2024-01-03",
            "2024-01-01",
            "2024-01-07",
        ),
        # The longest phrase wins: one range, not its first day.
        (
            "notes from march 3 to march 10 please",
            "from march 3 to march 10",
            "2023-03-03",
            "2023-03-10",
        ),
        (
            "between 2023-12-01 and 2023-12-24, what shipped?",
            "between 2023-12-01 and 2023-12-24",
            "2023-12-01",
            "2023-12-24",
        ),
        # A bare month or weekday counts after a preposition; the label drops the filler.
        ("What did I cook in May?", "May", "2023-05-01", "2023-05-31"),
        ("what did I do on friday?", "friday", "2024-01-12", "2024-01-12"),
        ("my 1999 diary", "1999", "1999-01-01", "1999-12-31"),
        ("what did Sarah say since january 10", "since january 10", "2024-01-10", "2024-01-15"),
        # With a relative year too: after a preposition a month, else the verb and the year.
        ("what did I plan in march last year", "march last year", "2023-03-01", "2023-03-31"),
        ("what may next year bring", "next year", "2025-01-01", "2025-12-31"),
        ("we march next year", "next year", "2025-01-01", "2025-12-31"),
        (
            "what did I ship in the first half of last year?",
            "first half of last year",
            "2023-01-01",
            "2023-06-30",
        ),
    ],
)
def test_time_phrases_are_found_inside_questions(
    question: str, label: str, start: str, end: str
) -> None:
    assert found(question) == (label, start, end)


@pytest.mark.parametrize(
    "question",
    [
        "How do I set up OAuth in Next.js?",
        "may I see the deployment notes",  # "may" the verb
        "notes about the march on Washington",  # "march" the noun
        "What happened in [[2024-01-10 Standup]]?",  # a note's name, not a day
        "notes tagged #2024",  # a tag
        "why does `date 2024-01-10` fail",  # code
        "the dev server runs on port 3001",  # not a year
        "how did I solve the 2048 puzzle",  # a game, not a year ahead
        "Excel error 1004 again",
        "use an h1 heading for the title",  # a heading level, not a half
        "",
    ],
)
def test_words_that_only_look_like_time_are_not_periods(question: str) -> None:
    assert find_time_expression(question, NOW) is None


def test_first_of_two_equally_long_phrases_wins() -> None:
    assert found("yesterday or today?") == ("yesterday", "2024-01-14", "2024-01-14")


def test_resolve_time_range_passes_ranges_and_reads_expressions() -> None:
    week = parse_time_expression("last week", NOW)
    assert resolve_time_range(week) is week
    assert resolve_time_range(None) is None
    assert resolve_time_range("last week", NOW) == week
    with pytest.raises(ValueError, match="Unable to parse time expression: 'someday'"):
        resolve_time_range("someday", NOW)
