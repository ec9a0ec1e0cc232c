"""Persona documents: parsing, validation messages, composition, and every shipped built-in."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from personas import (
    BUILTIN_DIR,
    FIELD_NAMES,
    InvalidPersona,
    Persona,
    build_system_prompt,
    load_persona_text,
    persona_to_yaml,
    render_greeting,
    validate_yaml,
)

SHIPPED = sorted(BUILTIN_DIR.glob("*.yaml"))

MINIMAL = "id: tester\ndisplay_name: Tester\nrole_description: You test things.\n"


def test_ships_the_required_personas():
    ids = {path.stem for path in SHIPPED}
    assert {"assistant", "sales", "production", "finance", "general_manager"} <= ids
    languages = {load_persona_text(p.read_text(encoding="utf-8")).language for p in SHIPPED}
    assert "繁體中文" in languages


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_persona_validates_and_composes(path: Path):
    text = path.read_text(encoding="utf-8")
    persona = load_persona_text(text)
    assert persona.id == path.stem
    prompt = build_system_prompt(persona)
    assert prompt.startswith(f"Persona: {persona.display_name}\n")
    assert "\n\n\n" not in prompt
    assert "{" not in prompt.replace("{{", "")  # every placeholder filled
    assert all(line == line.rstrip() for line in prompt.splitlines())
    assert persona.greeting, "every built-in opens a chat with a greeting"
    assert "{" not in render_greeting(persona)
    # The form->YAML direction of the editor round-trips without loss.
    assert load_persona_text(persona_to_yaml(persona)) == persona


def test_finance_veto_rule_renders_with_its_threshold():
    finance = load_persona_text((BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8"))
    assert finance.parameters["veto_threshold_pct"] == 15
    prompt = build_system_prompt(finance)
    veto = next(line for line in prompt.splitlines() if "must object" in line)
    assert "below 15%" in veto
    assert "{veto_threshold_pct}" not in prompt
    assert 'starts with "Finance verdict:"' in prompt


def test_general_manager_answers_in_traditional_chinese():
    gm = load_persona_text((BUILTIN_DIR / "general_manager.yaml").read_text(encoding="utf-8"))
    assert gm.language == "繁體中文"
    assert build_system_prompt(gm).endswith(
        "Always reply in 繁體中文, whatever language the user writes in, "
        "unless the user explicitly asks for another language."
    )


def test_minimal_persona_composes_without_empty_sections():
    persona = load_persona_text(MINIMAL + "personality: ''\nfocus_areas: []\ngreeting:\n")
    assert build_system_prompt(persona) == "Persona: Tester\nYou test things."
    assert persona.greeting == ""


def test_compose_order_is_stable():
    persona = load_persona_text(
        MINIMAL + "language: English\nconclusion_label: Verdict\nspecial_rules: [Be brief.]\n"
        "response_format: Bullets.\ndecision_priority: [Safety]\nfocus_areas: [Cost]\n"
        "personality: Calm.\n"
    )
    prompt = build_system_prompt(persona)
    order = [
        "You test things.",
        "Personality: Calm.",
        "Focus areas:\n- Cost",
        "Decision priorities, highest first:\n1. Safety",
        "Rules you must follow:\n- Be brief.",
        "Response format:\nBullets.",
        'starts with "Verdict:"',
        "Always reply in English",
    ]
    positions = [prompt.index(part) for part in order]
    assert positions == sorted(positions)


def test_placeholders_fill_escape_and_leave_json_alone():
    persona = load_persona_text(
        MINIMAL + "parameters: {pct: 15, ratio: 0.5, whole: 3.0, unit: days}\n"
        "special_rules:\n"
        "  - 'Object below {pct}% (ratio {ratio}, {whole} {unit}).'\n"
        "  - 'Write {{pct}} literally.'\n"
        'response_format: \'Reply as JSON: {"verdict": "..."}\'\n'
    )
    prompt = build_system_prompt(persona)
    assert "Object below 15% (ratio 0.5, 3 days)." in prompt
    assert "Write {pct} literally." in prompt
    assert 'Reply as JSON: {"verdict": "..."}' in prompt


def test_empty_yaml_values_mean_not_set():
    persona = load_persona_text(MINIMAL + "avatar:\ntemperature:\nparameters:\n")
    assert persona.avatar == "" and persona.temperature is None and persona.parameters == {}


def test_a_persona_is_immutable():
    persona = load_persona_text(MINIMAL)
    with pytest.raises(ValueError):
        persona.display_name = "Other"  # type: ignore[misc]


ALIAS_BOMB = (
    MINIMAL
    + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
)

BAD_YAML = [
    pytest.param(
        MINIMAL + "focus_areas: [a, b\n",
        "line 5, column 1: yaml: expected ',' or ']', but got '<stream end>' — a quote or "
        "bracket is not closed",
        id="syntax-error-line-col",
    ),
    pytest.param(
        MINIMAL + "  nested: value\n",
        "line 4, column 9: yaml: mapping values are not allowed here",
        id="bad-indent",
    ),
    pytest.param(
        MINIMAL + "\tpersonality: x\n",
        "line 4, column 1: yaml: found character '\\t' that cannot start any token "
        "— indent with spaces, not tabs",
        id="tab",
    ),
    pytest.param(
        MINIMAL + "focus_area: [cost]\n",
        "line 4, column 1: focus_area: unknown field — did you mean `focus_areas`?",
        id="unknown-key-suggests",
    ),
    pytest.param(
        MINIMAL + "mood: grumpy\n",
        "line 4, column 1: mood: unknown field — remove it; the fields are: id, display_name",
        id="unknown-key",
    ),
    pytest.param(
        MINIMAL + "focus_areas: cost control\n",
        "line 4, column 14: focus_areas: expected a list, got a text — write each item on its "
        "own line starting with '- '",
        id="wrong-type-list",
    ),
    pytest.param(
        MINIMAL + "temperature: warm\n",
        "line 4, column 14: temperature: expected a number such as 0.7, got a text",
        id="wrong-type-number",
    ),
    pytest.param(
        MINIMAL + "temperature: 3\n",
        "line 4, column 14: temperature: is 3; it must be between 0 and 2",
        id="temperature-range",
    ),
    pytest.param(
        MINIMAL.replace("Tester", "2024"),
        "line 2, column 15: display_name: expected a text, got the number 2024 — put the value "
        "in quotes",
        id="wrong-type-text",
    ),
    pytest.param(
        MINIMAL + "greeting: yes\n",
        "line 4, column 11: greeting: expected a text, got true",
        id="yaml-boolean",
    ),
    pytest.param(
        MINIMAL + "special_rules:\n  - ok\n  - [nested]\n",
        "line 6, column 5: special_rules item 2: expected a text, got a list",
        id="wrong-type-list-item",
    ),
    pytest.param(
        "display_name: Tester\nrole_description: You test things.\n",
        "id: required — add `id: my_persona`",
        id="missing-id",
    ),
    pytest.param(
        MINIMAL.replace("id: tester", "id: Sales Lead"),
        "line 1, column 5: id: 'Sales Lead' is not a valid id — use 1-40 characters of a-z, "
        "0-9, '_' or '-'",
        id="bad-id",
    ),
    pytest.param(
        MINIMAL.replace("id: tester", "id: ../../etc/passwd"),
        "line 1, column 5: id: '../../etc/passwd' is not a valid id",
        id="dotdot-id",
    ),
    pytest.param(
        MINIMAL.replace("id: tester", "id: " + "a" * 41),
        "line 1, column 5: id: '" + "a" * 41 + "' is not a valid id",
        id="long-id",
    ),
    pytest.param(
        MINIMAL + "description: '" + "x" * 70_000 + "'\n",
        "document: is 68 KB; the limit is 64 KB — shorten it",
        id="huge-document",
    ),
    pytest.param(
        ALIAS_BOMB,
        "line 5, column 8: yaml: alias *a — aliases and merge keys are not allowed",
        id="alias-bomb",
    ),
    pytest.param(
        "base: &base {display_name: X}\n<<: *base\nid: x\nrole_description: r\n",
        "line 2, column 5: yaml: alias *base — aliases and merge keys are not allowed",
        id="merge-key",
    ),
    pytest.param(
        "- id: tester\n- display_name: Tester\n",
        "line 1, column 1: document: expected a mapping of `field: value` lines at the top, "
        "got a list",
        id="non-mapping-root-list",
    ),
    pytest.param(
        "just some text\n",
        "line 1, column 1: document: expected a mapping of `field: value` lines at the top, "
        "got a text",
        id="non-mapping-root-text",
    ),
    pytest.param("", "document: is empty", id="empty"),
    pytest.param(
        MINIMAL + "parameters: {veto_threshold_pct: 15}\n"
        "special_rules: ['Object below {veto_treshold_pct}%.']\n",
        "line 5, column 17: special_rules item 1: unknown placeholder {veto_treshold_pct} — add "
        "`veto_treshold_pct: <value>` under parameters (known: veto_threshold_pct)",
        id="unknown-placeholder",
    ),
    pytest.param(
        MINIMAL + "greeting: " + "a" * 1200 + "\n",
        "line 4, column 11: greeting: is 1200 characters; the limit is 1000 — shorten it",
        id="text-too-long",
    ),
    pytest.param(
        MINIMAL + "focus_areas: [" + ", ".join(["x"] * 31) + "]\n",
        "line 4, column 14: focus_areas: has 31 entries; the limit is 30 — merge or remove some",
        id="list-too-long",
    ),
    pytest.param(
        MINIMAL + "special_rules:\n  - ''\n",
        "line 5, column 5: special_rules item 1: must not be empty — write the item or remove "
        "its line",
        id="empty-list-item",
    ),
    pytest.param(
        MINIMAL + "language: |\n  English\n  French\n",
        "line 4, column 11: language: must fit on one line — remove the line break",
        id="multi-line-language",
    ),
    pytest.param(
        MINIMAL + "parameters: {flag: true}\n",
        "line 4, column 20: parameters.flag: must be a number or a text",
        id="parameter-boolean",
    ),
    pytest.param(
        MINIMAL + "12: twelve\n",
        "line 4, column 1: 12: the number 12 is not a field name — use one of the persona fields",
        id="number-key",
    ),
    pytest.param(
        MINIMAL + "parameters: {12: 1}\n",
        "line 4, column 14: parameters.12: parameter names are text such as `veto_threshold_pct`, "
        "got the number 12",
        id="parameter-number-name",
    ),
    pytest.param(
        MINIMAL + "parameters: {2fast: 1}\n",
        "line 4, column 14: parameters.2fast: parameter names are letters, digits and '_'",
        id="parameter-name",
    ),
    pytest.param(
        MINIMAL + "id: other\n",
        "line 4, column 1: id: duplicate key (first set on line 1) — keep only one",
        id="duplicate-key",
    ),
    pytest.param(
        MINIMAL + "role_description: !!python/object/apply:os.system ['true']\n",
        "line 4, column 19: yaml: could not determine a constructor for the tag",
        id="python-tag",
    ),
    pytest.param(
        MINIMAL + "---\nid: second\n",
        "line 4, column 1: yaml: but found another document — keep one persona per file",
        id="two-documents",
    ),
    pytest.param(
        "[" * 200, "line 1, column 11: yaml: nested more than 10 levels deep", id="deep-nesting"
    ),
    pytest.param(
        MINIMAL + "i18n:\n  zh_TW:\n    display_name: 業務總監\n",
        "line 5, column 3: i18n.zh_TW: 'zh_TW' is not a language the app is shown in — use en "
        "or zh-TW",
        id="i18n-unknown-language",
    ),
    pytest.param(
        MINIMAL + "i18n:\n  zh-TW:\n    display_nam: 業務總監\n",
        "line 6, column 5: i18n.zh-TW.display_nam: unknown field — did you mean `display_name`?",
        id="i18n-unknown-field",
    ),
    pytest.param(
        MINIMAL + "i18n:\n  zh-TW: 業務總監\n",
        "line 5, column 10: i18n.zh-TW: expected the fields shown in zh-TW, got a text — write "
        "`display_name: ...`",
        id="i18n-entry-not-a-mapping",
    ),
    pytest.param(
        MINIMAL + "i18n: [zh-TW]\n",
        "line 4, column 7: i18n: expected a mapping of languages, got a list",
        id="i18n-not-a-mapping",
    ),
    pytest.param(
        MINIMAL + "i18n:\n  zh-TW:\n    greeting: 門檻 {threshold}%\n",
        "line 6, column 15: i18n.zh-TW.greeting: unknown placeholder {threshold}",
        id="i18n-greeting-placeholder",
    ),
    pytest.param(
        MINIMAL + "i18n:\n  en:\n    display_name: " + "x" * 61 + "\n",
        "line 6, column 19: i18n.en.display_name: is 61 characters; the limit is 60",
        id="i18n-name-too-long",
    ),
    pytest.param(
        MINIMAL + 'i18n:\n  zh-TW:\n    veto_label: "財務\\n否決"\n',
        "line 6, column 17: i18n.zh-TW.veto_label: must fit on one line — remove the line break",
        id="i18n-veto-label-two-lines",
    ),
]


@pytest.mark.parametrize(("yaml_text", "expected_error"), BAD_YAML)
def test_bad_yaml_is_refused_with_a_located_message(yaml_text: str, expected_error: str):
    with pytest.raises(InvalidPersona) as caught:
        load_persona_text(yaml_text)
    assert any(problem.startswith(expected_error) for problem in caught.value.problems), (
        caught.value.problems
    )
    assert validate_yaml(yaml_text) == caught.value.problems


def test_every_problem_is_reported_at_once_in_line_order():
    text = "id: Bad Id\ndisplay_name: 7\nrole_description: ok\nmood: x\ntemperature: hot\n"
    with pytest.raises(InvalidPersona) as caught:
        load_persona_text(text)
    assert [p.split(":")[0] for p in caught.value.problems] == [
        "line 1, column 5",
        "line 2, column 15",
        "line 4, column 1",
        "line 5, column 14",
    ]
    details = caught.value.details
    assert (details[0].field, details[0].line, details[0].column) == ("id", 1, 5)
    assert str(caught.value).startswith("Persona YAML has 4 problems:\n- line 1, column 5: id:")


def test_alias_bomb_is_refused_quickly():
    started = time.perf_counter()
    with pytest.raises(InvalidPersona):
        load_persona_text(ALIAS_BOMB)
    assert time.perf_counter() - started < 0.5


def test_a_64kb_document_is_accepted_and_one_byte_more_is_not():
    base = MINIMAL + "# "
    text = base + "x" * (64 * 1024 - len(base.encode()) - 1) + "\n"
    assert len(text.encode()) == 64 * 1024
    assert load_persona_text(text).id == "tester"
    with pytest.raises(InvalidPersona, match="the limit is 64 KB"):
        load_persona_text(text + "#")


def test_bytes_input_is_decoded_as_utf8():
    assert load_persona_text(MINIMAL.encode()).id == "tester"
    with pytest.raises(InvalidPersona, match="is not UTF-8"):
        load_persona_text(b"\xff\xfe" + MINIMAL.encode("utf-16-le"))


def test_persona_to_yaml_keeps_field_order_and_unicode():
    persona = load_persona_text(
        MINIMAL + "language: 繁體中文\nparameters: {pct: 15}\nfocus_areas: [成本]\n"
    )
    text = persona_to_yaml(persona)
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line[0].isspace()]
    assert keys == [f for f in FIELD_NAMES if f in keys]
    assert "繁體中文" in text and "  - 成本" in text


def test_persona_model_rejects_unknown_fields_directly():
    with pytest.raises(ValueError, match="Extra inputs"):
        Persona(id="x", display_name="X", role_description="r", mood="grumpy")  # type: ignore[call-arg]


def test_a_blank_required_field_says_what_to_write():
    with pytest.raises(InvalidPersona) as caught:
        load_persona_text("id: x\ndisplay_name: X\nrole_description:\n")
    assert caught.value.problems == [
        "line 3, column 18: role_description: must not be empty — say who the persona is and "
        "what it does"
    ]


def test_a_byte_order_mark_is_accepted():
    assert load_persona_text("\ufeff" + MINIMAL).id == "tester"


def test_i18n_texts_are_what_a_page_in_that_language_shows_never_the_prompt():
    sales = load_persona_text((BUILTIN_DIR / "sales.yaml").read_text(encoding="utf-8"))
    assert sales.shown("display_name", "zh-TW") == "業務總監"
    assert sales.shown("display_name", "en") == sales.shown("display_name", None)
    assert sales.shown("display_name", "en") == "Sales Director"
    assert "業務總監" not in build_system_prompt(sales)
    finance = load_persona_text((BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8"))
    assert "15% 的毛利門檻" in render_greeting(finance, "zh-TW")  # placeholders filled
    assert render_greeting(finance, "en").startswith("Finance here.")
    # An entry giving only some texts falls back to the persona's own for the others.
    assistant = load_persona_text((BUILTIN_DIR / "assistant.yaml").read_text(encoding="utf-8"))
    assert assistant.shown("display_name", "zh-TW") == "Mnemo"


def test_persona_to_yaml_round_trips_i18n_and_leaves_out_what_it_does_not_give():
    text = MINIMAL + "i18n:\n  zh-TW:\n    display_name: 業務總監\n"
    persona = load_persona_text(text)
    dumped = persona_to_yaml(persona)
    assert "i18n:\n  zh-TW:\n    display_name: 業務總監\n" in dumped
    assert "greeting" not in dumped
    assert load_persona_text(dumped) == persona
    assert "i18n" not in persona_to_yaml(load_persona_text(MINIMAL))
