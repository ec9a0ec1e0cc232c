"""The roundtable's views and the chat pane's streaming, over the facade's real records: no
browser (tests/test_browser_roundtable.py drives one)."""

from __future__ import annotations

import pytest

from assistant.runtime import Runtime
from ui import chat, views
from ui.page import render_chat

OWNER = "owner-a"
BOARD = "roundtable:erp_board"


@pytest.fixture
async def facade(rt):
    return await rt.conversations()


def contents(messages):
    return [views.message_text(m["content"]) for m in messages]


async def test_the_picker_offers_the_roundtable_after_the_personas(rt: Runtime):
    view = await render_chat(rt, OWNER, None, BOARD)
    choices = view.persona["choices"]
    assert choices[-1] == ("👥 ERP decision board", BOARD)
    assert view.persona["value"] == BOARD
    assert "📈 Sales Director → 🏭 Production Manager → 💰 Finance Controller → 🧭 總經理" in (
        view.badge
    )
    greeting = contents(view.chat)[0]
    assert greeting.startswith("👥 **ERP decision board** — ask one question")


async def test_streaming_gives_each_speaker_its_own_bubble_and_reopening_matches(rt, fake):
    for text in ("Sales view.", "Production view.", "Finance view.", "總經理決策: ok."):
        fake.reply(text)
    # The chat pane shows the user's message itself (accept_message) before streaming.
    shown_before = [{"role": "user", "content": "Nike order?"}]
    during, final = [], None
    async for view in chat.stream_reply(rt, OWNER, None, "Nike order?", BOARD, shown_before):
        if isinstance(view.chat, list) and not view.turn_done:
            during.append(contents(view.chat))  # as Gradio sends it, at this moment
        final = view
    assert final.turn_done is True
    shown = contents(final.chat)
    assert shown[1:] == [
        "Nike order?",
        "📈 **Sales Director**\n\nSales view.",
        "🏭 **Production Manager**\n\nProduction view.",
        "💰 **Finance Controller**\n\nFinance view.",
        "🧭 **總經理**\n\n總經理決策: ok.",
    ]
    # A speaker's bubble opens with its header before its first word arrives.
    assert ["Nike order?", "📈 **Sales Director**\n\nSales view.", "🏭 **Production Manager**"] in [
        c[-3:] for c in during
    ]
    reopened = await render_chat(rt, OWNER, final.conversation_id)
    assert contents(reopened.chat) == shown
    assert "Finance Controller · ⛔" not in reopened.inspector
    assert "##### 3. 💰 Finance Controller" in reopened.inspector


def test_the_inspector_shows_each_member_and_marks_the_vetoer():
    from types import SimpleNamespace as NS

    speaker = NS(avatar="💰", display_name="Finance Controller", role="member")
    member = NS(speaker=speaker, system_instruction="SYS", user_message="Q", veto=object())
    text = views.members_markdown([member])
    assert "##### 1. 💰 Finance Controller · ⛔ told to veto" in text
    assert "```text\nSYS\n```" in text and "```text\nQ\n```" in text


def test_a_speaker_whose_persona_is_gone_shows_its_id():
    from memory import Turn

    turns = [Turn(1, "c", "assistant", "Hi.", 1.0, speaker="marketing")]
    assert contents(views.chat_messages(turns)) == ["💬 **marketing**\n\nHi."]
