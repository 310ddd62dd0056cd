"""Periods named in Chinese, written as the English expressions `time_ranges` reads.

`上周写了什么` asks about last week's notes as plainly as "what did I write last week", and
`--time 2023年3月` names March 2023. Rather than a second grammar with its own calendar
arithmetic, each Chinese period is rewritten as the English expression that means the
same (`上周` as "last week", `2023年3月` as "2023-03", `最近三个月` as "last 3 months"),
so both languages share one reading of weeks, quarters and "the most recent March".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from langchain_vaultsearch.text.han_forms import fold_han

_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUMBER = r"(\d{1,3}|[一二两三四五六七八九十]{1,3})"
_MONTH = r"(1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_DAY = r"(\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
"""A day of the month, in digits or numerals (`5`, `五`, `二十三`)."""
_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month"}
_UNITS |= {"季度": "quarter", "年": "year"}
_UNIT = "(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + ")"
_WEEK = "(?:周|星期|礼拜)"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY = "([一二三四五六日天])(?![次直起下些点样般定共切半边个天周月年])"
"""A weekday's numeral, unless it begins a word (`上周一直`: all last week; `周一次`)."""
_WHICH = {"上": "last", "下": "next", "这": "this", "本": "this"}
_WHICH_YEAR = {"今年": "this year", "去年": "last year", "明年": "next year"}
_WHICH_YEAR |= {"前年": "the year before last"}
_YEAR_WORD = "(" + "|".join(_WHICH_YEAR) + ")"
_HALVES = {"上": "first", "下": "second"}
_NAMED = {
    "今天": "today",
    "今日": "today",
    "昨天": "yesterday",
    "昨日": "yesterday",
    "前天": "2 days ago",
    "明天": "tomorrow",
    "大前天": "3 days ago",
    **_WHICH_YEAR,
}
_PERIOD_UNITS = {"周": "week", "星期": "week", "礼拜": "week", "月": "month", "季度": "quarter"}
_TO = re.compile(r"\s*(?:到|至|~|～|-|－|—)\s*")
_FROM_BEFORE = re.compile(r"(?:自从|从|自)\s*$")
_MONTH_NAMES = ["january", "february", "march", "april", "may", "june", "july"]
_MONTH_NAMES += ["august", "september", "october", "november", "december"]


def _number(text: str) -> int:
    """`12`, `三`, `十二`, `二十` as numbers.

    Raises:
        KeyError: Chinese numerals that are no number (`一二`).
    """
    if text.isdigit():
        return int(text)
    tens, ten, ones = text.partition("十")
    if not ten:
        return _DIGITS[text]
    return (_DIGITS[tens] if tens else 1) * 10 + (_DIGITS[ones] if ones else 0)


def _month(text: str) -> str:
    return _MONTH_NAMES[_number(text) - 1]


def _day(text: str) -> int:
    """A day of the month; KeyError (no period) past the 31st."""
    day = _number(text)
    if not 1 <= day <= 31:  # the days a month may have
        raise KeyError(text)
    return day


def _weekday(text: str) -> str:
    return _WEEKDAYS[6 if text in "日天" else _number(text) - 1]


