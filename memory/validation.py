"""Input checks shared by every layer: one place decides what a message, title, retention
period and owner id may be, and what the error says.

The assistant and the UI import these (through `memory`) instead of checking on their own, so
the user reads the same sentence whichever door the input came through.
"""

from __future__ import annotations

from .errors import (
    EmptyMessage,
    InvalidInput,
    InvalidRetention,
    InvalidRole,
    InvalidTitle,
    InvalidTokenName,
    MessageTooLong,
)

# Fixed by the schema's CHECK constraint; changing it needs a migration, not a setting.
MAX_MESSAGE_CHARS = 10_000
TITLE_CHARS = 60  # a title made from a first message
MAX_TITLE_CHARS = 100  # a title the user types
MAX_OWNER_CHARS = 200
MAX_TOKEN_NAME_CHARS = 60
ROLES = ("user", "assistant")


def check_message(content: str) -> None:
    """Raise EmptyMessage or MessageTooLong for text a user wants to send or save."""
    if not isinstance(content, str) or not content.strip():
        raise EmptyMessage("The message is empty. Type something before sending.")
    if len(content) > MAX_MESSAGE_CHARS:
        raise MessageTooLong(len(content), MAX_MESSAGE_CHARS)


def validate_message(
    role: str, content: str, speaker: str | None = None, origin: str | None = None
) -> None:
    """Raise InvalidRole (also for a tool note that is not a user turn), EmptyMessage,
    MessageTooLong or InvalidInput (a bad speaker); nothing is stored when it raises."""
    if role not in ROLES:
        raise InvalidRole(f'Role is {role!r}; a message is either "user" or "assistant".')
    if origin is not None and (origin, role) != ("tool", "user"):
        raise InvalidRole('Only a "user" turn can be a tool note (origin="tool").')
    check_message(content)
    check_speaker(role, speaker)


def make_title(text: str) -> str:
    """A title from a first message: whitespace collapsed, at most TITLE_CHARS characters."""
    text = " ".join(text.split())
    if len(text) <= TITLE_CHARS:
        return text
    cut = text[: TITLE_CHARS - 1]
    space = cut.rfind(" ")
    if text[TITLE_CHARS - 1] != " " and space >= TITLE_CHARS // 2:
        cut = cut[:space]  # do not end on half a word
    return cut.rstrip(" ,.;:") + "…"


def clean_title(title: str) -> str:
    """A title the user typed, whitespace collapsed; InvalidTitle when empty or too long."""
    cleaned = " ".join(str(title).split())
    if not cleaned:
        raise InvalidTitle("The title is empty. Type a name for the conversation.")
    if len(cleaned) > MAX_TITLE_CHARS:
        raise InvalidTitle(
            f"The title is {len(cleaned):,} characters; the limit is {MAX_TITLE_CHARS}. Shorten it."
        )
    return cleaned


def check_retention(minutes: int | None) -> None:
    """None (keep) or a whole number of minutes above 0; else InvalidRetention."""
    if minutes is None:
        return
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes <= 0:
        raise InvalidRetention(
            f"Retention is {minutes!r}; use a whole number of minutes above 0, or None to keep."
        )


def check_owner(owner: str) -> None:
    """A non-empty owner id of at most MAX_OWNER_CHARS characters; else InvalidInput."""
    if not isinstance(owner, str) or not 1 <= len(owner) <= MAX_OWNER_CHARS:
        raise InvalidInput(
            f"The owner id must be a non-empty string of at most {MAX_OWNER_CHARS} characters."
        )


def clean_token_name(name: str) -> str:
    """An API token's name, whitespace collapsed; InvalidTokenName when empty or too long."""
    cleaned = " ".join(str(name or "").split())
    if not cleaned:
        raise InvalidTokenName("Give the token a name, e.g. the script or bot that will use it.")
    if len(cleaned) > MAX_TOKEN_NAME_CHARS:
        raise InvalidTokenName(
            f"The token name is {len(cleaned)} characters; the limit is "
            f"{MAX_TOKEN_NAME_CHARS}. Shorten it."
        )
    return cleaned


# A message dated a little ahead of our clock is another machine's skew; further is a mistake.
OUTCOMES = ("failed", "stopped", "incomplete")
MAX_OUTCOME_NOTE_CHARS = 1000


def check_outcome(outcome: str | None, note: str | None) -> str | None:
    """The note to store with `outcome`, or InvalidInput. A turn with no outcome may still
    carry a note: a line the chat writes on a normal reply (a roundtable's veto). A note
    longer than the column allows is clipped: it is an explanation."""
    if outcome is not None and outcome not in OUTCOMES:
        raise InvalidInput(
            f"outcome must be 'failed', 'stopped' or 'incomplete' (or None), not {outcome!r}."
        )
    if note is None:
        return None
    if not isinstance(note, str):
        raise InvalidInput("outcome_note must be text.")
    note = note.strip()
    if len(note) > MAX_OUTCOME_NOTE_CHARS:
        note = note[: MAX_OUTCOME_NOTE_CHARS - 1] + "…"
    return note or None


CLOCK_SKEW_S = 300.0
MAX_IMPORT_MESSAGES = 100_000


def check_created_at(created_at: float | None, now: float) -> float:
    """The timestamp to store: `now` when None, else epoch seconds that are not after now
    (give or take CLOCK_SKEW_S); else InvalidInput."""
    if created_at is None:
        return now
    if isinstance(created_at, bool) or not isinstance(created_at, int | float):
        raise InvalidInput(
            f"created_at is {created_at!r}; give seconds since 1970 (e.g. datetime.timestamp())."
        )
    value = float(created_at)
    if not 0.0 <= value <= now + CLOCK_SKEW_S:  # also rejects NaN
        raise InvalidInput(
            f"created_at is {created_at!r}, which is not between 1970 and now; give seconds "
            "since 1970 (e.g. datetime.timestamp())."
        )
    return value


def check_import(
    messages: list[tuple[str, str, float]], now: float
) -> list[tuple[str, str, float]]:
    """Messages to import as (role, content, created_at), checked: roles, text, timestamps
    in order. InvalidInput (or the message's own error) names the first bad one."""
    if len(messages) > MAX_IMPORT_MESSAGES:
        raise InvalidInput(
            f"The import has {len(messages):,} messages; the limit is {MAX_IMPORT_MESSAGES:,}. "
            "Split it into several conversations."
        )
    out: list[tuple[str, str, float]] = []
    for i, item in enumerate(messages, start=1):
        where = f"Message {i} of the import"
        try:
            role, content, created_at = item
        except (TypeError, ValueError):
            raise InvalidInput(f"{where} is {item!r}; give (role, content, created_at).") from None
        try:
            validate_message(role, content)
            when = check_created_at(created_at, now)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from exc
        if out and when < out[-1][2]:
            raise InvalidInput(
                f"{where} is dated before message {i - 1}; give the messages oldest first."
            )
        out.append((role, content, when))
    return out


def check_speaker(role: str, speaker: str | None) -> None:
    """Only a reply has a speaker: a persona id of at most 80 characters."""
    if speaker is None:
        return
    if role != "assistant":
        raise InvalidInput(f"Only replies have a speaker, not {role} messages.")
    if not isinstance(speaker, str) or not 1 <= len(speaker) <= 80:
        raise InvalidInput("A speaker is the persona id that wrote the reply (1-80 characters).")
