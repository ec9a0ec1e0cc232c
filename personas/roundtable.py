"""Roundtables: several personas answer one question in order, then a chair concludes.

A roundtable is a YAML document validated like a persona (located errors, every problem at
once) into `Roundtable`: its members in speaking order, the chair, how many rounds, rules every
speaker is given, an optional veto rule and the business-metrics table the veto is decided from
(personas/veto.py). Built-ins ship in personas/roundtables/*.yaml; an owner's edits are saved as
versions by `RoundtableRegistry`, the persona registry's storage under `data_dir/roundtables/`,
with the same hot reload and rollback.

Which persona ids exist is the registry's business, not the document's: `missing_members()`
checks a roundtable against the personas an owner has, when it is used.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from pydantic import model_validator as _model_validator

from .errors import InvalidPersona, Problem
from .loader import _at, _duplicate_keys, _field_label, _find_node, _read_mapping, _schema_message
from .model import Line, ListItem, ShownLanguage
from .registry import PersonaRegistry
from .storage import VersionStore

ROUNDTABLE_DIR = Path(__file__).resolve().parent / "roundtables"
DEFAULT_ROUNDTABLE_ID = "erp_board"
MAX_MEMBERS = 8
MAX_ROUNDS = 3
MAX_METRICS = 200

PersonaId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_-]{1,40}$")]
ParameterRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")]


class InvalidRoundtable(InvalidPersona):
    """A roundtable document failed to parse or validate; `.problems` lists every reason."""

    def __init__(self, details: list[Problem]):
        super().__init__(details)
        count = len(self.problems)
        head = (
            "Roundtable YAML has 1 problem"
            if count == 1
            else (f"Roundtable YAML has {count} problems")
        )
        self.args = (head + ":\n" + "\n".join(f"- {p}" for p in self.problems),)


class MetricEntry(BaseModel):
    """One row of the business-metrics table: a brand or customer and its gross margin."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, str_strip_whitespace=True)

    name: Line = Field(min_length=1, description="As people write it in a question, e.g. Nike.")
    aliases: list[Annotated[Line, StringConstraints(min_length=1)]] = Field(
        default_factory=list, max_length=10, description="Other names, e.g. 耐吉."
    )
    gross_margin_pct: Annotated[float, Field(ge=-100.0, le=100.0)] = Field(
        description="Gross margin in percent, e.g. 12.5."
    )

    @_model_validator(mode="before")
    @classmethod
    def _ints_are_numbers(cls, data: Any) -> Any:
        # Strict mode refuses an int for a float; `gross_margin_pct: 12` is what people write.
        if isinstance(data, dict):
            value = data.get("gross_margin_pct")
            if isinstance(value, int) and not isinstance(value, bool):
                return {**data, "gross_margin_pct": float(value)}
        return data

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


class VetoRule(BaseModel):
    """Who may veto, and which of that persona's parameters give the threshold and the label."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, str_strip_whitespace=True)

    member: PersonaId = Field(description="The member who vetoes, e.g. finance.")
    threshold_parameter: ParameterRef = Field(
        "veto_threshold_pct", description="Its parameter holding the minimum margin in %."
    )
    label_parameter: ParameterRef = Field(
        "veto_label", description="Its parameter holding the label its veto line starts with."
    )


class LocalizedRoundtable(BaseModel):
    """What a page in another language shows for a roundtable: its name and picker line."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, str_strip_whitespace=True)

    display_name: str = Field("", max_length=60, description="The name in that language.")
    description: str = Field("", max_length=300, description="The picker's line in it.")


