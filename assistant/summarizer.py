"""Summarizers that `memory` calls to fold older turns into the rolling summary.

With Gemini the summary is written by the model from the previous summary plus the turns being
folded. Whatever goes wrong (an API error, a safety block, an empty or useless answer), the
extractive summarizer from `memory` writes it instead, so summarization never fails because of a
model. The offline model is far too small to summarize faithfully: it always gets the extractive
one (see `summarizer_for`).
"""

from __future__ import annotations

import logging

from memory import ExtractiveSummarizer, Summarizer, Turn

from .errors import AssistantError
from .gemini import GeminiModel
from .models import ChatModel

log = logging.getLogger(__name__)

SUMMARY_SYSTEM = "\n".join(
    [
        "You maintain the running memory of a conversation between a user and an assistant. "
        "You receive the previous memory (possibly empty) and the next messages of the "
        "conversation, and you write the updated memory. Rules:",
        "- Keep every name, number, amount, date, place, decision and commitment, and every "
        "fact the user stated about themselves (who they are, where they live, what they like, "
        "what they plan).",
        "- Keep the questions that are still open and what was promised to follow up.",
        "- Keep facts from the previous memory unless the new messages correct them; then keep "
        "the correction.",
        "- Write short bullet lines in the language of the conversation, attributing facts to "
        '"User" or "Assistant". No preamble, no headings, no commentary.',
        "- Stay under {max_chars} characters in total.",
    ]
)


# Bounds on what one summary request sends. A normal fold is ~80 messages; a backlog after
# failures can be 1,000 long ones, which Gemini would refuse or take minutes over.
TURN_CHARS = 4_000
PROMPT_CHARS = 300_000


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return text[:head] + " […] " + text[len(text) - (limit - head) :]


def _transcript(turns: list[Turn]) -> str:
    lines = []
    for turn in turns:
        if turn.role in ("user", "assistant"):
            label = turn.who
            lines.append(f"{label}: {_clip(turn.content, TURN_CHARS)}")
    return "\n\n".join(lines)


def summary_prompt(previous: str | None, turns: list[Turn]) -> str:
    """The user-side prompt: the previous memory, then the messages to fold in."""
    return (
        "Previous memory:\n"
        + (previous.strip() if previous else "(none yet)")
        + "\n\nNew messages, oldest first:\n"
        + _transcript(turns)
        + "\n\nWrite the updated memory now."
    )


class GeminiSummarizer:
    """Rolling summary written by Gemini; extractive on any failure."""

    def __init__(self, model: GeminiModel, fallback: Summarizer | None = None) -> None:
        self.model = model
        self.fallback = fallback or ExtractiveSummarizer()
        self.last_used: str | None = None  # "gemini" | "extractive": for tests and logs

    async def summarize(self, previous: str | None, turns: list[Turn], max_chars: int) -> str:
        prompt = summary_prompt(previous, turns)
        if len(prompt) > PROMPT_CHARS:
            log.warning("%d turns are too many for one Gemini summary; extractive", len(turns))
            return await self._fallback(previous, turns, max_chars)
        try:
            text = await self.model.complete(
                SUMMARY_SYSTEM.format(max_chars=max_chars),
                prompt,
                temperature=0.2,
                # ~3 characters per token leaves the model room to finish within the cap.
                max_output_tokens=max(256, max_chars // 3),
            )
        except AssistantError as exc:
            log.warning("Gemini summary failed (%s); using the extractive summarizer", exc.kind)
            return await self._fallback(previous, turns, max_chars)
        text = text.strip()
        if not text:
            log.warning("Gemini summary was empty; using the extractive summarizer")
            return await self._fallback(previous, turns, max_chars)
        self.last_used = "gemini"
        return _clip_lines(text, max_chars)

    async def _fallback(self, previous: str | None, turns: list[Turn], max_chars: int) -> str:
        self.last_used = "extractive"
        return await self.fallback.summarize(previous, turns, max_chars)


def _clip_lines(text: str, max_chars: int) -> str:
    """Cut to `max_chars` at a line boundary when one is near, so no fact is half-kept."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars + 1)
    return text[:cut] if cut > max_chars // 2 else text[:max_chars]


def summarizer_for(model: ChatModel) -> Summarizer:
    """The summarizer to hand to memory for this chat model: Gemini's with fallback, or the
    extractive one for the offline model."""
    if isinstance(model, GeminiModel):
        return GeminiSummarizer(model)
    return ExtractiveSummarizer()
