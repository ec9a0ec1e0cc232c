"""The persona editor's form <-> YAML (personas/form.py): what the form shows for a persona and
what a form edit writes into the YAML, with the one persona dumper."""

from __future__ import annotations

import pytest
import yaml

from personas import (
    BUILTIN_DIR,
    FORM_FIELDS,
    apply_form,
    build_system_prompt,
    form_values,
    load_persona_text,
    persona_to_yaml,
)
from personas.form import parameters_to_text
from personas.loader import dump_persona_mapping

FINANCE = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
PARAMETERS_HINT = "parameters: write one `name: value` per line, e.g. `veto_threshold_pct: 15`"


def finance():
    return load_persona_text(FINANCE)


def test_form_values_are_text_friendly_and_named():
    values = form_values(finance())
    assert values._fields == FORM_FIELDS
    assert values.display_name == "Finance Controller" == values[0]
    assert (
        values.parameters
        == "veto_threshold_pct: 15\nmax_payment_terms_days: 60\nveto_label: FINANCE VETO"
    )
    assert values.special_rules.splitlines()[0].startswith("If the expected gross margin")
    assert values.temperature == 0.2


def test_unchanged_form_round_trips_to_the_same_persona_and_keeps_comments():
    merged = apply_form(FINANCE, form_values(finance())._asdict())
    assert merged.problems == [] and merged.persona == finance()
    assert merged.yaml_text.startswith("# ERP decision board: the finance seat.")


def test_form_edits_merge_into_yaml_and_keep_other_fields():
    merged = apply_form(
        FINANCE,
        {
            "display_name": "  CFO  ",
            "focus_areas": "  Cash\n\nMargin  \nRisk\n",
            "parameters": "veto_threshold_pct: 20\nmax_payment_terms_days: 45\ncurrency: EUR",
            "temperature": 0.3,
        },
    )
    assert merged.problems == []
    persona = load_persona_text(merged.yaml_text)
    assert persona == merged.persona
    assert persona.display_name == "CFO"
    assert persona.focus_areas == ["Cash", "Margin", "Risk"]
    assert persona.parameters == {
        "veto_threshold_pct": 20,
        "max_payment_terms_days": 45,
        "currency": "EUR",
    }
    assert persona.temperature == 0.3
    assert persona.greeting.startswith("Finance here.")  # not on the form, kept
    assert persona.description == finance().description
    assert "below 20%" in build_system_prompt(persona)


@pytest.mark.parametrize(
    ("typed", "expected"), [("", None), (None, None), (1, 1.0), ("1.5", 1.5), (0, 0.0)]
)
def test_temperature_from_the_form(typed, expected):
    merged = apply_form(FINANCE, {"temperature": typed})
    assert merged.problems == [] and merged.persona.temperature == expected


@pytest.mark.parametrize(
    "parameters",
    [
        "veto_threshold_pct: 12\n\nmax_payment_terms_days: 30\n",
        "{veto_threshold_pct: 12, max_payment_terms_days: 30}",
    ],
    ids=["lines", "flow-mapping"],
)
def test_parameters_from_the_form(parameters):
    persona = apply_form(FINANCE, {"parameters": parameters}).persona
    assert persona.parameters == {"veto_threshold_pct": 12, "max_payment_terms_days": 30}


@pytest.mark.parametrize("parameters", ["threshold 15", "a: [", "- 15"])
def test_parameters_that_are_not_a_mapping_say_how_to_write_them(parameters):
    merged = apply_form(FINANCE, {"parameters": parameters, "display_name": "Changed"})
    assert merged == (FINANCE, None, [PARAMETERS_HINT])  # nothing written


def test_removing_a_cited_parameter_is_reported_at_its_line():
    merged = apply_form(FINANCE, {"parameters": "max_payment_terms_days: 60"})
    assert merged.persona is None and merged.problems
    assert all("unknown placeholder {veto_threshold_pct}" in p for p in merged.problems)
    assert merged.problems[0].startswith("line ")


def test_bad_form_values_are_reported_like_typed_yaml():
    merged = apply_form(FINANCE, {"display_name": "", "temperature": "hot"})
    lines = merged.yaml_text.splitlines()
    name_line = lines.index("display_name: ''") + 1
    temperature_line = lines.index("temperature: hot") + 1
    assert merged.persona is None
    assert merged.problems == [
        f"line {name_line}, column 15: display_name: must not be empty — write the name shown "
        "in the picker",
        f"line {temperature_line}, column 14: temperature: expected a number such as 0.7, got a "
        "text — write it without quotes",
    ]


def test_an_emptied_optional_field_leaves_the_document():
    merged = apply_form(FINANCE, {"avatar": "", "focus_areas": "\n \n"})
    assert merged.problems == []
    assert "avatar:" not in merged.yaml_text and "focus_areas:" not in merged.yaml_text
    assert merged.persona.avatar == "" and merged.persona.focus_areas == []  # the defaults


def test_broken_yaml_cannot_take_form_edits():
    broken = "id: x\n  bad: [\n"
    merged = apply_form(broken, {"display_name": "X"})
    assert merged.yaml_text == broken and merged.persona is None
    assert merged.problems[0] == "Fix the YAML first — the form follows it."
    assert merged.problems[1].startswith("line 2, column 6: yaml:")


def test_a_field_not_on_the_form_changes_nothing_and_says_where_to_edit_it():
    merged = apply_form(FINANCE, {"mood": "grumpy", "display_name": "X"})
    assert merged.yaml_text == FINANCE and merged.persona is None
    assert merged.problems == [
        f"mood: not on the form (it has {', '.join(FORM_FIELDS)}); edit it in the YAML"
    ]


def test_the_one_dumper_writes_like_the_built_in_files():
    long_text = "word " * 30
    text = dump_persona_mapping(
        {
            "id": "x",
            "role_description": long_text.strip(),
            "special_rules": ["one", "two"],
            "greeting": "Line one.\nLine two.",
            "language": "繁體中文",
        }
    )
    assert "role_description: >-\n  word word" in text  # a long text folds at the width
    assert "special_rules:\n  - one\n  - two\n" in text  # list items indented
    assert "greeting: |-\n  Line one.\n  Line two.\n" in text  # line breaks kept
    assert "language: 繁體中文" in text
    assert yaml.safe_load(text)["role_description"] == long_text.strip()
    # The form's parameters and persona_to_yaml use the same dumper.
    assert parameters_to_text({"pct": 15, "days": 60}) == "pct: 15\ndays: 60"
    assert load_persona_text(persona_to_yaml(finance())) == finance()


def test_a_form_edit_keeps_the_i18n_block_and_the_yaml_round_trips_it():
    """The form has no i18n fields: an edit there keeps the entries the YAML gives."""
    values = form_values(finance())._asdict() | {"display_name": "Finance Lead"}
    merged = apply_form(FINANCE, values)
    assert merged.problems == []
    assert merged.persona.display_name == "Finance Lead"
    assert merged.persona.i18n == finance().i18n
    assert merged.persona.shown("display_name", "zh-TW") == "財務長"
    again = apply_form(merged.yaml_text, form_values(merged.persona)._asdict())
    assert again.persona == merged.persona
