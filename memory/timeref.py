"""Dates for what the model reads: date lines, and relative expressions made absolute.

A recalled turn that says "yesterday" means the day before it was written, not the day before
the question. At render time (the stored text is never changed) each relative expression
gets the absolute date it meant, computed from the turn's own timestamp:
"I went camping yesterday [= 29 November 2026]", "上週［= 2026年11月23日那一週］去了台南".
Pure functions of the text, a timestamp and a timezone.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, timedelta, tzinfo

_MONTHS = list(calendar.month_name)
_WEEKDAYS = list(calendar.day_name)  # Monday first

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2,
}  # fmt: skip
_CJK_DIGITS = {"一": 1, "二": 2, "兩": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
               "八": 8, "九": 9, "十": 10, "半": 0}  # fmt: skip
_CJK_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_EN_DAY_WORDS = {
    "the day before yesterday": -2, "the day after tomorrow": 2, "yesterday": -1,
    "last night": -1, "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0,
    "this evening": 0, "tomorrow": 1,
}  # fmt: skip
_ZH_DAY_WORDS = {
    "大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "今天": 0, "今日": 0,
    "今晚": 0, "明天": 1, "明日": 1, "後天": 2, "后天": 2, "大後天": 3, "大后天": 3,
}  # fmt: skip
_ZH_SHIFT = {"上": -1, "這": 0, "这": 0, "本": 0, "下": 1}
_ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "後年": 2, "后年": 2}

_NUM = r"(\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_UNIT = r"(day|week|month|year)s?"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_EN = re.compile(
    r"(?<![\w-])(?:"
    + r"(?P<dayword>"
    + "|".join(sorted(_EN_DAY_WORDS, key=len, reverse=True))
    + r")"
    + rf"|(?P<ago>{_NUM} {_UNIT} ago)"
    + rf"|(?P<later>in {_NUM} {_UNIT})"
    + r"|(?P<rel>(?:last|this|next) (?:week|weekend|month|year))"
    + rf"|(?P<wd>(?:last|this|next) {_WEEKDAY})"
    + r"|(?P<other>the other day)"
    + r")(?P<poss>['’]s)?(?![\w-])",
    re.IGNORECASE,
)
_ZH_NUM = r"(\d{1,3}|[一二兩两三四五六七八九十]{1,2})"
_ZH_WEEK = "(?:週|周|星期|個星期|个星期|禮拜|礼拜|個禮拜|个礼拜)"
_ZH_UNITS = ("個星期", "个星期", "個月", "个月", "星期", "天", "日", "週", "周", "年")
_ZH_BEFORE = ("以前", "之前", "前")
_ZH_AFTER = ("以後", "之後", "以后", "之后", "後", "后")
_ZH = re.compile(
    "(?P<zday>"
    + "|".join(sorted(_ZH_DAY_WORDS, key=len, reverse=True))
    + ")"
    + "|(?P<zyear>"
    + "|".join(_ZH_YEARS)
    + ")"
    + rf"|(?P<zwd>[上這这本下]{_ZH_WEEK}[一二三四五六日天])"
    + rf"|(?P<zweek>[上這这本下]{_ZH_WEEK})"
    + r"|(?P<zmonth>(?:上個|上个|這個|这个|下個|下个|[上本下])月)"
    + rf"|(?P<zago>{_ZH_NUM}(?:{'|'.join(_ZH_UNITS)})(?:{'|'.join(_ZH_BEFORE + _ZH_AFTER)}))"
    + "|(?P<zfew>前幾天|前几天|幾天前|几天前)"
)
# How many is "a few" / "several": not a number to count back by. Those expressions say how
# far back from the day they were written, so the model can still place them ("a few days
# ago [= a few days before 9 June 2023]").
_VAGUE = ("a few", "few", "several")


# Cheap tests before the regexes: a text without any of these has no relative date.
_EN_CUES = (
    "yesterday", "today", "tonight", "tomorrow", " ago", "last ", "this ", "next ", "other day",
)  # fmt: skip
_ZH_CUES = re.compile("[昨今明前後后上這这本下去天年]")  # a scan in C, not a set per character


def local_date(ts: float, tz: tzinfo = UTC) -> date:
    return datetime.fromtimestamp(ts, tz).date()


def format_date(d: date) -> str:
    """How dates read in the memory note: "Sunday, 29 November 2026"."""
    return f"{_WEEKDAYS[d.weekday()]}, {d.day} {_MONTHS[d.month]} {d.year}"


def format_date_zh(d: date) -> str:
    """The same in Chinese: "2026年11月29日（星期日）"."""
    return f"{d.year}年{d.month}月{d.day}日（星期{'一二三四五六日'[d.weekday()]}）"


def _short(d: date) -> str:
    return f"{d.day} {_MONTHS[d.month]} {d.year}"


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(d.day, calendar.monthrange(year, month + 1)[1]))


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _number(text: str) -> int:
    text = text.lower()
    if text.isdigit():
        return int(text)
    if text in _NUMBER_WORDS:
        return _NUMBER_WORDS[text]
    # Chinese: 三, 十, 十二, 二十
    if len(text) == 2 and text[0] == "十":
        return 10 + _CJK_DIGITS.get(text[1], 0)
    if len(text) == 2 and text[1] == "十":
        return _CJK_DIGITS.get(text[0], 0) * 10
    return _CJK_DIGITS.get(text, 0)


def _shifted(base: date, unit: str, n: int) -> str:
    if unit.startswith("day") or unit in ("天", "日"):
        return _short(base + timedelta(days=n))
    if unit.startswith("week") or unit in ("週", "周", "星期", "個星期", "个星期"):
        return "around " + _short(base + timedelta(weeks=n))
    if unit.startswith("month") or unit in ("個月", "个月"):
        d = _add_months(base, n)
        return f"{_MONTHS[d.month]} {d.year}"
    return str(base.year + n)


def _vaguely(base: date, few: str, unit: str, side: str) -> str:
    """ "a few days before Friday, 9 June 2023", "several months after June 2023": `few` as
    the text said it, the day the text was written, to the unit's precision."""
    few = "a few" if few == "few" else few
    plural = unit if unit.endswith("s") else unit + "s"
    if unit.startswith(("day", "week")):
        when = format_date(base)
    elif unit.startswith("month"):
        when = f"{_MONTHS[base.month]} {base.year}"
    else:
        when = str(base.year)
    return f"{few} {plural} {side} {when}"


