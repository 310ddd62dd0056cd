"""Time ranges: what "last week" or "Q1 2024" means in the user's own calendar.

A question such as "what did I work on last week?" is answered from the notes of that
period, so the period has to be the one the user means: calendar weeks start on Monday,
days are local days (a note written at 23:30 belongs to that evening, not to the next UTC
day), and a month or quarter named without a year is the most recent one that has begun.
`parse_time_expression` turns the common English phrasings into a `TimeRange`; anything it
cannot read is `None`, never a guess, so the caller can tell the user.

Where this differs from the original (`getTimeRangeMs`):

- "last N days/weeks/months/years" ends at the end of today, not at 00:00 today, so a
  note written this morning counts as one of the last seven days' notes.
- "last monday" / "next friday" are that weekday of the previous / next calendar week,
  matching "last week" / "next week"; "this friday" is the current week's.
- A range whose yearless end comes before its start ("from december to february") ends in
  the following year instead of being empty.
- Numeric dates must be year first (`2024-01-10`, `2024/01/10`, `2024.01.10`):
  `01/10/2024` means different days to different readers and is not guessed.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta

from langchain_vaultsearch.chinese_periods import english_periods
from langchain_vaultsearch.text.tokenize import CJK_RUN

__all__ = ["TimeRange", "find_time_expression", "parse_time_expression"]

_DAY = timedelta(days=1)

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_UNIT_MONTHS = {"month": 1, "quarter": 3, "year": 12}

_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = "(?P<weekday>" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\.?"
_COUNT = r"(?P<count>\d+|" + "|".join(_NUMBER_WORDS) + ")"
_UNIT = r"(?P<unit>day|week|month|quarter|year)s?"
_YEAR = r"(?P<year>\d{4})"
_ORDINAL = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"

_RELATIVE = re.compile(rf"(?:last|past|previous|prior)\s+{_COUNT}\s+{_UNIT}")
_PAST_UNIT = re.compile(rf"past\s+{_UNIT}")
_AGO = re.compile(rf"{_COUNT}\s+{_UNIT}\s+ago")
_CALENDAR = re.compile(
    r"(?P<which>last|previous|this|current|next)\s+(?P<unit>week|month|quarter|year)"
)
_WEEK_OF = re.compile(r"(?:the\s+)?week\s+(?:of|starting|beginning)\s+(?P<day>.+)")
_MONTH_ALONE = re.compile(_MONTH)
_MONTH_YEAR = re.compile(rf"{_MONTH},?\s+(?:of\s+)?{_YEAR}")
_YEAR_MONTH = re.compile(rf"{_YEAR}\s+{_MONTH}")
_WHICH_YEAR = r"(?:of\s+)?(?:(?P<which>last|this|next)\s+year|the\s+year\s+before\s+last)"
_YEAR_OFFSETS = {"last": -1, "this": 0, "next": 1, None: -2}
"""Each `_WHICH_YEAR`'s year from this one; None is "the year before last"."""
_MONTH_OF_YEAR = re.compile(rf"{_MONTH},?\s+{_WHICH_YEAR}")
_YEAR_AFTER_NAME = re.compile(_WHICH_YEAR)
_ISO_MONTH = re.compile(r"(?P<year>\d{4})-(?P<month>\d{1,2})")
_QUARTER = re.compile(rf"(?:q|quarter\s+)(?P<quarter>[1-4])(?:,?\s+(?:of\s+)?{_YEAR})?")
_YEAR_QUARTER = re.compile(rf"{_YEAR}\s*-?\s*q(?P<quarter>[1-4])")
_QUARTER_OF_YEAR = re.compile(rf"(?:q|quarter\s+)(?P<quarter>[1-4]),?\s+{_WHICH_YEAR}")
_YEAR_ALONE = re.compile(rf"(?:(?:the\s+)?year\s+(?:of\s+)?)?{_YEAR}")
_YEAR_BEFORE_LAST = re.compile(r"(?:the\s+)?year\s+before\s+last")
_HALF_OF_YEAR = re.compile(
    rf"(?P<half>first|second)\s+half\s+(?:of\s+{_YEAR}|of\s+the\s+year|{_WHICH_YEAR})"
)
_HALF_YEAR = re.compile(rf"h(?P<half>[12]),?\s+{_YEAR}")
_YEAR_HALF = re.compile(rf"{_YEAR}\s*-?\s*h(?P<half>[12])")
_HALVES = {"first": 1, "second": 2, "1": 1, "2": 2}
_NUMERIC_DATE = re.compile(
    r"(?P<year>\d{4})(?P<sep>[-/.])(?P<month>\d{1,2})(?P=sep)(?P<day>\d{1,2})"
)
_MONTH_DAY = re.compile(rf"{_MONTH}\s+{_ORDINAL}(?:,?\s+{_YEAR})?")
_MONTH_DAY_OF_YEAR = re.compile(rf"{_MONTH}\s+{_ORDINAL},?\s+{_WHICH_YEAR}")
_DAY_MONTH = re.compile(rf"(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?{_MONTH},?(?:\s+{_YEAR})?")
_RELATIVE_WEEKDAY = re.compile(rf"(?:(?P<which>last|previous|this|next)\s+)?{_WEEKDAY}")
_SINCE = re.compile(r"since\s+(?P<start>.+)")
_RANGE_SEPARATOR = re.compile(
    r"\s+(?:to|until|till|through|thru|and)\s+|\s*(?:\.\.|–|—)\s*|\s+-\s+"
)
_RANGE_PREFIX = re.compile(r"(?:from|between)\s+")
_FILLER = re.compile(r"(?:(?:in|during|on|for|over|within)\s+)?(?:the\s+)?")
# Chat clients prefix vault questions with "@vault"; it is not part of the period.
_VAULT_MARKER = re.compile(r"@vault\b", re.IGNORECASE)
_NOW_WORDS = frozenset({"now", "today", "present", "the present", "date"})


