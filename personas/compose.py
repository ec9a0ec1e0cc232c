"""Compose a persona into the system prompt the model receives.

Sections come in a fixed order (role, personality, focus areas, priorities, rules, response
format, conclusion line, language) so diffs of composed prompts stay readable. A section whose
field is empty is left out entirely: no heading, no blank line.
"""

from __future__ import annotations

import re

from .errors import InvalidPersona, Problem
from .model import Persona

# `{name}` is a placeholder; `{{name}}` is a literal `{name}`. Anything else in braces (JSON
# examples, `{ }`) is left alone, so response formats can show structured output.
_PLACEHOLDER_RE = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")

TEMPLATED_FIELDS = (
    "role_description",
    "personality",
    "focus_areas",
    "decision_priority",
    "response_format",
    "conclusion_label",
    "special_rules",
    "greeting",
)


def format_parameter(value: int | float | str) -> str:
    """Render a parameter as a rule would cite it: 15, 0.5, 15 (for 15.0), or the text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def placeholder_names(text: str) -> list[str]:
    """The `{name}` placeholders cited in `text`, in order (escaped `{{name}}` excluded)."""
    return [m.group(2) for m in _PLACEHOLDER_RE.finditer(text) if m.group(2)]


def fill_placeholders(text: str, parameters: dict[str, int | float | str]) -> str:
    """Replace `{name}` with its parameter; raise KeyError for a name not in `parameters`."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "{" + match.group(1) + "}"
        return format_parameter(parameters[match.group(2)])

    return _PLACEHOLDER_RE.sub(replace, text)


def unknown_placeholders(persona: Persona) -> list[tuple[tuple[str | int, ...], str]]:
    """Every `{name}` a templated field cites that `parameters` lacks, as (location, name)."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    for field in TEMPLATED_FIELDS:
        value = getattr(persona, field)
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for index, text in items:
            loc: tuple[str | int, ...] = (field,) if index is None else (field, index)
            found.extend((loc, name) for name in placeholder_names(text))
    return [(loc, name) for loc, name in found if name not in persona.parameters]


def unknown_placeholder_problem(name: str, persona: Persona) -> str:
    known = ", ".join(sorted(persona.parameters)) or "none defined"
    return (
        f"unknown placeholder {{{name}}} — add `{name}: <value>` under parameters "
        f"(known: {known}), or write {{{{{name}}}}} for a literal {{{name}}}"
    )


def _render(persona: Persona, text: str) -> str:
    try:
        text = fill_placeholders(text, persona.parameters)
    except KeyError as exc:  # only reachable for a Persona built without the loader's checks
        name = exc.args[0]
        problem = Problem("parameters", unknown_placeholder_problem(name, persona))
        raise InvalidPersona([problem]) from exc
    # Tidy author whitespace: no trailing spaces, at most one blank line inside a block.
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def render_greeting(persona: Persona, language: str | None = None) -> str:
    """The greeting a page in `language` shows (its `i18n` entry's, else the persona's own),
    placeholders filled; '' when the persona has none."""
    return _render(persona, persona.shown("greeting", language))


def build_system_prompt(persona: Persona, *, own_language: bool = True) -> str:
    """Compose the persona's fields into one system prompt, in a stable section order.
    `own_language=False` leaves out its reply language (a roundtable says which to use)."""
    sections = [f"Persona: {persona.display_name}\n{_render(persona, persona.role_description)}"]

    if persona.personality:
        sections.append("Personality: " + _render(persona, persona.personality))
    if persona.focus_areas:
        sections.append(
            "Focus areas:\n" + "\n".join(f"- {_render(persona, a)}" for a in persona.focus_areas)
        )
    if persona.decision_priority:
        sections.append(
            "Decision priorities, highest first:\n"
            + "\n".join(
                f"{n}. {_render(persona, p)}" for n, p in enumerate(persona.decision_priority, 1)
            )
        )
    if persona.special_rules:
        sections.append(
            "Rules you must follow:\n"
            + "\n".join(f"- {_render(persona, r)}" for r in persona.special_rules)
        )
    closing: list[str] = []
    if persona.response_format:
        closing.append("Response format:\n" + _render(persona, persona.response_format))
    if persona.conclusion_label:
        label = _render(persona, persona.conclusion_label)
        closing.append(
            f'End every answer with one line that starts with "{label}:" and states '
            "your conclusion in one sentence."
        )
    if closing:
        sections.append("\n".join(closing))
    if persona.language and own_language:
        sections.append(
            f"Always reply in {persona.language}, whatever language the user writes in, "
            "unless the user explicitly asks for another language."
        )
    return "\n\n".join(sections)