def _period(base: date, unit: str, shift: int) -> str:
    if unit == "week":
        return "week of " + _short(_monday(base) + timedelta(weeks=shift))
    if unit == "weekend":
        sat = _monday(base) + timedelta(weeks=shift, days=5)
        return f"{sat.day}–{_short(sat + timedelta(days=1))}"
    if unit == "month":
        d = _add_months(base, shift)
        return f"{_MONTHS[d.month]} {d.year}"
    return str(base.year + shift)


def _weekday(base: date, shift: int, weekday: int) -> date:
    if shift == 0:  # "this Friday": the Friday of this week
        return _monday(base) + timedelta(days=weekday)
    if shift < 0:  # "last Friday": the latest Friday before today
        back = (base.weekday() - weekday) % 7 or 7
        return base - timedelta(days=back)
    ahead = (weekday - base.weekday()) % 7 or 7  # "next Friday": the first Friday after today
    return base + timedelta(days=ahead)


def _english(m: re.Match[str], base: date) -> str | None:
    text = m.group().lower().removesuffix(m.group("poss") or "")
    if m.group("dayword"):
        return format_date(base + timedelta(days=_EN_DAY_WORDS[text]))
    if m.group("other"):
        return "a few days before " + format_date(base)
    if m.group("ago") or m.group("later"):
        words = text.removeprefix("in ").removesuffix(" ago").rsplit(" ", 1)
        if words[0] in _VAGUE:
            return _vaguely(base, words[0], words[1], "before" if m.group("ago") else "after")
        n = _number(words[0])
        return _shifted(base, words[1], -n if m.group("ago") else n) if n else None
    shift = {"last": -1, "this": 0, "next": 1}[text.split(" ", 1)[0]]
    unit = text.split(" ", 1)[1]
    if m.group("rel"):
        return _period(base, unit, shift)
    return format_date(_weekday(base, shift, _WEEKDAYS.index(unit.capitalize())))


def _chinese(m: re.Match[str], base: date) -> str | None:
    text = m.group()
    if m.group("zday"):
        return format_date_zh(base + timedelta(days=_ZH_DAY_WORDS[text]))
    if m.group("zyear"):
        return f"{base.year + _ZH_YEARS[text]}年"
    monday = _monday(base) + timedelta(weeks=_ZH_SHIFT.get(text[0], 0))
    if m.group("zwd"):
        return format_date_zh(monday + timedelta(days=_CJK_WEEKDAY[text[-1]]))
    if m.group("zweek"):
        return f"{monday.year}年{monday.month}月{monday.day}日那一週"
    if m.group("zfew"):
        return format_date_zh(base) + "的前幾天"
    if m.group("zmonth"):
        d = _add_months(base, _ZH_SHIFT[text[0]])
        return f"{d.year}年{d.month}月"
    number = re.match(_ZH_NUM, text)
    assert number is not None
    n = _number(number.group())
    rest = text[number.end() :]
    unit = next(u for u in _ZH_UNITS if rest.startswith(u))
    future = rest[len(unit) :] in _ZH_AFTER
    return _shifted_zh(base, unit, n if future else -n) if n else None


def _shifted_zh(base: date, unit: str, n: int) -> str:
    if unit in ("天", "日"):
        return format_date_zh(base + timedelta(days=n))
    if unit in ("個月", "个月"):
        d = _add_months(base, n)
        return f"{d.year}年{d.month}月"
    if unit == "年":
        return f"{base.year + n}年"
    d = base + timedelta(weeks=n)
    return f"約{d.year}年{d.month}月{d.day}日"


def annotate(text: str, ts: float, tz: tzinfo = UTC) -> str:
    """`text` with each relative date expression followed by the date it meant, as seen
    from `ts` (when the text was written): "yesterday" -> "yesterday [= Sunday, 29 November
    2026]". Text without such expressions comes back unchanged."""
    low = text.lower()
    english_cue = any(w in low for w in _EN_CUES) or (
        "in " in low and any(u in low for u in ("day", "week", "month", "year"))
    )
    chinese_cue = _ZH_CUES.search(text) is not None
    if not (english_cue or chinese_cue):
        return text  # most messages: no regex pass at all
    base = local_date(ts, tz)

    def english(m: re.Match[str]) -> str:
        meant = _english(m, base)
        return m.group() if meant is None else f"{m.group()} [= {meant}]"

    def chinese(m: re.Match[str]) -> str:
        meant = _chinese(m, base)
        return m.group() if meant is None else f"{m.group()}［= {meant}］"

    if english_cue:
        text = _EN.sub(english, text)
    return _ZH.sub(chinese, text) if chinese_cue else text
