"""Display texts in the page's language: a persona's or roundtable's `i18n` entries, carried by
the records the UI shows (`PersonaInfo`, `RoundtableInfo`, a roundtable's `Speaker`).

The UI knows the page's language and asks `record.shown("display_name", "zh-TW")`; the assistant
never guesses it. What the model receives keeps the YAML's own fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def localized_texts(document: Any, fields: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """A persona's or roundtable's `i18n` texts by language, only those it gives."""
    return {
        language: {f: getattr(entry, f) for f in fields if getattr(entry, f, "")}
        for language, entry in document.i18n.items()
    }


@dataclass(frozen=True)
class Shown:
    """A record whose display texts a page in another language may show translated."""

    # By language ("zh-TW"): display_name, description, greeting — those the YAML gives.
    localized: dict[str, dict[str, str]]

    def shown(self, field: str, language: str | None) -> str:
        """`field` as a page in `language` shows it: its translation, else the record's own."""
        return self.localized.get(language or "", {}).get(field) or getattr(self, field) or ""
