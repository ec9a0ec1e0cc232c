"""Form <-> YAML for the persona editor.

The editor shows one persona two ways: a YAML document (the source of truth) and a form of the
fields people edit most. `form_values()` fills the form from a persona; `apply_form()` merges
form edits into the document, keeping its leading comments and every field the form does not
show, writes it with the one persona dumper (`loader.dump_persona_mapping`) and validates it,
so the form and the YAML report problems in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import yaml

from .errors import InvalidPersona, Problem
from .loader import dump_persona_mapping, load_persona_text
from .model import Persona

# The form's fields, in the order the editor shows them.
FORM_FIELDS: tuple[str, ...] = (
    "display_name",
    "avatar",
    "role_description",
    "language",
    "personality",
    "focus_areas",
    "special_rules",
    "temperature",
    "parameters",
)
LIST_FIELDS = frozenset({"focus_areas", "special_rules"})
# Kept when emptied, so the problems say what to write instead of the field vanishing.
_KEPT_EMPTY = frozenset({"display_name", "role_description"})
_PARAMETERS_HINT = "write one `name: value` per line, e.g. `veto_threshold_pct: 15`"

# A persona's values as the form shows them, one field per form widget (a tuple in FORM_FIELDS
# order, with the names as attributes).
FormValues = NamedTuple("FormValues", [(name, Any) for name in FORM_FIELDS])


class MergedForm(NamedTuple):
    """A form edit merged into the YAML: the new text, and the persona or what is wrong."""

    yaml_text: str
    persona: Persona | None
    problems: list[str]


def lines_to_list(text: str | None) -> list[str]:
    """One item per non-blank line, trimmed."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def parameters_to_text(parameters: Mapping[str, Any]) -> str:
    """Parameters as the form shows them: `name: value` lines (a small YAML mapping)."""
    return dump_persona_mapping(dict(parameters)).strip() if parameters else ""


def parse_parameters(text: str | None) -> dict[str, Any]:
    """`name: value` lines into a mapping; InvalidPersona says how to write them."""
    text = (text or "").strip()
    if not text:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidPersona([Problem("parameters", _PARAMETERS_HINT)]) from exc
    if not isinstance(data, dict):
        raise InvalidPersona([Problem("parameters", _PARAMETERS_HINT)])
    return data


def _temperature(value: Any) -> Any:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return value  # left as typed, so the validator reports it as it would in the YAML


def form_values(persona: Persona) -> FormValues:
    """The form's values for a persona: texts as they are, lists one item per line, parameters
    as `name: value` lines, temperature a number or None."""
    values: dict[str, Any] = {}
    for name in FORM_FIELDS:
        value = getattr(persona, name)
        if name in LIST_FIELDS:
            value = "\n".join(value)
        elif name == "parameters":
            value = parameters_to_text(value)
        values[name] = value
    return FormValues(**values)


def _leading_comments(text: str) -> str:
    """The comment lines a document starts with, kept across a form edit."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + "\n" if lines else ""


def _document_value(name: str, value: Any) -> Any:
    """A form widget's value as the YAML document holds it."""
    if name in LIST_FIELDS:
        return lines_to_list(value)
    if name == "parameters":
        return parse_parameters(value)
    if name == "temperature":
        return _temperature(value)
    return value.strip() if isinstance(value, str) else value


def apply_form(yaml_text: str, values: Mapping[str, Any]) -> MergedForm:
    """Merge form values (by field name) into the YAML document and validate the result.

    The current YAML must be valid (the form mirrors it); if it is not, or a value cannot go
    into the document, the YAML comes back unchanged with the problems. A field emptied on the
    form leaves the document, except the required texts, which stay so the problems name them.
    """
    unknown = [name for name in values if name not in FORM_FIELDS]
    if unknown:
        fields = ", ".join(FORM_FIELDS)
        problems = [
            f"{name}: not on the form (it has {fields}); edit it in the YAML" for name in unknown
        ]
        return MergedForm(yaml_text, None, problems)
    try:
        load_persona_text(yaml_text)
    except InvalidPersona as exc:
        return MergedForm(
            yaml_text, None, ["Fix the YAML first — the form follows it.", *exc.problems]
        )
    data = yaml.safe_load(yaml_text)  # already validated above: a small, safe mapping
    for name, raw in values.items():
        try:
            value = _document_value(name, raw)
        except InvalidPersona as exc:
            return MergedForm(yaml_text, None, exc.problems)
        if value in (None, "", [], {}) and name not in _KEPT_EMPTY:
            data.pop(name, None)
        else:
            data[name] = value
    new_text = _leading_comments(yaml_text) + dump_persona_mapping(data)
    try:
        persona = load_persona_text(new_text)
    except InvalidPersona as exc:
        return MergedForm(new_text, None, exc.problems)
    return MergedForm(new_text, persona, [])