_Read = Callable[[tuple[str, ...]], str]
_WithYear = Callable[[tuple[str, ...], str], str]
_FORMS: list[tuple[str, _Read, _WithYear | None]] = [
    (
        r"(\d{4})年" + _MONTH + r"月" + _DAY + r"[日号]",
        lambda g: f"{g[0]}-{_number(g[1]):02d}-{_day(g[2]):02d}",
        None,
    ),
    (r"(\d{4})年第?([1-4一二三四])季度", lambda g: f"q{_number(g[1])} {g[0]}", None),
    (r"(\d{4})年" + _MONTH + r"月份?", lambda g: f"{g[0]}-{_number(g[1]):02d}", None),
    (r"(\d{4})年([上下])半年", lambda g: f"the {_HALVES[g[1]]} half of {g[0]}", None),
    (r"(\d{4})年(?!\d)", lambda g: g[0], None),
    (
        _YEAR_WORD + _MONTH + r"月" + _DAY + r"[日号]",
        lambda g: f"{_month(g[1])} {_day(g[2])} {_WHICH_YEAR[g[0]]}",
        None,
    ),
    (
        _YEAR_WORD + _MONTH + r"月份?",
        lambda g: f"in {_month(g[1])} {_WHICH_YEAR[g[0]]}",
        None,
    ),
    (
        _YEAR_WORD + r"第?([1-4一二三四])季度",
        lambda g: f"q{_number(g[1])} {_WHICH_YEAR[g[0]]}",
        None,
    ),
    # 上半年 alone is this year's first half, as 第二季度 is this year's quarter.
    (
        _YEAR_WORD + r"?([上下])半年",
        lambda g: f"the {_HALVES[g[1]]} half of {_WHICH_YEAR.get(g[0], 'the year')}",
        None,
    ),
    (r"(?:最近|过去|近)半年", lambda _g: "last 6 months", None),
    (
        _MONTH + r"月" + _DAY + r"[日号]",
        lambda g: f"{_month(g[0])} {_day(g[1])}",
        lambda g, year: f"{year}-{_number(g[0]):02d}-{_day(g[1]):02d}",
    ),
    (
        r"(?:最近|过去|近)" + _NUMBER + r"个?" + _UNIT,
        lambda g: f"last {_number(g[0])} {_UNITS[g[1]]}s",
        None,
    ),
    (
        _NUMBER + r"个?" + _UNIT + r"(?:以前|之前|前)",
        lambda g: f"{_number(g[0])} {_UNITS[g[1]]}s ago",
        None,
    ),
    (r"(?<!上)上上个?(周|星期|礼拜|月|季度)", lambda g: f"2 {_PERIOD_UNITS[g[0]]}s ago", None),
    (
        r"([上下这本])个?" + _WEEK + _WEEKDAY,
        lambda g: f"{_WHICH[g[0]]} {_weekday(g[1])}",
        None,
    ),
    # Not after a count or 每: `一周一次` and `每周一` are no Monday.
    (
        r"(?<![每一二两三四五六七八九十\d])" + _WEEK + _WEEKDAY,
        lambda g: f"on {_weekday(g[0])}",
        None,
    ),
    (
        r"([上下这本])一?个?(周|星期|礼拜|月|季度)",  # `上一周`, `上一个月` too
        lambda g: f"{_WHICH[g[0]]} {_PERIOD_UNITS[g[1]]}",
        None,
    ),
    (
        "(?<!大)(" + "|".join(sorted(_NAMED, key=len, reverse=True)) + ")",
        lambda g: _NAMED[g[0]],
        None,
    ),
    (r"第?([1-4一二三四])季度", lambda g: f"q{_number(g[0])}", None),
    (
        r"(?<![\d个])" + _MONTH + r"月份?",
        lambda g: f"in {_month(g[0])}",
        lambda g, year: f"{year}-{_number(g[0]):02d}",
    ),
]
_PATTERNS = [re.compile(form) for form, _read, _with_year in _FORMS]
_ANY = re.compile("|".join(f"(?:{form})" for form, _read, _with_year in _FORMS))
_BEFORE_OR_AFTER = re.compile(r"以前|之前|之后|以后|前|后")
"""After a period, a bound the English grammar has no word for ("before 2023"): the
period is not read, rather than read as itself."""
_SINCE_AFTER = re.compile(r"\s*(?:以来|至今|到现在|到今天|起|开始)")
_YEAR = re.compile(r"\d{4}")
_DAY_END = re.compile(r"\s*(?:到|至|~|～|-|－|—)\s*" + _DAY + r"[日号]")
"""A range's end named by its day alone, in the start's month (`3月5号到7号`)."""
_DATED = re.compile(r"(\d{4}-\d{2}-|[a-z]+ )(\d{1,2})((?: [a-z]+)*)")
"""A day's English expression: its month (`2023-03-` of `2023-03-05`, `march ` of
`march 5`), its day and its year named relative to this one (` last year`), if any."""
_RELATIVE_MONTH = re.compile(r"in ([a-z]+) (last year|this year|next year|the year before last)")
_NEXT_YEAR = {"the year before last": "last year", "last year": "this year"}
_NEXT_YEAR |= {"this year": "next year"}
_FULL_WIDTH_DIGITS = str.maketrans({chr(0xFF10 + digit): str(digit) for digit in range(10)})


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    english: str
    with_year: Callable[[str], str] | None = None
    """The period in a given year, for one named without (`3月` of `2023年1月到3月`)."""