# find_time_expression: what is not prose, which words may start a period, and which
# words are ordinary words as often as they are month or weekday names.
_NOT_PROSE = re.compile(r"!?\[\[.*?\]\]|(?<!\S)#[^\s#]+|`[^`\n]*`")
_MAX_PHRASE_WORDS = 12
_TIME_WORD = re.compile(
    r"\d|today|yesterday|tomorrow|\b(?:day|week|month|quarter|year)s?\b|"
    + "|".join(rf"\b{name}\b" for name in sorted({*_MONTHS, *_WEEKDAYS}, key=len, reverse=True)),
    re.IGNORECASE,
)
_FILLER_WORDS = frozenset({"in", "during", "on", "for", "over", "within", "the"})
_PREPOSITIONS = (_FILLER_WORDS - {"the"}) | {"since"}
_LEADING_WORDS = _FILLER_WORDS | {"since"}
_NAMES = frozenset({*_MONTHS, *_WEEKDAYS})
_EDGE_PUNCTUATION = " ?!.,;:\"'()"
_EARLIEST_YEAR = 1900


@dataclass(frozen=True)
class TimeRange:
    """A span of time, both ends included, as timezone-aware local datetimes.

    Aware datetimes (rather than epoch numbers) keep the calendar meaning visible, so a
    daily note `2024-01-08.md` is compared with local days; `start_ms` / `end_ms` give the
    epoch milliseconds that note mtimes use. Ranges built from calendar expressions run from
    00:00 of their first day to 23:59:59.999999 of their last.

    Attributes:
        start: first instant in the range (timezone-aware).
        end: last instant in the range (timezone-aware, not before `start`).
        label: how the range reads to a person, e.g. the expression the user typed
            ("last week"); it becomes the `timeRange` attribute of the LLM context.
            Defaults to "YYYY-MM-DD to YYYY-MM-DD" in local dates.
    """

    start: datetime
    end: datetime
    label: str = ""

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            msg = "TimeRange needs timezone-aware datetimes; use .astimezone() on local times"
            raise ValueError(msg)
        if self.start > self.end:
            msg = f"TimeRange starts after it ends: {self.start} > {self.end}"
            raise ValueError(msg)
        if not self.label.strip():
            first, last = self.start.astimezone().date(), self.end.astimezone().date()
            label = first.isoformat() if first == last else f"{first} to {last}"
            object.__setattr__(self, "label", label)

    @classmethod
    def from_dates(cls, first: date, last: date, label: str = "") -> TimeRange:
        """The whole local days from `first` to `last`, both included.

        Args:
            first: first day.
            last: last day, not before `first`.
            label: see the class attributes.

        Returns:
            The range from 00:00 of `first` to the last microsecond of `last`.

        Raises:
            ValueError: when `last` is before `first`.
        """
        return cls(_start_of(first), _end_of(last), label)

    @classmethod
    def from_epoch_ms(cls, start_ms: float, end_ms: float, label: str = "") -> TimeRange:
        """A range from epoch milliseconds, as an LLM tool call or an API sends them.

        Args:
            start_ms: first instant, epoch ms, positive.
            end_ms: last instant, epoch ms, not before `start_ms`.
            label: see the class attributes.

        Returns:
            The range in the local time zone.

        Raises:
            ValueError: when an end is not a positive finite number or the range is reversed
                (the original silently ignores such ranges; here the caller hears about it).
        """
        for name, value in (("start_ms", start_ms), ("end_ms", end_ms)):
            if not math.isfinite(value) or value <= 0:
                msg = f"{name} must be a positive epoch time in milliseconds, got {value!r}"
                raise ValueError(msg)
        try:
            start = datetime.fromtimestamp(start_ms / 1000).astimezone()
            end = datetime.fromtimestamp(end_ms / 1000).astimezone()
        except (OverflowError, OSError, ValueError) as exc:
            msg = f"Epoch milliseconds out of range: {start_ms!r}..{end_ms!r}"
            raise ValueError(msg) from exc
        return cls(start, end, label)

    @property
    def start_ms(self) -> float:
        """`start` in epoch milliseconds."""
        return self.start.timestamp() * 1000.0

    @property
    def end_ms(self) -> float:
        """`end` in epoch milliseconds."""
        return self.end.timestamp() * 1000.0

    @property
    def days(self) -> float:
        """Length in days (a calendar day spans just under 1.0)."""
        return (self.end - self.start) / _DAY

    def contains(self, moment: datetime) -> bool:
        """Whether an aware instant lies in the range (both ends included)."""
        return self.start <= moment <= self.end

    def contains_ms(self, epoch_ms: float) -> bool:
        """Whether an instant in epoch milliseconds lies in the range."""
        return self.start_ms <= epoch_ms <= self.end_ms

    def overlaps_day(self, day: date) -> bool:
        """Whether any part of a local calendar day lies in the range.

        Daily notes and date-only properties (`created: 2024-01-08`) name a whole day, so
        they belong to a range that covers any part of that day. Days at the very ends of
        the calendar (years 1 and 9999), which have no local midnight in some time zones,
        lie in no range: a note named `0001-01-01` must not break a query.
        """
        try:
            return _start_of(day) <= self.end and self.start <= _end_of(day)
        except (ValueError, OverflowError):
            return False

    def last_days(self, days: float) -> TimeRange:
        """The same range, shortened to at most its last `days` days.

        Args:
            days: the most days to keep, positive.

        Returns:
            A range with the same end and label; `self` when it is short enough.

        Raises:
            ValueError: when `days` is not positive.
        """
        if days <= 0:
            msg = f"days must be positive, got {days}"
            raise ValueError(msg)
        earliest = self.end - timedelta(days=days)
        if self.start >= earliest:
            return self
        return TimeRange(earliest, self.end, self.label)


