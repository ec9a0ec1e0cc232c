"""What the chat shows of a roundtable board, from plain data (like ui/views.py, which it
builds on): its picker label, the badge's and the greeting's list of members, and the toast when
the metrics table decides a veto (the lasting ⛔ line is views.veto_line)."""

from __future__ import annotations

from typing import Any

from ui.i18n import current_language
from ui.texts import tr
from ui.views import ROUNDTABLE_AVATAR, plain_markdown, shown


def roundtable_label(board: Any) -> str:
    """The picker's entry for a roundtable."""
    return f"{ROUNDTABLE_AVATAR} {shown(board)}"


def roundtable_members(board: Any) -> str:
    """The speakers in order, e.g. '📈 Sales Director → … → 🧭 總經理'."""
    return " → ".join(plain_markdown(f"{p.avatar or '💬'} {shown(p)}") for p in board.speakers)


def roundtable_badge(badge: str, board: Any) -> str:
    """The memory badge of a roundtable chat: the members after the memory line."""
    name = plain_markdown(shown(board))
    return f"{badge}  \n{ROUNDTABLE_AVATAR} **{name}**: {roundtable_members(board)}"


def roundtable_greeting(board: Any, offline: bool) -> str:
    """What opens a roundtable chat (shown, never stored or sent)."""
    chair = next((shown(p) for p in board.speakers if p.id == board.chair), board.chair)
    name, chair = plain_markdown(shown(board)), plain_markdown(chair)
    text = tr(
        "board_greeting",
        avatar=ROUNDTABLE_AVATAR,
        name=name,
        chair=chair,
        members=roundtable_members(board),
    )
    if board.problem:
        text += f"\n\n⚠️ {board.problem}"
    if offline:
        text += "\n\n" + tr("board_offline", n=len(board.speakers))
    return text


def veto_note(veto: Any, speaker_name: str) -> str:
    """The toast when the metrics table decides a veto."""
    return tr(
        "veto_note",
        speaker=speaker_name,
        reason=veto.reason(current_language()),
        threshold=f"{veto.threshold_pct:g}",
    )
