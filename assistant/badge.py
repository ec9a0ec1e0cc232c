"""The memory badge: one line saying what the assistant remembers right now."""

from __future__ import annotations

from memory import MemoryStatus


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
        days = minutes // 1440
        return f"{days} day" + ("s" if days > 1 else "")
    if minutes % 60 == 0:
        return f"{minutes // 60} h"
    return f"{minutes} min"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def badge_text(status: MemoryStatus, model_name: str) -> str:
    """E.g. '🧠 Remembering 14 messages · summary of 87 earlier · 3.1k/12k chars · Gemini 2.5
    Flash'. Degraded storage and a running summarization take the lead; retention, when set,
    is appended."""
    if status.degraded:
        parts = ["⚠️ Memory unavailable — answering without history"]
    else:
        parts = []
        if status.summarizing:
            parts.append("🗜️ Summarizing…")
        if status.active == 0 and status.summaries == 0 and not status.pinned:
            parts.append("💤 Nothing remembered yet")
        else:
            lead = f"Remembering {_plural(status.active, 'message')}"
            parts.append(lead if status.summarizing else "🧠 " + lead)
            if status.summaries:
                edited = " (edited by you)" if status.summary_edited else ""
                parts.append(f"summary of {status.summary_covers} earlier{edited}")
            if status.pinned:
                parts.append(f"📌 {status.pinned} pinned")
            parts.append(
                f"{compact_number(status.context_chars)}/{compact_number(status.budget)} chars"
            )
        if status.about_me_on:
            parts.append("👤 About me on")
    parts.append(model_name)
    if status.retention_minutes and not status.degraded:
        parts.append(f"⏳ Forgets after {idle_text(status.retention_minutes)} idle")
    return " · ".join(parts)