@dataclass(frozen=True)
class _Period:
    """Whole local days matched by one expression.

    `in_year` rebuilds the period for another year when the expression named none ("march",
    "q3"), so a range can move its end to the following year.
    """

    first: date
    last: date
    in_year: Callable[[int], _Period] | None = None


def parse_time_expression(text: str, now: datetime | None = None) -> TimeRange | None:
    """Read a time expression the way the user means it, in the local calendar.

    Understood (case-insensitive, an optional leading "in"/"during"/"the"): "today",
    "yesterday", "tomorrow"; "last/past/previous N days|weeks|months|quarters|years" and
    "past week|month|year" (ending today); "this/last/next week|month|quarter|year"
    (calendar periods; weeks start on Monday); "week of <date>"; "N days|weeks|months|years
    ago"; month names ("march", "mar 2024", "2024 march", "2024-03"); quarters ("Q1 2024",
    "2024 Q1", "q3", "q4 last year"); halves ("first half of 2024", "h2 2023", "second half
    of last year"); years ("2023", "year 2023", "the year before last"); days
    ("2024-01-10", "january 10", "jan 10, 2024", "10th of january", "march 5 last year",
    "the day before yesterday", "last monday", "next friday"); ranges of any two of
    these ("from X to Y", "between X and Y", "X .. Y", "X - Y", "since X", "X to now").

    A month, quarter, week or day named without a year is the most recent one that has
    begun by today; in a range whose other end is a day, month or quarter, it takes that
    end's year ("between march and may 2023", "from march 2023 to may").

    Args:
        text: the expression, e.g. "last 7 days" or "Q1 2024".
        now: the current time; naive means local wall-clock time, aware is converted to
            the local zone. Defaults to the current time.

    Returns:
        The range labelled with the text as typed, or None when the text is not a time
        expression this function understands (the caller should say so).
    """
    return _parse(text, now, chinese=True)


