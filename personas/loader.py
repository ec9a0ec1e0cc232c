"""Read and write persona YAML documents.

Parsing is `yaml.SafeLoader` plus four refusals: documents over 64 KB, YAML aliases (`*name`,
which also rules out `<<: *base` merges), nesting deeper than 10 levels, and duplicate keys.
Aliases are refused outright rather than counted: a persona is a short hand-written file that
never needs them, refusing them makes alias bombs ("billion laughs") impossible whatever the
limits, and it keeps every value at a single place in the text so each error can name its line
and column.

Every problem is collected (YAML syntax, schema, placeholders) and raised together as one
`InvalidPersona`, each formatted `line L, column C: field: message`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .compose import TEMPLATED_FIELDS, placeholder_names, unknown_placeholder_problem
from .errors import InvalidPersona, Problem
from .model import FIELD_NAMES, LOCALIZED_FIELDS, REQUIRED_FIELDS, SHOWN_LANGUAGES, Persona

MAX_DOCUMENT_BYTES = 64 * 1024
MAX_NESTING = 10  # a persona needs 2 levels (parameters, lists); the rest is a mistake or abuse


class _AliasRefused(yaml.MarkedYAMLError):
    pass


class _TooDeep(yaml.MarkedYAMLError):
    pass


class _PersonaLoader(yaml.SafeLoader):
    """SafeLoader that stops at the first alias, before anything could expand, and at
    nesting deeper than MAX_NESTING, long before the recursive composer hits Python's limit."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _AliasRefused(problem=f"alias *{event.anchor}", problem_mark=event.start_mark)
        if self._depth >= MAX_NESTING:
            raise _TooDeep(problem="nested too deeply", problem_mark=self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _at(node: Node | None) -> dict[str, int]:
    if node is None:
        return {}
    return {"line": node.start_mark.line + 1, "column": node.start_mark.column + 1}


_SYNTAX_HINTS = {
    "mapping values are not allowed": "a value containing ': ' must be in quotes, "
    "or this line is indented differently from its neighbours",
    "found character '\\t'": "indent with spaces, not tabs",
    "could not find expected ':'": "each line of a mapping needs `key: value`",
    "did not find expected key": "check the indentation: keys of one mapping line up",
    "did not find expected '-'": "list items line up under each other, each starting with '- '",
    "found unexpected end of stream": "a quote or bracket is not closed",
    "but got '<stream end>'": "a quote or bracket is not closed",
    "expected a single document": "keep one persona per file: remove the `---` separator",
    "could not determine a constructor": "tags such as !!python/... are not allowed",
    "found undefined tag handle": "tags are not allowed in persona files",
}


def _syntax_problem(exc: yaml.YAMLError, text: str) -> Problem:
    if isinstance(exc, _AliasRefused):
        mark = exc.problem_mark
        return Problem(
            "yaml",
            f"{exc.problem} — aliases and merge keys are not allowed in persona files; "
            "write the value out in full",
            mark.line + 1,
            mark.column + 1,
        )
    if isinstance(exc, _TooDeep):
        mark = exc.problem_mark
        return Problem(
            "yaml",
            f"nested more than {MAX_NESTING} levels deep — a persona needs at most two "
            "(a list or `parameters` inside the top-level mapping)",
            mark.line + 1,
            mark.column + 1,
        )
    if isinstance(exc, yaml.reader.ReaderError):
        pos = exc.position
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return Problem(
            "yaml",
            f"unreadable character {char!r} — remove it or retype the text",
            line,
            column,
        )
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        both = f"{exc.context or ''} {exc.problem or ''}"
        hint = next((h for key, h in _SYNTAX_HINTS.items() if key in both), None)
        if hint is None:
            hint = "fix the YAML at this position"
        where = {"line": mark.line + 1, "column": mark.column + 1} if mark else {}
        return Problem("yaml", f"{problem} — {hint}", **where)
    return Problem("yaml", f"{exc} — fix the YAML")


def _parse(text: str) -> tuple[Node | None, Any]:
    loader = _PersonaLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        return node, data
    finally:
        loader.dispose()


def _duplicate_keys(root: Node) -> list[Problem]:
    problems: list[Problem] = []
    stack = [(root, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, MappingNode):
            seen: dict[str, Node] = {}
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else "?"
                field = f"{path}.{name}" if path else name
                if name in seen:
                    first = seen[name].start_mark.line + 1
                    problems.append(
                        Problem(
                            field,
                            f"duplicate key (first set on line {first}) — keep only one",
                            **_at(key),
                        )
                    )
                seen[name] = key
                stack.append((value, field))
        elif isinstance(node, SequenceNode):
            stack.extend((item, path) for item in node.value)
    return problems


def _find_node(root: Node, loc: tuple[Any, ...], want_key: bool) -> Node | None:
    node: Node | None = root
    key_node: Node | None = None
    for part in loc:
        if part == "[key]":
            return key_node
        if isinstance(node, MappingNode):
            # The last duplicate wins in the constructed dict, so search from the end.
            match = next(
                ((k, v) for k, v in reversed(node.value) if getattr(k, "value", None) == str(part)),
                None,
            )
            if match is None:
                return None
            key_node, node = match
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            key_node, node = None, node.value[part]
        else:
            return None
    return key_node if want_key else node


def _field_label(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int) and parts and parts[0] != "parameters":
            parts.append(f"item {part + 1}")
        else:
            parts.append(str(part))
    label = parts[0] if parts else "document"
    for part in parts[1:]:
        label += f" {part}" if part.startswith("item ") else f".{part}"
    return label


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()} (YAML reads yes/no/on/off/true/false as true or false)"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "a text"
    return f"a {type(value).__name__} value"


_REQUIRED_HINTS = {
    "id": "add `id: my_persona` (1-40 of a-z, 0-9, '_' or '-')",
    "display_name": "add `display_name: ...`, the name shown in the picker",
    "role_description": "add `role_description: ...` saying who the persona is and what it does",
}


_EMPTY_HINTS = {
    "id": "write an id such as `my_persona` (1-40 of a-z, 0-9, '_' or '-')",
    "display_name": "write the name shown in the picker",
    "role_description": "say who the persona is and what it does",
}


def _empty_message(loc: tuple[Any, ...]) -> str:
    field = str(loc[-1]) if loc else ""
    if isinstance(loc[-1], int):
        return "must not be empty — write the item or remove its line"
    return "must not be empty — " + _EMPTY_HINTS.get(field, "write a value or remove the line")


def _schema_message(err: Mapping[str, Any], field_names: tuple[str, ...] = FIELD_NAMES) -> str:
    kind = err["type"]
    loc = err["loc"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "missing":
        return "required — " + _REQUIRED_HINTS.get(str(loc[-1]), "add it")
    if loc and loc[0] == "i18n":
        localized = _localized_message(kind, loc, value)
        if localized:
            return localized
        field_names = (
            LOCALIZED_FIELDS if len(loc) == 3 and kind == "extra_forbidden" else field_names
        )
    if kind == "extra_forbidden":
        name = str(loc[-1])
        close = difflib.get_close_matches(name, field_names, n=1)
        if close:
            return f"unknown field — did you mean `{close[0]}`? Rename or remove it"
        return "unknown field — remove it; the fields are: " + ", ".join(field_names)
    if kind == "invalid_key":
        return (
            f"{_describe(value)} is not a field name — use one of the persona fields or remove it"
        )
    if kind == "string_type" and loc and loc[-1] == "[key]":
        return (
            f"parameter names are text such as `veto_threshold_pct`, got {_describe(value)} "
            "— rename it"
        )
    if kind == "string_type" and value is None:
        return _empty_message(loc)
    if kind == "string_type":
        if isinstance(value, list | dict):
            return (
                f"expected a text, got {_describe(value)} — write a single text "
                "(use `|` for several lines)"
            )
        return f"expected a text, got {_describe(value)} — put the value in quotes"
    if kind == "string_too_short":
        return _empty_message(loc)
    if kind == "string_too_long":
        return f"is {len(value)} characters; the limit is {ctx.get('max_length')} — shorten it"
    if kind == "string_pattern_mismatch":
        return (
            f"{value!r} is not a valid id — use 1-40 characters of a-z, 0-9, '_' or '-', "
            "e.g. `sales_lead`"
        )
    if kind == "list_type":
        return (
            f"expected a list, got {_describe(value)} — write each item on its own line "
            "starting with '- '"
        )
    if kind == "dict_type":
        return (
            f"expected a mapping, got {_describe(value)} — write `name: value` lines, "
            "e.g. `veto_threshold_pct: 15`"
        )
    if kind == "too_long":
        return (
            f"has {ctx.get('actual_length')} entries; the limit is {ctx.get('max_length')} "
            "— merge or remove some"
        )
    if kind in ("float_type", "float_parsing", "int_type"):
        return f"expected a number such as 0.7, got {_describe(value)} — write it without quotes"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"is {value}; it must be between 0 and 2"
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    return str(err["msg"])


_I18N_EXAMPLE = "e.g. `zh-TW: {display_name: 業務總監}`"


def _localized_message(kind: str, loc: tuple[Any, ...], value: Any) -> str | None:
    """What is wrong inside `i18n` (a language tag, an entry that is not a mapping), or None
    for a problem the general messages already word well (a text too long, an unknown field)."""
    if kind == "literal_error":
        tags = " or ".join(SHOWN_LANGUAGES)
        return f"{value!r} is not a language the app is shown in — use {tags}, {_I18N_EXAMPLE}"
    if kind == "dict_type" and len(loc) == 1:
        return (
            f"expected a mapping of languages, got {_describe(value)} — write one language per "
            f"line, {_I18N_EXAMPLE}"
        )
    if kind in ("model_type", "dict_type") and len(loc) == 2:
        return (
            f"expected the fields shown in {loc[1]}, got {_describe(value)} — write "
            f"`display_name: ...` (and `description: ...`) under it, {_I18N_EXAMPLE}"
        )
    return None


def _templated_texts(data: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """Every text a placeholder may be cited in, by location: the templated fields, items of
    list fields, and the greetings of the `i18n` entries."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    for field in TEMPLATED_FIELDS:
        value = data.get(field)
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        found.extend(
            (((field,) if index is None else (field, index)), text) for index, text in items
        )
    entries = data.get("i18n")
    if isinstance(entries, Mapping):
        for tag, entry in entries.items():
            if isinstance(entry, Mapping):
                found.append((("i18n", tag, "greeting"), entry.get("greeting")))
    return found


def _placeholder_problems(data: Mapping[str, Any], root: Node) -> list[Problem]:
    parameters = data.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        return []  # already reported as a type error; nothing to check names against
    known = {str(k) for k in parameters}
    stand_in = Persona.model_construct(parameters={k: 0 for k in known})
    problems: list[Problem] = []
    for loc, text in _templated_texts(data):
        if not isinstance(text, str):
            continue
        for name in placeholder_names(text):
            if name not in known:
                problems.append(
                    Problem(
                        _field_label(loc),
                        unknown_placeholder_problem(name, stand_in),
                        **_at(_find_node(root, loc, want_key=False)),
                    )
                )
    return problems


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))


def _read_mapping(yaml_text: str | bytes) -> tuple[Node, dict[Any, Any]]:
    """Parse a document into its node tree and mapping, refusing what is not a readable mapping."""
    if isinstance(yaml_text, bytes):
        try:
            yaml_text = yaml_text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidPersona(
                [Problem("document", "is not UTF-8 text — save the file as UTF-8")]
            ) from exc
    size = len(yaml_text.encode("utf-8"))
    if size > MAX_DOCUMENT_BYTES:
        raise InvalidPersona(
            [
                Problem(
                    "document",
                    f"is {size / 1024:.0f} KB; the limit is {MAX_DOCUMENT_BYTES // 1024} KB "
                    "— shorten it",
                )
            ]
        )
    try:
        root, data = _parse(yaml_text)
    except yaml.YAMLError as exc:
        raise InvalidPersona([_syntax_problem(exc, yaml_text)]) from exc
    except RecursionError as exc:
        raise InvalidPersona(
            [Problem("yaml", f"nested more than {MAX_NESTING} levels deep — flatten it")]
        ) from exc

    if root is None or data is None:
        raise InvalidPersona(
            [
                Problem(
                    "document",
                    "is empty — start with `id:`, `display_name:` and `role_description:`",
                )
            ]
        )
    if not isinstance(data, dict):
        raise InvalidPersona(
            [
                Problem(
                    "document",
                    f"expected a mapping of `field: value` lines at the top, got "
                    f"{_describe(data)} — start with `id: my_persona`",
                    **_at(root),
                )
            ]
        )
    return root, data


def load_persona_text(yaml_text: str | bytes) -> Persona:
    """Parse and validate one persona YAML document; raise InvalidPersona listing every problem."""
    root, data = _read_mapping(yaml_text)
    problems = _duplicate_keys(root)
    persona: Persona | None = None
    try:
        persona = Persona.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            want_key = err["type"] in ("extra_forbidden", "invalid_key") or (
                loc and loc[-1] == "[key]"
            )
            node = _find_node(root, loc, want_key=bool(want_key))  # None for a missing field
            problems.append(Problem(_field_label(loc), _schema_message(err), **_at(node)))
    problems.extend(_placeholder_problems(data, root))
    if problems or persona is None:
        raise InvalidPersona(_sorted(problems))
    return persona


def validate_yaml(yaml_text: str) -> list[str]:
    """Every problem with a persona document, as display lines; [] when it is valid."""
    try:
        load_persona_text(yaml_text)
    except InvalidPersona as exc:
        return exc.problems
    return []


class _Dumper(yaml.SafeDumper):
    """Dumps the way the built-in files are written: list items indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class _Block(str):
    """A top-level text written as a block: `|` keeps its line breaks, `>` folds a long line."""


def _represent_block(dumper: yaml.SafeDumper, value: _Block) -> yaml.ScalarNode:
    style = "|" if "\n" in value.rstrip("\n") else ">"
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=style)


_Dumper.add_representer(_Block, _represent_block)
_FOLD_AT = 90  # characters; a longer top-level text is folded, as in the built-in files


def persona_to_yaml(persona: Persona) -> str:
    """The persona as a YAML document in field order, leaving out empty optional fields."""
    data = persona.model_dump()
    # An `i18n` entry keeps only the texts it gives.
    data["i18n"] = {
        tag: {k: v for k, v in entry.items() if v} for tag, entry in data["i18n"].items()
    }
    return dump_persona_mapping(
        {
            key: value
            for key, value in data.items()
            if key in REQUIRED_FIELDS or value not in ("", [], {}, None)
        }
    )


def dump_persona_mapping(data: Mapping[Any, Any]) -> str:
    """A persona-shaped mapping as YAML written like the built-in files, keys in the order given:
    a multi-line text as a `|` block, a long one folded (`>`), list items indented."""
    shaped = {
        key: _Block(value)
        if isinstance(value, str) and ("\n" in value.rstrip("\n") or len(value) > _FOLD_AT)
        else value
        for key, value in data.items()
    }
    return yaml.dump(shaped, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=92)
