"""The persona editor's form <-> YAML helpers."""

from __future__ import annotations

import pytest

from personas import (
    BUILTIN_DIR,
    FORM_FIELDS,
    InvalidPersona,
    apply_form_values,
    build_system_prompt,
    form_values,
    load_persona_text,
    validate_yaml,
)

FINANCE = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")


def test_form_values_are_text_friendly():
    values = form_values(FINANCE)
    assert set(values) == set(FORM_FIELDS)
    assert values["display_name"] == "Finance Controller"
    assert values["parameters"] == "veto_threshold_pct: 15\nmax_payment_terms_days: 60"
    assert values["special_rules"].splitlines()[0].startswith("If the expected gross margin")
    assert values["temperature"] == 0.2


def test_unchanged_form_round_trips_to_the_same_persona():
    merged = apply_form_values(FINANCE, **form_values(FINANCE))
    assert load_persona_text(merged) == load_persona_text(FINANCE)


def test_form_edits_merge_into_yaml_and_keep_other_fields():
    merged = apply_form_values(
        FINANCE,
        display_name="  CFO  ",
        focus_areas="- Cash\n\n* Margin\nRisk\n",
        parameters="veto_threshold_pct: 20\nmax_payment_terms_days: 45\ncurrency: EUR",
        temperature="0.3",
    )
    persona = load_persona_text(merged)
    assert persona.display_name == "CFO"
    assert persona.focus_areas == ["Cash", "Margin", "Risk"]
    assert persona.parameters == {
        "veto_threshold_pct": 20,
        "max_payment_terms_days": 45,
        "currency": "EUR",
    }
    assert persona.temperature == 0.3
    assert persona.greeting.startswith("Finance here.")  # not on the form's edit, kept
    assert "below 20%" in build_system_prompt(persona)


@pytest.mark.parametrize(("typed", "expected"), [("", None), (None, None), (1, 1), ("1.5", 1.5)])
def test_temperature_from_the_form(typed, expected):
    assert load_persona_text(apply_form_values(FINANCE, temperature=typed)).temperature == expected


@pytest.mark.parametrize(
    "parameters",
    [
        "veto_threshold_pct: 12\n\nmax_payment_terms_days: 30\n",
        [["veto_threshold_pct", 12], ["max_payment_terms_days", "30"], ["", ""]],
        {"veto_threshold_pct": 12, "max_payment_terms_days": 30},
    ],
    ids=["lines", "dataframe-rows", "mapping"],
)
def test_parameters_from_the_form(parameters):
    persona = load_persona_text(apply_form_values(FINANCE, parameters=parameters))
    assert persona.parameters == {"veto_threshold_pct": 12, "max_payment_terms_days": 30}


def test_removing_a_cited_parameter_is_reported_at_its_line():
    merged = apply_form_values(FINANCE, parameters="max_payment_terms_days: 60")
    problems = validate_yaml(merged)
    assert problems and all("unknown placeholder {veto_threshold_pct}" in p for p in problems)
    assert problems[0].startswith("line ")


def test_bad_form_values_are_reported_like_typed_yaml():
    merged = apply_form_values(FINANCE, display_name="", temperature="hot")
    assert validate_yaml(merged) == [
        "line 2, column 15: display_name: must not be empty — write the name shown in the picker",
        "line 30, column 14: temperature: expected a number such as 0.7, got a text — write it "
        "without quotes",
    ]


def test_parameter_lines_need_a_colon():
    with pytest.raises(InvalidPersona, match="form line 2 'threshold 15' needs `name: value`"):
        apply_form_values(FINANCE, parameters="a: 1\nthreshold 15")


def test_broken_yaml_cannot_take_form_edits():
    with pytest.raises(InvalidPersona, match="line 2, column"):
        apply_form_values("id: x\n  bad: [\n", display_name="X")


def test_an_empty_editor_starts_a_new_persona_from_the_form():
    merged = apply_form_values("", display_name="Poet", role_description="You write haiku.")
    assert validate_yaml(merged) == [
        "id: required — add `id: my_persona` (1-40 of a-z, 0-9, '_' or '-')"
    ]
    persona = load_persona_text("id: poet\n" + merged)
    assert persona.display_name == "Poet"


def test_unknown_form_field_is_a_programming_error():
    with pytest.raises(TypeError, match="not form fields: mood"):
        apply_form_values(FINANCE, mood="grumpy")
