"""The roundtable's views and the chat pane's streaming, over the facade's real records: no
browser (tests/test_browser_roundtable.py drives one)."""

from __future__ import annotations

import pytest

from assistant.runtime import Runtime
from ui import chat, views
from ui.i18n import speaking
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
    members = (
        "📈 Sales Director → 🏭 Production Manager → 💰 Finance Controller → 🧭 General Manager"
    )
    assert members in view.badge
    greeting = contents(view.chat)[0]
    assert greeting.startswith("👥 **ERP decision board** — ask one question")


async def test_a_zh_tw_page_shows_the_boards_names_in_chinese(rt: Runtime):
    """The names the personas' and the roundtable's `i18n` entries give for zh-TW: picker,
    badge, greeting (the general manager's own name is Chinese: the English page's is its
    `en` entry)."""
    with speaking("zh-TW"):
        view = await render_chat(rt, OWNER, None, BOARD)
    assert view.persona["choices"][-1] == ("👥 ERP 決策委員會", BOARD)
    assert ("📈 業務總監", "sales") in view.persona["choices"]
    assert "👥 **ERP 決策委員會**: 📈 業務總監 → 🏭 生產經理 → 💰 財務長 → 🧭 總經理" in view.badge
    greeting = contents(view.chat)[0]
    assert greeting.startswith("👥 **ERP 決策委員會** — 提出一個問題")
    assert "最後由總經理做出決定" in greeting


# "Nike order?" names Nike (12% < 15%): finance's and the chair's bubbles end with the ⛔ line.
VETO_EN = (
    "⛔ **FINANCE VETO**: Nike: 12% &lt; 15%, below the 15% threshold — decided by the "
    "business-metrics table, not by the model.",
    "⛔ **FINANCE VETO** stands (Finance Controller: Nike: 12% &lt; 15%, threshold 15%): the "
    "proposal is not approved.",
)
VETO_ZH = (
    "⛔ **財務否決**：耐吉: 12% &lt; 15%，低於門檻 15% — 由業務指標表判定，不是模型的意見。",
    "⛔ **財務否決**成立（財務長：耐吉: 12% &lt; 15%，門檻 15%）：提案不予核准。",
)


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
        f"💰 **Finance Controller**\n\nFinance view.\n\n{VETO_EN[0]}",
        f"🧭 **General Manager**\n\n總經理決策: ok.\n\n{VETO_EN[1]}",
    ]
    # A speaker's bubble opens with its header before its first word arrives.
    assert ["Nike order?", "📈 **Sales Director**\n\nSales view.", "🏭 **Production Manager**"] in [
        c[-3:] for c in during
    ]
    reopened = await render_chat(rt, OWNER, final.conversation_id)
    assert contents(reopened.chat) == shown
    assert "Finance Controller · ⛔" not in reopened.inspector
    assert "##### 3. 💰 Finance Controller" in reopened.inspector
    with speaking("zh-TW"):  # the same turn on a zh-TW page: the names its readers know
        zh = contents((await render_chat(rt, OWNER, final.conversation_id)).chat)
    assert zh[2:] == [
        "📈 **業務總監**\n\nSales view.",
        "🏭 **生產經理**\n\nProduction view.",
        f"💰 **財務長**\n\nFinance view.\n\n{VETO_ZH[0]}",
        f"🧭 **總經理**\n\n總經理決策: ok.\n\n{VETO_ZH[1]}",
    ]


def test_the_inspector_shows_each_member_and_marks_the_vetoer():
    from types import SimpleNamespace as NS

    from assistant.roundtable import Speaker

    speaker = Speaker(
        {"zh-TW": {"display_name": "財務長"}}, "finance", "Finance Controller", "💰", "member", 2, 4
    )
    member = NS(speaker=speaker, system_instruction="SYS", user_message="Q", veto=object())
    text = views.members_markdown([member])
    assert "##### 1. 💰 Finance Controller · ⛔ told to veto" in text
    with speaking("zh-TW"):
        assert "##### 1. 💰 財務長 · ⛔" in views.members_markdown([member])
    assert "```text\nSYS\n```" in text and "```text\nQ\n```" in text


def test_a_speaker_whose_persona_is_gone_shows_its_id():
    from memory import Turn

    turns = [Turn(1, "c", "assistant", "Hi.", 1.0, speaker="marketing")]
    assert contents(views.chat_messages(turns)) == ["💬 **marketing**\n\nHi."]