def _periods(text: str) -> tuple[list[_Found], list[_Found], set[int]]:
    """The periods the text names, each a whole run of the words a segmenter finds.

    Chinese writes no spaces, so a period's characters may belong to longer words:
    `本周` in `版本周期` (version cycle), `明天` in `说明天气`, `去年` in `失去年轻`.
    A period counts only where its first character begins a word and its last ends one
    (rjieba's segmentation of the text), the longest reading that does; one written with
    digits counts wherever it stands.

    Returns:
        The periods read; those left unread because a bound the English grammar has no
        word for follows (`2023年以前`, but not `前端` of `今天前端`) or BC precedes, whose
        digits must not be read as a year either; and the word bounds (empty when no
        period was looked for).
    """
    found: list[_Found] = []
    unread: list[_Found] = []
    bounds: set[int] = set()
    position = 0
    while (match := _ANY.search(text, position)) is not None:
        start = match.start()
        position = start + 1
        if not bounds:
            bounds = _word_bounds(text)
        if start not in bounds and not text[start].isdigit():
            continue
        read = _longest_reading(text, start, bounds)
        if read is None:
            continue
        position = read.end
        bounded = _word_at(_BEFORE_OR_AFTER, text, read.end, bounds)
        (unread if bounded or text[:start].endswith("公元前") else found).append(read)
    return found, unread, bounds


def _word_at(pattern: re.Pattern[str], text: str, start: int, bounds: set[int]) -> bool:
    """Whether the pattern matches a whole word at `start` (`前` alone, not of `前端`)."""
    match = pattern.match(text, start)
    return match is not None and match.end() in bounds


def _longest_reading(text: str, start: int, bounds: set[int]) -> _Found | None:
    readings = []
    for pattern, (_form, read, with_year) in zip(_PATTERNS, _FORMS, strict=True):
        match = pattern.match(text, start)
        if match is None or not (match.end() in bounds or _has_digit(match.group(0))):
            continue
        groups = match.groups()
        try:
            english = read(groups)
        except (KeyError, IndexError):  # 一二个月: numerals that are no number
            continue
        carry = None if with_year is None else partial(with_year, groups)
        readings.append(_Found(start, match.end(), english, carry))
    return max(readings, key=lambda found: found.end, default=None)


def _has_digit(period: str) -> bool:
    """Whether a period is written with digits, which no word around it can swallow.

    The segmenter reads `2023年3月5日至3月9日` with a word `日至`.
    """
    return any(character.isdigit() for character in period)


def _word_bounds(text: str) -> set[int]:
    """Where the words of the text begin and end, the words inside longer ones included.

    The segmenter's search mode lists `今天` and `天气` inside `今天天气` as well: a
    period at the start of a longer word (`今天天气怎么样`) is still one.
    """
    import rjieba

    words = rjieba.tokenize(text, "search")
    return {edge for _word, start, end in words for edge in (start, end)}


