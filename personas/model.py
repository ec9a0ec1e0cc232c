"""The typed persona model. YAML documents are validated into `Persona` (see loader.py)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

ID_RE = re.compile(r"[a-z0-9_-]{1,40}")
PARAMETER_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
DEFAULT_PERSONA_ID = "assistant"

MAX_LIST_ITEMS = 30
MAX_PARAMETERS = 30


def _check_parameter_value(value: Any) -> Any:
    # YAML 1.1 reads yes/no/on/off as booleans; a rule citing them would read "True", so refuse.
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("must be a number or a text, e.g. `veto_threshold_pct: 15`")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    if isinstance(value, str) and len(value) > 200:
        raise ValueError("text parameters are limited to 200 characters — shorten it")
    return value


def _check_single_line(value: str) -> str:
    if "\n" in value:
        raise ValueError("must fit on one line — remove the line break")
    return value


def _check_parameter_name(name: str) -> str:
    if not PARAMETER_NAME_RE.fullmatch(name):
        raise ValueError(
            "parameter names are letters, digits and '_' (not starting with a digit), "
            "at most 40 characters, e.g. `veto_threshold_pct`"
        )
    return name


Line = Annotated[str, StringConstraints(max_length=80), AfterValidator(_check_single_line)]
ListItem = Annotated[str, StringConstraints(min_length=1, max_length=600)]
ParameterName = Annotated[str, AfterValidator(_check_parameter_name)]
ParameterValue = Annotated[Any, BeforeValidator(_check_parameter_value)]

REQUIRED_FIELDS = ("id", "display_name", "role_description")

# The languages the app's pages are shown in: an `i18n` entry is keyed by one of them.
SHOWN_LANGUAGES = ("en", "zh-TW")
ShownLanguage = Literal["en", "zh-TW"]


class LocalizedPersona(BaseModel):
    """What a page in another language shows for a persona instead of its own fields: its
    name, picker line and greeting, never sent to the model (the prompt is the persona's); and
    the label its veto line starts with when a roundtable turn is in that language."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, str_strip_whitespace=True)

    display_name: str = Field("", max_length=60, description="The name in that language.")
    description: str = Field("", max_length=300, description="The picker's line in it.")
    greeting: str = Field("", max_length=1000, description="The greeting in it.")
    veto_label: Line = Field(
        "",
        description="The label its roundtable veto line starts with in that language, e.g. "
        "財務否決 (instead of the parameter the roundtable's veto names).",
    )


LOCALIZED_FIELDS: tuple[str, ...] = tuple(LocalizedPersona.model_fields)


class Persona(BaseModel):
    """A persona: who the assistant is, what it weighs, how it answers.

    Text fields may cite `{name}` placeholders filled from `parameters` when composed;
    `{{name}}` writes a literal `{name}`.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, str_strip_whitespace=True)

    id: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_-]{1,40}$")] = Field(
        description="File and URL-safe id: 1-40 of a-z, 0-9, '_' and '-'."
    )
    display_name: str = Field(
        min_length=1, max_length=60, description="Name shown in the picker and the prompt."
    )
    avatar: str = Field("", max_length=32, description="An emoji shown next to replies.")
    description: str = Field(
        "", max_length=300, description="One line for the picker; not in the prompt."
    )
    role_description: str = Field(
        min_length=1, max_length=4000, description="Who the persona is and what it does."
    )
    language: Line = Field("", description="Language of every reply, e.g. English or 繁體中文.")
    personality: str = Field("", max_length=2000, description="Tone and manner.")
    focus_areas: list[ListItem] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS, description="What it pays attention to."
    )
    decision_priority: list[ListItem] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS, description="What wins, highest first."
    )
    response_format: str = Field("", max_length=2000, description="How answers are laid out.")
    conclusion_label: Line = Field(
        "", description="Label of the closing line, e.g. 'Finance verdict'."
    )
    special_rules: list[ListItem] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS, description="Rules it must follow."
    )
    greeting: str = Field("", max_length=1000, description="First message of a new chat.")
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = Field(
        None, description="Sampling temperature 0-2; empty uses the model default."
    )
    parameters: dict[ParameterName, ParameterValue] = Field(
        default_factory=dict,
        max_length=MAX_PARAMETERS,
        description="Numbers or texts that rules cite as {name}.",
    )
    i18n: dict[ShownLanguage, LocalizedPersona] = Field(
        default_factory=dict,
        description="display_name, description and greeting as a page in that language shows "
        "them, e.g. `zh-TW: {display_name: 業務總監}`; the prompt keeps the fields above.",
    )

    def shown(self, field: str, language: str | None) -> str:
        """`field` (display_name, description or greeting) as a page in `language` shows it:
        the `i18n` entry's text when there is one, else the persona's own."""
        entry = self.i18n.get(language)  # type: ignore[call-overload]
        localized = getattr(entry, field, "") if entry is not None else ""
        return localized or getattr(self, field)

    @model_validator(mode="before")
    @classmethod
    def _empty_means_default(cls, data: Any) -> Any:
        # `personality:` with nothing after it is YAML null; treat it as "not set" rather than
        # a type error, but keep required fields so their message says what is missing.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (v is None and k not in REQUIRED_FIELDS)}
        return data


FIELD_NAMES: tuple[str, ...] = tuple(Persona.model_fields)
