"""The roundtable's veto, decided by code from the metrics table — never left to a model.

Before the vetoing member speaks, `check_veto()` looks for entries of the roundtable's metrics
table that the question names (whole words for Latin names, so "Nikes" is not "Nike"; plain
containment for CJK names, which have no spaces) and compares their gross margin with the
member's threshold parameter, read from the persona as the owner has it now — so a threshold
edited in the persona editor applies from the next message. A margin exactly at the threshold
passes ("below" is strict), as the finance persona's rule says.

The label the vetoing member's last line starts with is in the turn's language: Chinese when
the question is written in it or the asker's page is in 繁體中文 (the persona's `i18n` entry's
`veto_label`); otherwise, or when the persona gives none, the label parameter the rule names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .compose import format_parameter
from .model import Persona
from .roundtable import MetricEntry, Roundtable

DEFAULT_VETO_LABEL = "VETO"
CHINESE = "zh-TW"
# When the persona holds no label at all.
DEFAULT_VETO_LABELS = {CHINESE: "否決"}


class VetoConfigError(ValueError):
    """The vetoing persona lacks a usable threshold parameter; the message says what to add."""


@dataclass(frozen=True)
class VetoDecision:
    """The outcome of the check for one question (`vetoed` False: nothing named is below)."""

    member: str  # persona id of the member holding the veto
    threshold_pct: float
    label: str  # what the vetoing member's last line starts with
    named: tuple[MetricEntry, ...]  # entries the question names, table order
    below: tuple[MetricEntry, ...]  # of those, the ones under the threshold

    @property
    def vetoed(self) -> bool:
        return bool(self.below)

    def reason(self, language: str | None = None) -> str:
        """One line naming each entry under the threshold, e.g. 'Nike: 12% < 15%'; for a
        Chinese reader (`language` "zh-TW") by its first Chinese name when it has one
        ('耐吉: 12% < 15%')."""
        threshold = format_parameter(self.threshold_pct)
        return "; ".join(
            f"{_name_for(m, language)}: {format_parameter(m.gross_margin_pct)}% < {threshold}%"
            for m in self.below
        )


def _name_for(entry: MetricEntry, language: str | None) -> str:
    if language == CHINESE:
        return next((n for n in entry.names if _has_han(n)), entry.name)
    return entry.name


def _is_latin(name: str) -> bool:
    return all(ord(ch) < 0x2E80 for ch in name)


def names_in(question: str, entry: MetricEntry) -> bool:
    """Whether the question names the entry (by name or alias, case-insensitive)."""
    folded = question.casefold()
    for name in entry.names:
        key = name.casefold()
        if _is_latin(key):
            if re.search(r"(?<![\w])" + re.escape(key) + r"(?![\w])", folded):
                return True
        elif key in folded:
            return True
    return False


def _has_han(text: str) -> bool:
    # CJK Unified Ideographs and Extension A: what a question in 繁體中文 is written in.
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text)


def turn_language(question: str, language: str | None = None) -> str | None:
    """The language a roundtable turn's veto label is in: Chinese when the question is
    written in it or the page (`language`) is, else `language` (None: the persona's own)."""
    return CHINESE if language == CHINESE or _has_han(question) else language


def label_of(persona: Persona, parameter: str, language: str | None = None) -> str:
    """The label the persona's veto line starts with in `language`: its `i18n` entry's
    `veto_label`, else the `parameter` it holds as written, else the default label."""
    entry = persona.i18n.get(language)  # type: ignore[call-overload]
    if entry is not None and entry.veto_label:
        return entry.veto_label
    own = str(persona.parameters.get(parameter) or "").strip()
    return own or DEFAULT_VETO_LABELS.get(language or "", DEFAULT_VETO_LABEL)


def threshold_of(persona: Persona, parameter: str) -> float:
    """The persona's threshold in %, or VetoConfigError saying what to add."""
    value = persona.parameters.get(parameter)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VetoConfigError(
            f"Persona {persona.id!r} holds the roundtable's veto but has no number "
            f"`{parameter}` under parameters — add e.g. `{parameter}: 15` in the persona editor."
        )
    return float(value)


def check_veto(
    question: str, roundtable: Roundtable, vetoer: Persona, language: str | None = None
) -> VetoDecision | None:
    """The veto decision for `question` asked from a page in `language` (None: the question
    alone decides the label's language), or None when the roundtable has no veto rule."""
    rule = roundtable.veto
    if rule is None:
        return None
    threshold = threshold_of(vetoer, rule.threshold_parameter)
    label = label_of(vetoer, rule.label_parameter, turn_language(question, language))
    named = tuple(m for m in roundtable.metrics if names_in(question, m))
    return VetoDecision(
        member=rule.member,
        threshold_pct=threshold,
        label=label,
        named=named,
        below=tuple(m for m in named if m.gross_margin_pct < threshold),
    )