def _ranges(text: str, periods: list[_Found], bounds: set[int]) -> list[_Found]:
    """Two periods joined by `到`/`至` as one range, and `X以来` as "since X".

    A range's end named without a year is in the start's year: `2023年1月到3月` ends in
    March 2023, not the latest March.
    """
    joined: list[_Found] = []
    for period in periods:
        last = joined[-1] if joined else None
        day_end = _DAY_END.match(text, period.end)
        dated = _DATED.fullmatch(period.english)
        # 3月5号到7号: the 7th of that month (not 7号线, subway line 7).
        if day_end is not None and dated is not None and day_end.end() in bounds:
            end = _day_after(dated, day_end.group(1))
            if end is not None:
                opened = _opened_at(text, period.start)
                joined.append(_Found(opened, day_end.end(), f"from {period.english} to {end}"))
                continue
        if last is not None and _TO.fullmatch(text[last.end : period.start]):
            year = _YEAR.match(last.english)
            relative = _RELATIVE_MONTH.fullmatch(last.english)
            closing: str | None = period.english
            if year is not None and period.with_year is not None:
                in_year = period.with_year(year.group(0))
                if in_year < last.english:  # 2023年11月到2月: February of 2024
                    in_year = period.with_year(str(int(year.group(0)) + 1))
                closing = in_year
            elif relative is not None:  # 去年3月到5月: May of last year too
                closing = _in_relative_year(relative, period.english)
            if closing is None:
                joined.append(period)
                continue
            opened = _opened_at(text, last.start)
            joined[-1] = _Found(opened, period.end, f"from {last.english} to {closing}")
            continue
        joined.append(period)
    since = []
    for period in joined:
        after = _SINCE_AFTER.match(text, period.end)
        if after is None or after.end() not in bounds or period.english.startswith("from "):
            since.append(period)
            continue
        opened = _opened_at(text, period.start)
        since.append(_Found(opened, after.end(), f"since {period.english}"))
    return since


def _day_after(start: re.Match[str], day: str) -> str | None:
    """The range's end on `day`, in the start's month or the next (`3月25号到5号`: April 5).

    None for no such day (`四十号`), or for the month after a December with no year.
    """
    try:
        number = _day(day)
    except KeyError:  # 四十号
        return None
    month: str | None = start.group(1)
    if number < int(start.group(2)):
        month = _next_month(start.group(1))
    if month is None:
        return None
    end = f"{month}{number:02d}" if month.endswith("-") else f"{month}{number}"
    return end + start.group(3)  # 去年3月5号到7号: March 7 last year too


def _next_month(month: str) -> str | None:
    """`2023-03-` -> `2023-04-`, `march ` -> `april `; None after `december ` (which year?)."""
    iso = re.fullmatch(r"(\d{4})-(\d{2})-", month)
    if iso is not None:
        year, number = int(iso.group(1)), int(iso.group(2))
        return f"{year + number // 12}-{number % 12 + 1:02d}-"
    number = _MONTH_NAMES.index(month.strip())
    return None if number == len(_MONTH_NAMES) - 1 else f"{_MONTH_NAMES[number + 1]} "


def _in_relative_year(start: re.Match[str], end: str) -> str | None:
    """A month named alone (`in may`) in the start's year (`in march last year`) or the next.

    None when the end is no month alone, or falls in a year the grammar has no words for.
    """
    month = re.fullmatch(r"in ([a-z]+)", end)
    if month is None:
        return None
    which = start.group(2)
    if _MONTH_NAMES.index(month.group(1)) < _MONTH_NAMES.index(start.group(1)):
        which = _NEXT_YEAR.get(which)
    return None if which is None else f"{end} {which}"


def _opened_at(text: str, start: int) -> int:
    """Where a range begins: at the `从`/`自`/`自从` before its first period, if any."""
    opener = _FROM_BEFORE.search(text[:start])
    return start if opener is None else opener.start()


def english_periods(text: str) -> tuple[str, dict[str, str]]:
    """The text with each period named in Chinese written as its English expression.

    Returns:
        The text, each period replaced by its English expression with a space either
        side (`我上周写了什么` -> `我 last week 写了什么`), and each English expression
        mapped to the Chinese words it stands for, to label the range as the user wrote
        it. Text with no Chinese period comes back unchanged, with no labels.
    """
    # An input method's full-width digits (２０２３年) are digits, and traditional
    # characters simplified ones (`上週`, `過去7天`), one for one: labels keep what was typed.
    digits = fold_han(text.translate(_FULL_WIDTH_DIGITS))
    read, unread, bounds = _periods(digits)
    periods = _ranges(digits, read, bounds)
    if not periods and not unread:
        return text, {}
    pieces: list[str] = []
    labels: dict[str, str] = {}
    cursor = 0
    for period in sorted([*periods, *unread], key=lambda found: found.start):
        written = text[period.start : period.end]
        english = " " if period in unread else f" {period.english} "
        pieces += [text[cursor : period.start], english]
        if period not in unread:
            labels[period.english] = written
        cursor = period.end
    pieces.append(text[cursor:])
    return "".join(pieces), labels
