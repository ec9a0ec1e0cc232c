"""The memory badge: one line saying what the assistant remembers right now, in the language
of the browser being answered."""

from __future__ import annotations

from typing import Any

from assistant.local import LocalModel
from ui.texts import count, tr


def compact_number(n: int) -> str:
    """950 -> '950', 3100 -> '3.1k', 12000 -> '12k', 1250000 -> '1.2M'."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            value = f"{n / size:.1f}".removesuffix(".0")
            return value + suffix
    return str(n)


def idle_text(minutes: int) -> str:
    """30 -> '30 min', 60 -> '1 h', 90 -> '90 min', 1440 -> '1 day', 2880 -> '2 days'."""
    if minutes % 1440 == 0:
        return count("idle_days", minutes // 1440)
    if minutes % 60 == 0:
        return tr("idle_hours", n=minutes // 60)
    return tr("idle_minutes", n=minutes)


def model_label(model_name: str) -> str:
    """The model's name as the page shows it: the offline model's says what it is."""
    return tr("model_local") if model_name == LocalModel.name else model_name


def badge_text(status: Any, model_name: str) -> str:
    """E.g. '🧠 Remembering 14 messages · summary of 87 earlier · 3.1k/12k chars · Gemini 2.5
    Flash'. Degraded storage and a running summarization take the lead; retention, when set,
    is appended."""
    if status.degraded:
        parts = [tr("badge_degraded")]
    else:
        parts = []
        if status.summarizing:
            parts.append(tr("badge_summarizing"))
        if status.active == 0 and status.summaries == 0 and not status.pinned:
            parts.append(tr("badge_nothing"))
        else:
            lead = count("badge_remembering", status.active)
            parts.append(lead if status.summarizing else "🧠 " + lead)
            if status.summaries:
                summary = tr("badge_summary_of", n=status.summary_covers)
                if status.summary_edited:
                    summary += tr("badge_edited")
                parts.append(summary)
            if status.pinned:
                parts.append(tr("badge_pinned", n=status.pinned))
            used, budget = compact_number(status.context_chars), compact_number(status.budget)
            parts.append(tr("badge_chars", used=used, budget=budget))
        if status.about_me_on:
            parts.append(tr("badge_about_me"))
    parts.append(model_label(model_name))
    if status.retention_minutes and not status.degraded:
        parts.append(tr("badge_forgets", idle=idle_text(status.retention_minutes)))
    return " · ".join(parts)