def _parse(text: str, now: datetime | None, *, chinese: bool) -> TimeRange | None:
    """`parse_time_expression`, whose Chinese periods are rewritten in English first.

    `chinese=False`: they already are (`find_time_expression` rewrites a whole piece of
    the question once, with the words around each period), so the phrases it tries are
    not segmented again, each one.
    """
    label = " ".join(_VAULT_MARKER.sub(" ", text or "").split()).strip(" ?!.,;:")
    english = english_periods(label)[0] if chinese else label
    normalized = " ".join(english.lower().split())
    if not normalized:
        return None
    today = _local_now(now).date()
    try:
        period = _parse_range(normalized, today) or _parse_single(normalized, today)
        if period is None:
            return None
        return TimeRange.from_dates(period.first, period.last, label)
    except (ValueError, OverflowError):
        # Dates beyond year 1..9999 ("last 5000 years"), or a day that does not exist.
        return None


def resolve_time_range(
    time_range: TimeRange | str | None, now: datetime | None = None
) -> TimeRange | None:
    """A `TimeRange` as given, or the range a time expression names.

    Args:
        time_range: a range, an expression for `parse_time_expression`, or None.
        now: the current time for reading the expression (see `parse_time_expression`).

    Returns:
        The range, or None when `time_range` is None.

    Raises:
        ValueError: for an expression `parse_time_expression` cannot read (the message
            names it), so a typo is reported instead of searching without a range.
    """
    if time_range is None or isinstance(time_range, TimeRange):
        return time_range
    parsed = parse_time_expression(time_range, now)
    if parsed is None:
        msg = f"Unable to parse time expression: {time_range!r}"
        raise ValueError(msg)
    return parsed


def find_time_expression(text: str, now: datetime | None = None) -> TimeRange | None:
    """The period a question speaks of, found inside free text.

    "What did I decide in #meetings last week?" asks about last week's notes; this finds
    "last week" in it. Every run of up to 12 words is tried with `parse_time_expression`;
    the longest run that reads as a time expression wins (the first one on a tie), so
    "from march 3 to march 10" is one range, not "march 3". Wikilinks, tags and inline
    code are not prose: `[[2024-04-17 Auth Review]]` names a note, not a day.

    Words that are mostly something else do not count on their own: a bare month or
    weekday name needs a preposition ("in May", "on Friday"; not "may", "the march"),
    and a period must start before the end of next year and end after 1900 ("port
    3001", "the 2048 puzzle" and "error 1004" are not years).

    Args:
        text: the question.
        now: the current time (see `parse_time_expression`).

    Returns:
        The range, labelled with the words that named it (without a leading "in",
        "during" or "the"), or None when the text names no period.
    """
    today = _local_now(now).date()
    best: list[str] = []
    found: TimeRange | None = None
    chinese: dict[str, str] = {}
    for piece in _NOT_PROSE.split(text or ""):
        english, labels = english_periods(piece)  # "我上周写了什么" names last week
        chinese |= labels
        # Chinese and Japanese put no space around a date: "我在2023-03做了什么" names March.
        words = CJK_RUN.sub(r" \g<0> ", english).split()
        timely = [bool(_TIME_WORD.search(word)) for word in words]
        if not any(timely):
            continue
        for length in range(min(_MAX_PHRASE_WORDS, len(words)), len(best), -1):
            found_here = _first_phrase(words, timely, length, now, today)
            if found_here is not None:
                best, found = found_here
                break
    if found is None:
        return None
    written = chinese.get(" ".join(best))
    while len(best) > 1 and best[0].lower() in _FILLER_WORDS:
        shorter = _parse(" ".join(best[1:]), now, chinese=False)
        if shorter is None or (shorter.start, shorter.end) != (found.start, found.end):
            break
        best, found = best[1:], shorter
    # Labelled as the user wrote it: `timeRange="上周"`, not "last week".
    return found if written is None else replace(found, label=written)


