"""memory/timeref.py: relative dates made absolute from the turn's own timestamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.timeref import annotate, format_date, local_date

MONDAY = datetime(2026, 11, 30, 15, 0, tzinfo=UTC).timestamp()  # Monday 30 November 2026


@pytest.mark.parametrize(
    "text,expected",
    [
        ("I went camping yesterday.", "I went camping yesterday [= Sunday, 29 November 2026]."),
        ("Today was long", "Today [= Monday, 30 November 2026] was long"),
        ("see you tomorrow", "see you tomorrow [= Tuesday, 1 December 2026]"),
        ("the day before yesterday", "the day before yesterday [= Saturday, 28 November 2026]"),
        ("two days ago", "two days ago [= 28 November 2026]"),
        ("3 days ago", "3 days ago [= 27 November 2026]"),
        ("a couple of days ago", "a couple of days ago [= 28 November 2026]"),
        # How many is not said: how far back from the day of writing, to the unit's precision.
        ("a few days ago", "a few days ago [= a few days before Monday, 30 November 2026]"),
        (
            "Several weeks ago",
            "Several weeks ago [= several weeks before Monday, 30 November 2026]",
        ),
        ("few days ago", "few days ago [= a few days before Monday, 30 November 2026]"),
        ("in a few months", "in a few months [= a few months after November 2026]"),
        ("a few years ago", "a few years ago [= a few years before 2026]"),
        (
            "I saw her the other day.",
            "I saw her the other day [= a few days before Monday, 30 November 2026].",
        ),
        ("我前幾天去了台南", "我前幾天［= 2026年11月30日（星期一）的前幾天］去了台南"),
        ("幾天前下雨", "幾天前［= 2026年11月30日（星期一）的前幾天］下雨"),
        ("2 weeks ago", "2 weeks ago [= around 16 November 2026]"),
        ("in 3 weeks", "in 3 weeks [= around 21 December 2026]"),
        ("last week", "last week [= week of 23 November 2026]"),
        ("this week", "this week [= week of 30 November 2026]"),
        ("next month", "next month [= December 2026]"),
        ("three months ago", "three months ago [= August 2026]"),
        ("last year", "last year [= 2025]"),
        ("a year ago", "a year ago [= 2025]"),
        ("last weekend", "last weekend [= 28–29 November 2026]"),
        ("last Friday", "last Friday [= Friday, 27 November 2026]"),
        ("last Monday", "last Monday [= Monday, 23 November 2026]"),
        ("next Monday", "next Monday [= Monday, 7 December 2026]"),
        ("this Friday", "this Friday [= Friday, 4 December 2026]"),
        ("yesterday's plan", "yesterday's [= Sunday, 29 November 2026] plan"),
        ("我昨天去了台南", "我昨天［= 2026年11月29日（星期日）］去了台南"),
        ("前天", "前天［= 2026年11月28日（星期六）］"),
        ("上週在台北", "上週［= 2026年11月23日那一週］在台北"),
        ("上星期五", "上星期五［= 2026年11月27日（星期五）］"),
        ("下個月要搬家", "下個月［= 2026年12月］要搬家"),
        ("下个月", "下个月［= 2026年12月］"),
        ("三天前見過她", "三天前［= 2026年11月27日（星期五）］見過她"),
        ("十二天前", "十二天前［= 2026年11月18日（星期三）］"),
        ("兩個月後", "兩個月後［= 2027年1月］"),
        ("去年和明年", "去年［= 2025年］和明年［= 2027年］"),
    ],
)
def test_relative_dates_get_the_date_they_meant(text, expected):
    assert annotate(text, MONDAY) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Nothing relative here.",
        "yesterdays and todayish are not dates",
        "The 2020 season",
        "in two ways",  # "in N" without a unit
        "I like Fridays",
        "",
    ],
)
def test_text_without_relative_dates_is_unchanged(text):
    assert annotate(text, MONDAY) == text


def test_month_arithmetic_clamps_to_the_month_end():
    jan31 = datetime(2027, 1, 31, 12, tzinfo=UTC).timestamp()
    assert annotate("next month", jan31) == "next month [= February 2027]"
    assert annotate("a month ago", jan31) == "a month ago [= December 2026]"


def test_the_turn_timezone_decides_the_day():
    # 23:30 UTC on Monday is already Tuesday in Taipei: "yesterday" is Monday there.
    late = datetime(2026, 11, 30, 23, 30, tzinfo=UTC).timestamp()
    taipei = timezone(timedelta(hours=8))
    assert local_date(late, taipei).isoformat() == "2026-12-01"
    assert annotate("yesterday", late, taipei) == "yesterday [= Monday, 30 November 2026]"
    assert format_date(local_date(late)) == "Monday, 30 November 2026"
