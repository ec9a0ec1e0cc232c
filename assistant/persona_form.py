"""The persona editor's form <-> YAML translation, over plain values (the facade's editor ops).

The YAML is the source of truth; the form edits a few of its fields. A form edit is merged into
the current document and validated by the personas package, so both sides report the same
problems with the same words.
"""

from __future__ import annotations

from typing import Any

import yaml

from personas import InvalidPersona, Persona, load_persona_text

# The form's fields, in the order the widgets are created and handlers return them.
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
_LIST_FIELDS = {"focus_areas", "special_rules"}


def form_values(persona: Persona) -> tuple[Any, ...]:
    """A persona's values as the form widgets show them (lists one item per line, parameters
    as a small YAML mapping)."""
    values: list[Any] = []
    for name in FORM_FIELDS:
        value = getattr(persona, name)
        if name in _LIST_FIELDS:
            value = "\n".join(value)
        elif name == "parameters":
            value = _dump(dict(value)).strip() if value else ""
        values.append(value)
    return tuple(values)


class _PersonaDumper(yaml.SafeDumper):
    """Dumps the way the built-in files are written: indented lists, long text folded."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class _Block(str):
    """A top-level text written as a block: `|` keeps its line breaks, `>` folds a long line."""


def _block(dumper: yaml.SafeDumper, value: _Block) -> yaml.ScalarNode:
    style = "|" if "\n" in value.rstrip("\n") else ">"
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=style)


_PersonaDumper.add_representer(_Block, _block)


def _dump(data: dict[str, Any]) -> str:
    """YAML like the built-in files: long top-level texts as blocks, list items on one line."""
    shaped = {
        key: _Block(value)
        if isinstance(value, str) and ("\n" in value.rstrip("\n") or len(value) > 90)
        else value
        for key, value in data.items()
    }
    return yaml.dump(shaped, Dumper=_PersonaDumper, sort_keys=False, allow_unicode=True, width=92)


def _leading_comments(text: str) -> str:
    """The comment lines a document starts with, kept across a form edit."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + "\n" if lines else ""


def _parse_parameters(text: str) -> dict[str, Any]:
    text = (text or "").strip()
    if not text:
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidPersonaForm(
            "parameters: write one `name: value` per line, e.g. `veto_threshold_pct: 15`"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidPersonaForm(
            "parameters: write one `name: value` per line, e.g. `veto_threshold_pct: 15`"
        )
    return data


class InvalidPersonaForm(ValueError):
    """A form value that cannot even be put into the YAML document."""


def apply_form(yaml_text: str, values: dict[str, Any]) -> tuple[str, Persona | None, list[str]]:
    """Merge form values into the YAML document.

    Returns (new YAML, persona or None, problems). The current YAML must be valid (the form
    mirrors it); if it is not, the YAML is returned unchanged with its problems.
    """
    try:
        load_persona_text(yaml_text)
    except InvalidPersona as exc:
        return yaml_text, None, ["Fix the YAML first — the form follows it.", *exc.problems]
    data = yaml.safe_load(yaml_text)  # already validated above: a small, safe mapping
    for name, value in values.items():
        if name not in FORM_FIELDS:
            continue
        if name in _LIST_FIELDS:
            value = [line.strip() for line in (value or "").splitlines() if line.strip()]
        elif name == "parameters":
            try:
                value = _parse_parameters(value)
            except InvalidPersonaForm as exc:
                return yaml_text, None, [str(exc)]
        elif name == "temperature":
            value = None if value in (None, "") else float(value)
        elif isinstance(value, str):
            value = value.strip()
        if value in (None, "", [], {}) and name not in ("display_name", "role_description"):
            data.pop(name, None)
        else:
            data[name] = value
    new_text = _leading_comments(yaml_text) + _dump(data)
    try:
        persona = load_persona_text(new_text)
    except InvalidPersona as exc:
        return new_text, None, exc.problems
    return new_text, persona, []