def _first_phrase(
    words: list[str], timely: list[bool], length: int, now: datetime | None, today: date
) -> tuple[list[str], TimeRange] | None:
    """The leftmost run of `length` words that names a plausible period.

    Only runs with a word that can be part of a time expression (`timely`) are parsed.
    """
    for start in range(len(words) - length + 1):
        if not any(timely[start : start + length]):
            continue
        phrase = words[start : start + length]
        found = _parse(" ".join(phrase), now, chinese=False)
        if found is not None and _plausible(phrase, found, today):
            return phrase, found
    return None


def _plausible(phrase: list[str], found: TimeRange, today: date) -> bool:
    words = [word.lower().strip(_EDGE_PUNCTUATION) for word in phrase]
    content = list(words)
    while content and content[0] in _LEADING_WORDS:
        content.pop(0)
    # A bare name ("may", "march") is a word more often than a period, with a relative
    # year after it too: "what may next year bring".
    bare = len(content) == 1 or _YEAR_AFTER_NAME.fullmatch(" ".join(content[1:])) is not None
    if bare and content[0].rstrip(".") in _NAMES and words[0] not in _PREPOSITIONS:
        return False
    start, end = found.start.astimezone().date(), found.end.astimezone().date()
    return start.year <= today.year + 1 and end.year >= _EARLIEST_YEAR


def _local_now(now: datetime | None) -> datetime:
    """Local wall-clock time, naive."""
    if now is None:
        return datetime.now()
    if now.tzinfo is not None:
        return now.astimezone().replace(tzinfo=None)
    return now


def _start_of(day: date) -> datetime:
    """00:00 of a local day, aware (with that day's UTC offset, so DST is right)."""
    return datetime.combine(day, time.min).astimezone()


def _end_of(day: date) -> datetime:
    """The last microsecond of a local day, aware."""
    return datetime.combine(day, time.max).astimezone()


# ------------------------------------------------------------------------ ranges


def _parse_range(text: str, today: date) -> _Period | None:
    since = _SINCE.fullmatch(text)
    if since:
        start = _parse_single(since["start"], today)
        return None if start is None else _Period(start.first, max(today, start.first))
    body = _RANGE_PREFIX.sub("", text, count=1) if _RANGE_PREFIX.match(text) else text
    for separator in _RANGE_SEPARATOR.finditer(body):
        left_text, right_text = body[: separator.start()], body[separator.end() :]
        left = _parse_single(left_text, today)
        right = _parse_endpoint(right_text, today)
        if left is not None and right is not None:
            return _join(left, right)
    return None


def _parse_endpoint(text: str, today: date) -> _Period | None:
    if text.strip() in _NOW_WORDS:
        return _Period(today, today)
    return _parse_single(text, today)


def _join(left: _Period, right: _Period) -> _Period:
    """One range from its two ends; an end named without a year may take the other's.

    "between march and may 2023" starts in March 2023 (not the most recent March, years
    after its end), "from march 2023 to may" ends in May 2023: when the other end is a
    day, a month or a quarter. Beside a whole year ("from 2023 to may") a month is still
    the most recent one: the range runs up to it.
    """
    start_in = left.in_year
    if start_in is not None and right.in_year is None and _within_a_quarter(right):
        left = start_in(right.last.year)
        if left.first > right.last:  # "from november to february 2024": November 2023
            left = start_in(right.last.year - 1)
    elif right.in_year is not None and left.in_year is None and _within_a_quarter(left):
        right = right.in_year(left.first.year)
    if right.last < left.first and right.in_year is not None:
        # "from december to february": the end follows the start into the next year.
        right = right.in_year(right.last.year + 1)
    if right.last < left.first:
        left, right = right, left
    return _Period(left.first, right.last)


# ------------------------------------------------------------------------ single periods


