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

_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUMBER = r"(\d{1,3}|[一二两三四五六七八九十]{1,3})"
_MONTH = r"(1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month"}
_UNITS |= {"季度": "quarter", "年": "year"}
_UNIT = "(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + ")"
_WEEK = "(?:周|星期|礼拜)"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY = "([一二三四五六日天])(?![次直起下些点样般定共切半边个天周月年])"
"""A weekday's numeral, unless it begins a word (`上周一直`: all last week; `周一次`)."""
_WHICH = {"上": "last", "下": "next", "这": "this", "本": "this"}
_NAMED = {
    "今天": "today",
    "今日": "today",
    "昨天": "yesterday",
    "昨日": "yesterday",
    "前天": "2 days ago",
    "明天": "tomorrow",
    "今年": "this year",
    "去年": "last year",
    "前年": "2 years ago",
    "明年": "next year",
}
_PERIOD_UNITS = {"周": "week", "星期": "week", "礼拜": "week", "月": "month", "季度": "quarter"}
_TO = re.compile(r"\s*(?:到|至|~|～|-|－|—)\s*")
_SINCE_AFTER = re.compile(r"\s*(?:以来|至今|到现在|到今天)")
_FROM_BEFORE = re.compile(r"(?:从|自)\s*$")
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


def _weekday(text: str) -> str:
    return _WEEKDAYS[6 if text in "日天" else _number(text) - 1]


_Read = Callable[[tuple[str, ...]], str]
_FORMS: list[tuple[str, _Read]] = [
    (
        r"(\d{4})年" + _MONTH + r"月(\d{1,2})[日号]",
        lambda g: f"{g[0]}-{_number(g[1]):02d}-{int(g[2]):02d}",
    ),
    (r"(\d{4})年第?([1-4一二三四])季度", lambda g: f"q{_number(g[1])} {g[0]}"),
    (r"(\d{4})年" + _MONTH + r"月份?", lambda g: f"{g[0]}-{_number(g[1]):02d}"),
    (r"(\d{4})年(?!\d)", lambda g: g[0]),
    (_MONTH + r"月(\d{1,2})[日号]", lambda g: f"{_month(g[0])} {int(g[1])}"),
    (
        r"(?:最近|过去|近)" + _NUMBER + r"个?" + _UNIT,
        lambda g: f"last {_number(g[0])} {_UNITS[g[1]]}s",
    ),
    (
        _NUMBER + r"个?" + _UNIT + r"(?:以前|之前|前)",
        lambda g: f"{_number(g[0])} {_UNITS[g[1]]}s ago",
    ),
    (r"([上下这本])个?" + _WEEK + _WEEKDAY, lambda g: f"{_WHICH[g[0]]} {_weekday(g[1])}"),
    # Not after a count or 每: `一周一次` and `每周一` are no Monday.
    (r"(?<![每一二两三四五六七八九十\d])" + _WEEK + _WEEKDAY, lambda g: f"on {_weekday(g[0])}"),
    (r"([上下这本])个?(周|星期|礼拜|月|季度)", lambda g: f"{_WHICH[g[0]]} {_PERIOD_UNITS[g[1]]}"),
    ("(" + "|".join(_NAMED) + ")", lambda g: _NAMED[g[0]]),
    (r"第?([1-4一二三四])季度", lambda g: f"q{_number(g[0])}"),
    (r"(?<![\d个])" + _MONTH + r"月份?", lambda g: f"in {_month(g[0])}"),
]
_PATTERNS = [re.compile(form) for form, _read in _FORMS]
_ANY = re.compile("|".join(f"(?P<f{index}>{form})" for index, (form, _r) in enumerate(_FORMS)))


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    english: str


def _periods(text: str) -> list[_Found]:
    found = []
    for match in _ANY.finditer(text):
        index = int((match.lastgroup or "f0")[1:])
        groups = _PATTERNS[index].fullmatch(match.group(0))
        if groups is None:
            continue
        try:
            english = _FORMS[index][1](groups.groups())
        except (KeyError, IndexError):  # 一二个月: numerals that are no number
            continue
        found.append(_Found(match.start(), match.end(), english))
    return found


def _ranges(text: str, periods: list[_Found]) -> list[_Found]:
    """Two periods joined by `到`/`至` as one range, and `X以来` as "since X"."""
    joined: list[_Found] = []
    for period in periods:
        last = joined[-1] if joined else None
        if last is not None and _TO.fullmatch(text[last.end : period.start]):
            start = last.start
            opener = _FROM_BEFORE.search(text[:start])
            start = opener.start() if opener else start
            joined[-1] = _Found(start, period.end, f"from {last.english} to {period.english}")
            continue
        joined.append(period)
    since = []
    for period in joined:
        after = _SINCE_AFTER.match(text, period.end)
        if after is None or period.english.startswith("from "):
            since.append(period)
            continue
        opener = _FROM_BEFORE.search(text[: period.start])
        start = opener.start() if opener else period.start
        since.append(_Found(start, after.end(), f"since {period.english}"))
    return since


def english_periods(text: str) -> tuple[str, dict[str, str]]:
    """The text with each period named in Chinese written as its English expression.

    Returns:
        The text, each period replaced by its English expression with a space either
        side (`我上周写了什么` -> `我 last week 写了什么`), and each English expression
        mapped to the Chinese words it stands for, to label the range as the user wrote
        it. Text with no Chinese period comes back unchanged, with no labels.
    """
    periods = _ranges(text, _periods(text))
    if not periods:
        return text, {}
    pieces: list[str] = []
    labels: dict[str, str] = {}
    cursor = 0
    for period in periods:
        pieces += [text[cursor : period.start], f" {period.english} "]
        labels[period.english] = text[period.start : period.end]
        cursor = period.end
    pieces.append(text[cursor:])
    return "".join(pieces), labels
