"""What is wrong in persona and roundtable YAML, on a zh-TW page (ui/yaml_problems.py): every
problem the validators' own test tables produce comes out in Chinese, its place, field and
code kept; an English page keeps the validators' words."""

from __future__ import annotations

import re

import pytest
from test_personas import BAD_YAML, MINIMAL
from test_roundtable_config import BAD as BAD_ROUNDTABLES

from personas import (
    BUILTIN_DIR,
    FIELD_NAMES,
    InvalidPersona,
    apply_form,
    load_persona_text,
    load_roundtable_text,
)
from personas.roundtable import ROUNDTABLE_FIELDS
from ui import views, yaml_problems
from ui.i18n import speaking

FINANCE = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
# Words that stay as they are in the Chinese: formats, and the names the user types.
KEPT = {
    "YAML",
    "UTF-8",
    "KB",
    "Tab",
    "id",
    "python",
    "en",
    "zh-TW",
    "a-z",
    "yes",
    "no",
    "on",
    "off",
    "true",
    "false",
    *FIELD_NAMES,
    *ROUNDTABLE_FIELDS,
}
MORE_PERSONAS = [
    "",
    "- just a list\n",
    "x" * (65 * 1024),
    MINIMAL + "parameters:\n  on_time: yes\n",
    MINIMAL + "parameters:\n  9lives: 1\n",
    MINIMAL + "parameters:\n  x: .inf\n",
    MINIMAL + "parameters:\n  x: " + "y" * 201 + "\n",
    MINIMAL + "conclusion_label: |\n  two\n  lines\n",
    MINIMAL + "focus_areas:\n  - ''\n",
    MINIMAL + "avatar:\n  - x\n",
    MINIMAL + "temperature: 3\n",
    MINIMAL + "focus_areas: [" + ", ".join("a" for _ in range(31)) + "]\n",
    MINIMAL + "moood: x\n",
    MINIMAL + "zzzzzzzz: x\n",
    "id: ''\ndisplay_name: ''\nrole_description: ''\n",
    "display_name: X\n",
    MINIMAL + "greeting: {veto}\n",
    MINIMAL + "a: b: c\n",
    MINIMAL + "focus_areas:\n\t- a\n",
    MINIMAL + "x: &a 1\ny: *a\n",
]


def problems_of(load, text: str | bytes) -> list[str]:
    with pytest.raises(InvalidPersona) as caught:
        load(text)
    return caught.value.problems


def every_problem() -> list[str]:
    found = [
        p for text, _ in (b.values for b in BAD_YAML) for p in problems_of(load_persona_text, text)
    ]
    found += [p for text in MORE_PERSONAS for p in problems_of(load_persona_text, text)]
    found += problems_of(load_persona_text, b"id: \xff\n")
    found += [p for text, _ in BAD_ROUNDTABLES for p in problems_of(load_roundtable_text, text)]
    found += problems_of(load_roundtable_text, "id: b\ndisplay_name: B\nmembers: []\nchair: c\n")
    found += problems_of(
        load_roundtable_text,
        "id: b\ndisplay_name: B\nmembers: [a]\nchair: c\nrounds: two\n"
        "metrics:\n  - {name: N, gross_margin_pct: 120}\n  - {gross_margin_pct: '1'}\n"
        "veto:\n  threshold_parameter: x\n",
    )
    for values in (
        {"display_name": "", "temperature": "hot"},
        {"parameters": "- not a mapping"},
        {"mood": "grumpy"},
    ):
        found += apply_form(FINANCE, values).problems
    found += apply_form("id: x\n  bad: [\n", {"display_name": "X"}).problems
    return found


def english_left(shown: str) -> set[str]:
    """English words in a translated problem, leaving out code (`...`), quoted values, the
    field before the first "：", and PyYAML's own words (quoted last, in （...）)."""
    shown = re.sub(r"^第 \d+ 行第 \d+ 欄：", "", shown)
    shown = shown.split("：", 1)[1] if "：" in shown.split(" ", 1)[0] + shown[:60] else shown
    shown = re.sub(r"`[^`]*`|'[^']*'|（[^（]*）$|\{[^}]*\}|\*\w+", "", shown)
    words = set(re.findall(r"[A-Za-z][\w-]*[A-Za-z0-9]", shown))
    return {w for w in words if "_" not in w} - KEPT  # identifiers are the user's names


PROBLEMS = every_problem()


@pytest.mark.parametrize("problem", PROBLEMS)
def test_every_validator_problem_reads_in_chinese_with_its_place(problem: str):
    with speaking("zh-TW"):
        shown = views.located(problem)
    assert english_left(shown) == set(), (problem, shown)
    place = re.match(r"line (\d+), column (\d+): ", problem)
    if place:
        assert shown.startswith(f"第 {place[1]} 行第 {place[2]} 欄：")
    with speaking("en"):
        assert views.located(problem) == problem


def test_the_values_in_a_problem_are_kept():
    problem = "line 6, column 5: i18n.zh-TW.display_nam: unknown field — did you mean "
    problem += "`display_name`? Rename or remove it"
    with speaking("zh-TW"):
        assert views.located(problem) == (
            "第 6 行第 5 欄：i18n.zh-TW.display_nam：未知的欄位 — 是不是要寫 `display_name`？"
            "請改名或刪除"
        )
        item = views.located(
            "line 7, column 5: focus_areas item 2: must not be empty — write the item or "
            "remove its line"
        )
        assert item.startswith("第 7 行第 5 欄：focus_areas 第 2 項：不能是空的")
        # A sentence the table does not know is shown as the validator wrote it.
        assert (
            views.located("line 1, column 1: x: something new")
            == "第 1 行第 1 欄：x: something new"
        )


def test_both_languages_of_a_sentence_format_the_same_values():
    for english, chinese in yaml_problems.SENTENCES + yaml_problems.WHATS:
        assert yaml_problems.names(english) == yaml_problems.names(chinese), english


def test_the_problems_list_on_a_zh_tw_page():
    with speaking("zh-TW"):
        shown = views.problems_markdown(problems_of(load_persona_text, MINIMAL + "rounds: 2\n"))
    assert shown.startswith("❌ **YAML 有問題：**")
    assert "第 4 行第 1 欄：rounds：未知的欄位" in shown
