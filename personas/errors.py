"""Errors raised by the personas package. `app.py` turns them into messages for the user."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a persona document, located in the YAML when the node is known."""

    field: str
    message: str
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line is not None else ""
        return f"{where}{self.field}: {self.message}"


class PersonaError(Exception):
    """Base class for every error of the personas package."""


class InvalidPersona(PersonaError):
    """A persona document failed to parse or validate; `.problems` lists every reason."""

    def __init__(self, details: list[Problem]):
        self.details = list(details)
        self.problems = [str(p) for p in self.details]
        count = len(self.problems)
        head = "Persona YAML has 1 problem" if count == 1 else f"Persona YAML has {count} problems"
        super().__init__(head + ":\n" + "\n".join(f"- {p}" for p in self.problems))


class PersonaNotFound(PersonaError):
    """No persona (or no such version of it) exists for this owner."""


class PersonaStoreUnavailable(PersonaError):
    """The shared database of saved versions could not be reached; built-ins still work."""


class PersonaLimitReached(PersonaError):
    """An owner hit the cap on saved personas or versions; delete or reuse one first."""
