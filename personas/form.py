"""Form <-> YAML for the persona editor.

The editor shows one persona two ways: a YAML document and a form of the most edited fields.
`form_values()` fills the form from YAML; `apply_form_values()` writes form edits back into the
YAML, keeping every field the form does not show. The merged YAML is not validated here: the
editor validates it like typed YAML, so errors point at lines of the text the user sees.
Comments in the YAML are not kept when the form rewrites it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from .errors import InvalidPersona, Problem
from .loader import dump_persona_mapping, load_persona_text, read_persona_mapping
from .model import Persona

FORM_FIELDS = (
    "display_name",
    "avatar",
    "description",
    "role_description",
    "language",
    "personality",
    "focus_areas",
    "decision_priority",
    "response_format",
    "conclusion_label",
    "special_rules",
    "greeting",
    "temperature",
    "parameters",
)
LIST_FIELDS = ("focus_areas", "decision_priority", "special_rules")


def lines_to_list(value: str | Iterable[str] | None) -> list[str]:
    """One item per non-blank line; a leading '- ' or '* ' bullet is dropped."""
    if value is None:
        return []
    raw = value.splitlines() if isinstance(value, str) else [str(v) for v in value]
    items = []
    for line in raw:
        text = line.strip()
        if text[:2] in ("- ", "* "):
            text = text[2:].strip()
        if text:
            items.append(text)
    return items


def list_to_lines(items: Iterable[str]) -> str:
    return "\n".join(items)


def _scalar(text: str) -> Any:
    # Numbers typed in a text box become numbers; anything else stays the text as typed.
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return text


def parse_parameters(value: str | Mapping[str, Any] | Iterable[Any] | None) -> dict[str, Any]:
    """Parameters from `name: value` lines, a mapping, or rows of [name, value]."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        rows: list[tuple[Any, Any]] = []
        for number, line in enumerate(value.splitlines(), 1):
            if not line.strip():
                continue
            name, sep, raw = line.partition(":")
            if not sep:
                raise InvalidPersona(
                    [
                        Problem(
                            "parameters",
                            f"form line {number} {line.strip()!r} needs `name: value`, "
                            "e.g. `veto_threshold_pct: 15`",
                        )
                    ]
                )
            rows.append((name, raw))
    else:
        rows = [tuple(row)[:2] for row in value if row and any(str(c).strip() for c in row)]
    result: dict[str, Any] = {}
    for name, raw in rows:
        result[str(name).strip()] = _scalar(raw.strip()) if isinstance(raw, str) else raw
    return result


def parameters_to_lines(parameters: Mapping[str, Any]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in parameters.items())


def _temperature(value: Any) -> Any:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        return _scalar(value.strip())
    return value


def form_values(source: Persona | str) -> dict[str, Any]:
    """Values for the editor's form: texts, list fields as one item per line, parameters as
    `name: value` lines, temperature as a number or None. `source` is a Persona or valid YAML."""
    persona = source if isinstance(source, Persona) else load_persona_text(source)
    values: dict[str, Any] = {}
    for field in FORM_FIELDS:
        value = getattr(persona, field)
        if field in LIST_FIELDS:
            value = list_to_lines(value)
        elif field == "parameters":
            value = parameters_to_lines(value)
        values[field] = value
    return values


def apply_form_values(yaml_text: str, **values: Any) -> str:
    """YAML text with the given form fields replaced; other fields stay as they were.

    Accepts the shapes `form_values()` returns (and lists/mappings). A field given as an empty
    value is removed. Raises InvalidPersona if `yaml_text` is not a readable YAML mapping (fix
    the YAML first); the result itself is not validated — run `validate_yaml` on it.
    """
    unknown = sorted(set(values) - set(FORM_FIELDS))
    if unknown:
        raise TypeError(f"not form fields: {', '.join(unknown)}")
    data = read_persona_mapping(yaml_text) if yaml_text.strip() else {}
    for field, value in values.items():
        if field in LIST_FIELDS:
            value = lines_to_list(value)
        elif field == "parameters":
            value = parse_parameters(value)
        elif field == "temperature":
            value = _temperature(value)
        elif isinstance(value, str):
            value = value.strip()
        data[field] = value
    return dump_persona_mapping(data)