def _parse_single(text: str, today: date) -> _Period | None:
    text = text.strip()
    for candidate in dict.fromkeys((text, _FILLER.sub("", text, count=1).strip())):
        if not candidate:
            continue
        for parser in _PARSERS:
            period = parser(candidate, today)
            if period is not None:
                return period
    return None


def _relative(text: str, today: date) -> _Period | None:
    match = _RELATIVE.fullmatch(text) or _PAST_UNIT.fullmatch(text)
    if match is None:
        return None
    count = _count(match["count"]) if "count" in match.re.groupindex else 1
    if count <= 0:
        return None
    return _Period(_shift(today, -count, match["unit"]), today)


def _within_a_quarter(period: _Period) -> bool:
    """A day, a week, a month or a quarter, whose year a yearless other end takes."""
    return period.first.year == period.last.year and (period.last - period.first).days < 92


_DAYS_FROM_TODAY = {
    "today": 0,
    "yesterday": -1,
    "tomorrow": 1,
    "day before yesterday": -2,
    "day after tomorrow": 2,
}


def _calendar(text: str, today: date) -> _Period | None:
    named = text.removeprefix("the ")
    if named in _DAYS_FROM_TODAY:
        day = today + _DAYS_FROM_TODAY[named] * _DAY
        return _Period(day, day)
    if _YEAR_BEFORE_LAST.fullmatch(text):
        return _unit_period(_shift(today, -2, "year"), "year")
    match = _CALENDAR.fullmatch(text)
    if match is None:
        return None
    offset = {"last": -1, "previous": -1, "this": 0, "current": 0, "next": 1}[match["which"]]
    return _unit_period(_shift(today, offset, match["unit"]), match["unit"])


def _ago(text: str, today: date) -> _Period | None:
    match = _AGO.fullmatch(text)
    if match is None:
        return None
    count = _count(match["count"])
    if count <= 0:
        return None
    return _unit_period(_shift(today, -count, match["unit"]), match["unit"])


def _week_of(text: str, today: date) -> _Period | None:
    match = _WEEK_OF.fullmatch(text)
    if match is None:
        return None
    day = _parse_single(match["day"], today)
    if day is None or day.first != day.last:
        return None
    if day.in_year is None:
        return _unit_period(day.first, "week")
    anchor = day.in_year

    def week_in(year: int) -> _Period:
        return replace(_unit_period(anchor(year).first, "week"), in_year=week_in)

    return _most_recent(week_in, today)


def _month_name(text: str, today: date) -> _Period | None:
    match = _MONTH_YEAR.fullmatch(text) or _YEAR_MONTH.fullmatch(text)
    if match:
        return _month(int(match["year"]), _MONTHS[match["month"]])
    match = _MONTH_OF_YEAR.fullmatch(text)  # "march last year"
    if match:
        return _month(today.year + _YEAR_OFFSETS[match["which"]], _MONTHS[match["month"]])
    match = _ISO_MONTH.fullmatch(text)
    if match:
        month = int(match["month"])
        return _month(int(match["year"]), month) if 1 <= month <= 12 else None
    match = _MONTH_ALONE.fullmatch(text)
    if match is None:
        return None
    number = _MONTHS[match["month"]]

    def month_in(year: int) -> _Period:
        return replace(_month(year, number), in_year=month_in)

    return _most_recent(month_in, today)


def _quarter(text: str, today: date) -> _Period | None:
    relative = _QUARTER_OF_YEAR.fullmatch(text)  # "q1 last year"
    if relative:
        year = today.year + _YEAR_OFFSETS[relative["which"]]
        return _quarter_of(year, int(relative["quarter"]))
    match = _YEAR_QUARTER.fullmatch(text) or _QUARTER.fullmatch(text)
    if match is None:
        return None
    number = int(match["quarter"])
    if match["year"]:
        return _quarter_of(int(match["year"]), number)

    def quarter_in(year: int) -> _Period:
        return replace(_quarter_of(year, number), in_year=quarter_in)

    return _most_recent(quarter_in, today)


