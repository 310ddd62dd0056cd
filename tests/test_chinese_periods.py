"""Periods named in Chinese (`chinese_periods`), read as the English expressions mean them."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from langchain_vaultsearch.chinese_periods import english_periods
from langchain_vaultsearch.query_plan import plan_query
from langchain_vaultsearch.time_ranges import find_time_expression, parse_time_expression

NOW = datetime(2026, 11, 27, 12, 0)  # a Friday


@pytest.mark.parametrize(
    ("chinese", "first", "last"),
    [
        ("今天", date(2026, 11, 27), date(2026, 11, 27)),
        ("昨天", date(2026, 11, 26), date(2026, 11, 26)),
        ("前天", date(2026, 11, 25), date(2026, 11, 25)),
        ("上周", date(2026, 11, 16), date(2026, 11, 22)),
        ("上个星期", date(2026, 11, 16), date(2026, 11, 22)),
        ("这周", date(2026, 11, 23), date(2026, 11, 29)),
        ("上周一", date(2026, 11, 16), date(2026, 11, 16)),
        ("星期三", date(2026, 11, 25), date(2026, 11, 25)),
        ("上个月", date(2026, 10, 1), date(2026, 10, 31)),
        ("本月", date(2026, 11, 1), date(2026, 11, 30)),
        ("上季度", date(2026, 7, 1), date(2026, 9, 30)),
        ("去年", date(2025, 1, 1), date(2025, 12, 31)),
        ("前年", date(2024, 1, 1), date(2024, 12, 31)),
        ("2023年", date(2023, 1, 1), date(2023, 12, 31)),
        ("2023年3月", date(2023, 3, 1), date(2023, 3, 31)),
        ("2023年03月份", date(2023, 3, 1), date(2023, 3, 31)),
        ("2023年3月5日", date(2023, 3, 5), date(2023, 3, 5)),
        ("2023年第一季度", date(2023, 1, 1), date(2023, 3, 31)),
        ("第二季度", date(2026, 4, 1), date(2026, 6, 30)),
        ("3月", date(2026, 3, 1), date(2026, 3, 31)),
        ("十二月", date(2025, 12, 1), date(2025, 12, 31)),  # the most recent December
        ("十一月5号", date(2026, 11, 5), date(2026, 11, 5)),
        ("最近三个月", date(2026, 8, 27), date(2026, 11, 27)),
        ("过去7天", date(2026, 11, 20), date(2026, 11, 27)),
        ("近两周", date(2026, 11, 13), date(2026, 11, 27)),
        ("三个月前", date(2026, 8, 1), date(2026, 8, 31)),
        ("从2023年1月到2023年3月", date(2023, 1, 1), date(2023, 3, 31)),
        ("2023年1月至今", date(2023, 1, 1), date(2026, 11, 27)),
        ("自2024年以来", date(2024, 1, 1), date(2026, 11, 27)),
        ("从2023年起", date(2023, 1, 1), date(2026, 11, 27)),
        ("自从2023年以来", date(2023, 1, 1), date(2026, 11, 27)),
        ("2023年1月到3月", date(2023, 1, 1), date(2023, 3, 31)),  # the start's year
        ("2023年3月5日至3月9日", date(2023, 3, 5), date(2023, 3, 9)),
        ("上上周", date(2026, 11, 9), date(2026, 11, 15)),  # not last week
        ("大前天", date(2026, 11, 24), date(2026, 11, 24)),  # not the day before yesterday
        ("2023年11月到2月", date(2023, 11, 1), date(2024, 2, 29)),  # the end wraps the year
        ("\uff12\uff10\uff12\uff13年\uff13月", date(2023, 3, 1), date(2023, 3, 31)),  # full-width
        ("三月三日", date(2026, 3, 3), date(2026, 3, 3)),  # a day in numerals, not all March
        ("2023年三月二十五号", date(2023, 3, 25), date(2023, 3, 25)),
        ("上一周", date(2026, 11, 16), date(2026, 11, 22)),
        ("上一个月", date(2026, 10, 1), date(2026, 10, 31)),
        ("2023年3月5号到7号", date(2023, 3, 5), date(2023, 3, 7)),  # the end in that month
        ("从三月五日到十日", date(2026, 3, 5), date(2026, 3, 10)),
        ("去年3月", date(2025, 3, 1), date(2025, 3, 31)),  # not all of last year
        ("3月25号到5号", date(2026, 3, 25), date(2026, 4, 5)),  # an earlier day: next month
        ("2023年12月25号到5号", date(2023, 12, 25), date(2024, 1, 5)),
        ("去年3月到5月", date(2025, 3, 1), date(2025, 5, 31)),  # the end in that year too
        ("去年11月到2月", date(2025, 11, 1), date(2026, 2, 28)),
        ("今年十月份", date(2026, 10, 1), date(2026, 10, 31)),
        ("去年第四季度", date(2025, 10, 1), date(2025, 12, 31)),
        ("前年3月", date(2024, 3, 1), date(2024, 3, 31)),  # not all of 2024
        ("前年第四季度", date(2024, 10, 1), date(2024, 12, 31)),
        ("前年11月到2月", date(2024, 11, 1), date(2025, 2, 28)),
        ("去年3月5号", date(2025, 3, 5), date(2025, 3, 5)),  # not all of March
        ("去年3月5号到7号", date(2025, 3, 5), date(2025, 3, 7)),  # in that year too
        ("去年3月25号到5号", date(2025, 3, 25), date(2025, 4, 5)),
        ("从去年3月5号到今年2月1号", date(2025, 3, 5), date(2026, 2, 1)),
        ("上半年", date(2026, 1, 1), date(2026, 6, 30)),  # this year's
        ("下半年", date(2026, 7, 1), date(2026, 12, 31)),
        ("去年下半年", date(2025, 7, 1), date(2025, 12, 31)),
        ("前年上半年", date(2024, 1, 1), date(2024, 6, 30)),
        ("2023年上半年", date(2023, 1, 1), date(2023, 6, 30)),  # not all of 2023
        ("最近半年", date(2026, 5, 27), date(2026, 11, 27)),
        ("過去半年", date(2026, 5, 27), date(2026, 11, 27)),
    ],
)
def test_a_chinese_period_is_read_and_labelled_as_written(
    chinese: str, first: date, last: date
) -> None:
    found = parse_time_expression(chinese, NOW)
    assert found is not None
    assert (found.start.date(), found.end.date()) == (first, last)
    assert found.label == chinese


@pytest.mark.parametrize(
    "words",
    [
        *("一二个月", "岁月", "每个月", "三个月", "个月", "每周一", "一周一次", "上周一直", "13月"),
        # Before or after a period: a bound the grammar has no word for, so no period.
        *("2023年以前", "2023年之后", "2023年后", "公元前2000年"),
        *("上上上周", "大大前天"),  # not two weeks or three days back
        *("三月三十五日", "2023年3月5号到四十号"),  # no such day: not March, nor the 5th alone
        *("12月25号到5号", "明年11月到2月"),  # which year? the grammar has no words for it
        *("去年12月25号到5号", "半年", "去年2月30号"),
        "后天",  # also "acquired" (先天和后天): not read as a day ahead
    ],
)
def test_words_that_name_no_period_are_none(words: str) -> None:
    assert parse_time_expression(words, NOW) is None


@pytest.mark.parametrize(
    "sentence",
    [
        "版本周期管理怎么做",  # 本周 inside 版本 + 周期
        "日本周边游攻略",
        "线上周报模板",  # 上周 inside 线上 + 周报
        "晚上周末去哪",
        "基本月薪多少",  # 本月
        "登上月球的历史",  # 上月
        "聪明年轻人",  # 明年
        "失去年轻的感觉",  # 去年
        "以前年轻的时候",  # 前年
        "说明天气",  # 明天
        "目前天气",  # 前天
        "圆周四分之一",  # 周四
        "2023年以前的笔记",  # a bound: neither the year nor a period
    ],
)
def test_a_period_inside_longer_words_is_no_period(sentence: str) -> None:
    assert find_time_expression(sentence, NOW) is None


@pytest.mark.parametrize(
    ("sentence", "label", "first"),
    [
        ("今天天气怎么样", "今天", date(2026, 11, 27)),  # 今天 begins the word 今天天气
        ("昨天晚上做的梦", "昨天", date(2026, 11, 26)),
        ("今年春节", "今年", date(2026, 1, 1)),
        ("今天前端学了什么", "今天", date(2026, 11, 27)),  # 前 of 前端 is no bound
        ("2023年前端框架", "2023年", date(2023, 1, 1)),
        ("上周起床很晚", "上周", date(2026, 11, 16)),  # 起 of 起床 is no "since"
    ],
)
def test_a_period_at_the_start_of_a_longer_word_is_still_read(
    sentence: str, label: str, first: date
) -> None:
    found = find_time_expression(sentence, NOW)
    assert found is not None
    assert (found.label, found.start.date()) == (label, first)


def test_a_question_names_its_period_amid_chinese_words() -> None:
    found = find_time_expression("我上周写了什么？", NOW)
    assert found is not None
    assert found.label == "上周"
    assert (found.start.date(), found.end.date()) == (date(2026, 11, 16), date(2026, 11, 22))
    ranged = find_time_expression("从2023年1月到2023年3月的健身记录", NOW)
    assert ranged is not None
    assert (ranged.start.date(), ranged.end.date()) == (date(2023, 1, 1), date(2023, 3, 31))
    assert find_time_expression("三个月的健身计划", NOW) is None  # a length, not a period
    tidy = find_time_expression("整理一下上周的会议", NOW)  # 一下 (a little) ends a word
    assert tidy is not None
    assert tidy.label == "上周"
    busy = find_time_expression("上周一直在忙什么", NOW)  # all last week, not its Monday
    assert busy is not None
    assert busy.label == "上周"
    assert (busy.start.date(), busy.end.date()) == (date(2026, 11, 16), date(2026, 11, 22))
    assert find_time_expression("[[2023年3月]] 的笔记", NOW) is None  # a note's name
    spring = find_time_expression("去年3月写的读书笔记", NOW)
    assert spring is not None
    assert (spring.label, spring.start.date()) == ("去年3月", date(2025, 3, 1))
    line = find_time_expression("3月5号到7号线的施工", NOW)  # subway line 7: no range end
    assert line is not None
    assert (line.label, line.end.date()) == ("3月5号", date(2026, 3, 5))
    half = find_time_expression("我上半年读了哪些书", NOW)
    assert half is not None
    assert (half.label, half.start.date(), half.end.date()) == (
        "上半年",
        date(2026, 1, 1),
        date(2026, 6, 30),
    )
    meeting = find_time_expression("去年3月5号的会议记录", NOW)
    assert meeting is not None
    assert (meeting.label, meeting.start.date(), meeting.end.date()) == (
        "去年3月5号",
        date(2025, 3, 5),
        date(2025, 3, 5),
    )
    assert find_time_expression("先天和后天的因素", NOW) is None  # innate and acquired
    plan = plan_query("最近三个月关于减脂的笔记", now=NOW)
    assert plan.time_range is not None
    assert plan.time_range.label == "最近三个月"


def test_text_with_no_chinese_period_comes_back_unchanged() -> None:
    assert english_periods("what did I write last week?") == ("what did I write last week?", {})
    assert english_periods("我上周写了什么") == ("我 last week 写了什么", {"last week": "上周"})