class Roundtable(BaseModel):
    """A board of personas answering one question in order; the chair concludes."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, str_strip_whitespace=True)

    id: PersonaId = Field(description="File and URL-safe id: 1-40 of a-z, 0-9, '_' and '-'.")
    display_name: str = Field(min_length=1, max_length=60, description="Shown in the picker.")
    description: str = Field("", max_length=300, description="One line for the picker.")
    members: list[PersonaId] = Field(
        min_length=1, max_length=MAX_MEMBERS, description="Persona ids in speaking order."
    )
    chair: PersonaId = Field(description="The persona who speaks last and concludes.")
    rounds: Annotated[int, Field(ge=1, le=MAX_ROUNDS)] = Field(
        1, description="How many times the members speak before the chair."
    )
    rules: list[ListItem] = Field(
        default_factory=list, max_length=30, description="Rules every speaker is given."
    )
    veto: VetoRule | None = Field(None, description="Who vetoes from the metrics table.")
    metrics: list[MetricEntry] = Field(
        default_factory=list, max_length=MAX_METRICS, description="Brands or customers."
    )
    i18n: dict[ShownLanguage, LocalizedRoundtable] = Field(
        default_factory=dict,
        description="display_name and description as a page in that language shows them.",
    )

    def shown(self, field: str, language: str | None) -> str:
        """`field` (display_name or description) as a page in `language` shows it."""
        entry = self.i18n.get(language)  # type: ignore[call-overload]
        localized = getattr(entry, field, "") if entry is not None else ""
        return localized or getattr(self, field)

    @_model_validator(mode="after")
    def _consistent(self) -> Roundtable:
        if len(set(self.members)) != len(self.members):
            raise ValueError("members: each persona speaks once per round — remove the repeat")
        if self.chair in self.members:
            raise ValueError(
                f"chair: {self.chair!r} is also a member — the chair speaks last on its own; "
                "remove it from members"
            )
        if self.veto is not None and self.veto.member not in self.members:
            raise ValueError(
                f"veto.member: {self.veto.member!r} is not a member — add it to members "
                "or name a member"
            )
        if self.veto is not None and not self.metrics:
            raise ValueError(
                "metrics: a veto is decided from the metrics table — add rows such as "
                "`- {name: Nike, gross_margin_pct: 12}`, or remove `veto`"
            )
        return self

    @property
    def speakers(self) -> list[str]:
        """Every persona id in the order they speak, the chair last."""
        return [*self.members * self.rounds, self.chair]

    def metric(self, name: str) -> MetricEntry | None:
        return next((m for m in self.metrics if name in m.names), None)


ROUNDTABLE_FIELDS: tuple[str, ...] = tuple(Roundtable.model_fields)

_REQUIRED_HINTS = {
    "id": "add `id: my_board` (1-40 of a-z, 0-9, '_' or '-')",
    "display_name": "add `display_name: ...`, the name shown in the picker",
    "members": "add `members:` with the persona ids in speaking order, one `- id` per line",
    "chair": "add `chair: general_manager`, the persona who concludes",
    "name": "add `name: ...`, the brand or customer as a question names it",
    "gross_margin_pct": "add `gross_margin_pct: 12.5`",
    "member": "add `member: finance`, the member who vetoes",
}


def _message(err: Any) -> str:
    loc = tuple(err["loc"])
    if err["type"] == "missing" and loc:
        return "required — " + _REQUIRED_HINTS.get(str(loc[-1]), "add it")
    if err["type"] in ("greater_than_equal", "less_than_equal") and "rounds" in loc:
        return f"is {err.get('input')}; use 1 to {MAX_ROUNDS} rounds"
    if err["type"] in ("greater_than_equal", "less_than_equal"):
        return f"is {err.get('input')}; a margin is between -100 and 100 (%)"
    if err["type"] == "too_short" and "members" in loc:
        return "needs at least one member — list persona ids, one `- id` per line"
    if err["type"] == "int_type" and "rounds" in loc:
        return f"expected a whole number of rounds (1 to {MAX_ROUNDS}), got {err.get('input')!r}"
    if err["type"] == "extra_forbidden" and len(loc) == 3 and loc[0] == "i18n":
        fields = ", ".join(LocalizedRoundtable.model_fields)
        return f"unknown field — a roundtable's {loc[1]} entry has {fields}; rename or remove it"
    if err["type"] == "float_type":
        return f"expected a number such as 12.5, got {err.get('input')!r} — write it without quotes"
    return _schema_message(err, ROUNDTABLE_FIELDS)


def load_roundtable_text(yaml_text: str | bytes) -> Roundtable:
    """Parse and validate one roundtable document; raise InvalidRoundtable listing every
    problem, each located (line, column) when the YAML node is known."""
    try:
        root, data = _read_mapping(yaml_text)
    except InvalidPersona as exc:
        raise InvalidRoundtable(exc.details) from exc
    problems = _duplicate_keys(root)
    roundtable: Roundtable | None = None
    try:
        roundtable = Roundtable.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            if err["type"] == "value_error" and not loc:
                # A cross-field check: its message starts with the field it is about.
                field, _, text = str(err["msg"]).removeprefix("Value error, ").partition(": ")
                first = field.split(".")[0]
                node = _find_node(root, (first,), want_key=True)
                problems.append(Problem(field, text, **_at(node)))
                continue
            want_key = err["type"] == "extra_forbidden"
            node = _find_node(root, loc, want_key=want_key)
            problems.append(Problem(_field_label(loc), _message(err), **_at(node)))
    if problems or roundtable is None:
        raise InvalidRoundtable(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    return roundtable


def missing_members(roundtable: Roundtable, persona_ids: Iterable[str]) -> list[str]:
    """The speakers of `roundtable` that are not among `persona_ids`, in speaking order."""
    known = set(persona_ids)
    return [p for p in dict.fromkeys([*roundtable.members, roundtable.chair]) if p not in known]


class RoundtableRegistry(PersonaRegistry):
    """Built-in roundtables plus each owner's saved versions (`.persona` holds the Roundtable),
    stored under `data_dir/roundtables/` exactly as personas are."""

    folder = "roundtables"
    default_id = DEFAULT_ROUNDTABLE_ID

    @staticmethod
    def load_text(text: str | bytes) -> Roundtable:  # type: ignore[override]
        return load_roundtable_text(text)

    def __init__(
        self, builtin_dir: Any = None, *, data_dir: Any, versions: VersionStore | None = None
    ) -> None:
        # `versions`: a VersionStore of the roundtables' own (PostgresVersions with
        # namespace=RoundtableRegistry.folder); None keeps them under data_dir/roundtables/.
        super().__init__(
            builtin_dir if builtin_dir is not None else ROUNDTABLE_DIR,
            data_dir=data_dir,
            versions=versions,
        )