def _half(text: str, today: date) -> _Period | None:
    """Six months of a year: "first half of 2024", "h2 2023", "second half of last year"."""
    match = _HALF_OF_YEAR.fullmatch(text) or _HALF_YEAR.fullmatch(text)
    match = match or _YEAR_HALF.fullmatch(text)
    if match is None:
        return None
    if match["year"]:
        year = int(match["year"])
    elif text.endswith("of the year"):
        year = today.year
    else:
        year = today.year + _YEAR_OFFSETS[match["which"]]
    first_month = 6 * (_HALVES[match["half"]] - 1) + 1
    return _Period(_month(year, first_month).first, _month(year, first_month + 5).last)


def _year(text: str, today: date) -> _Period | None:
    match = _YEAR_ALONE.fullmatch(text)
    if match is None:
        return None
    year = int(match["year"])
    return _Period(date(year, 1, 1), date(year, 12, 31))


def _day(text: str, today: date) -> _Period | None:
    match = _NUMERIC_DATE.fullmatch(text)
    if match:
        day = date(int(match["year"]), int(match["month"]), int(match["day"]))
        return _Period(day, day)
    relative = _MONTH_DAY_OF_YEAR.fullmatch(text)  # "march 5 last year"
    if relative:
        year = today.year + _YEAR_OFFSETS[relative["which"]]
        day = date(year, _MONTHS[relative["month"]], int(relative["day"]))
        return _Period(day, day)
    match = _MONTH_DAY.fullmatch(text) or _DAY_MONTH.fullmatch(text)
    if match is None:
        return _weekday(text, today)
    month, day_number = _MONTHS[match["month"]], int(match["day"])
    if match["year"]:
        day = date(int(match["year"]), month, day_number)
        return _Period(day, day)
    date(2000, month, day_number)  # a day that exists in no year raises ValueError

    def day_in(year: int) -> _Period:
        day = date(year, month, day_number)  # February 29 raises in common years
        return _Period(day, day, day_in)

    return _most_recent(day_in, today)


def _weekday(text: str, today: date) -> _Period | None:
    match = _RELATIVE_WEEKDAY.fullmatch(text)
    if match is None:
        return None
    which, weekday = match["which"], _WEEKDAYS[match["weekday"]]
    monday = today - today.weekday() * _DAY
    if which is None:
        # A bare weekday is the most recent one, today included: notes are about the past.
        day = today - ((today.weekday() - weekday) % 7) * _DAY
    else:
        weeks = {"last": -1, "previous": -1, "this": 0, "next": 1}[which]
        day = monday + (weeks * 7 + weekday) * _DAY
    return _Period(day, day)


_PARSERS: tuple[Callable[[str, date], _Period | None], ...] = (
    _relative,
    _calendar,
    _ago,
    _week_of,
    _month_name,
    _quarter,
    _half,
    _year,
    _day,
)


# ------------------------------------------------------------------------ calendar arithmetic


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def _shift(day: date, count: int, unit: str) -> date:
    """Move `count` units (day, week, month, quarter, year) from `day`, clamping month ends."""
    if unit == "day":
        return day + count * _DAY
    if unit == "week":
        return day + count * 7 * _DAY
    months = day.year * 12 + day.month - 1 + count * _UNIT_MONTHS[unit]
    year, month = divmod(months, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _unit_period(day: date, unit: str) -> _Period:
    """The calendar day, week (Monday first), month, quarter or year containing `day`."""
    if unit == "day":
        return _Period(day, day)
    if unit == "week":
        monday = day - day.weekday() * _DAY
        return _Period(monday, monday + 6 * _DAY)
    if unit == "month":
        return _month(day.year, day.month)
    if unit == "quarter":
        return _quarter_of(day.year, (day.month - 1) // 3 + 1)
    return _Period(date(day.year, 1, 1), date(day.year, 12, 31))


def _month(year: int, month: int) -> _Period:
    return _Period(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _quarter_of(year: int, quarter: int) -> _Period:
    first_month = 3 * (quarter - 1) + 1
    return _Period(_month(year, first_month).first, _month(year, first_month + 2).last)


def _most_recent(in_year: Callable[[int], _Period], today: date) -> _Period:
    """The latest occurrence that has begun by today: this year's, else an earlier one.

    Only February 29 needs more than one step back, to the last leap year.
    """
    for year in range(today.year, today.year - 9, -1):
        try:
            period = in_year(year)
        except ValueError:
            continue
        if period.first <= today:
            return period
    msg = "no past occurrence"
    raise ValueError(msg)
