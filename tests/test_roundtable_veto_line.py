"""The ⛔ veto line Mnemo writes on a roundtable's replies, whatever the model wrote: stored with
the vetoing member's and the chair's replies (code and numbers in the turn's note), shown in the
page's language on reopen and after a restart, and over the HTTP API. The models here ignore
the veto, as the offline SmolLM2 does: finance never writes it, the chair approves."""

from __future__ import annotations

import threading

from assistant import Delta, Spoke
from assistant.gemini import GeminiModel
from assistant.outcome_notes import decode, with_line
from assistant.runtime import Runtime
from ui import chat
from ui.i18n import speaking
from ui.page import render_chat

OWNER = "owner-a"
BOARD = "roundtable:erp_board"
NIKE = "Should we take the Nike order of 20,000 pairs at list price?"
ADIDAS = "Should we take the Adidas order of 5,000 pairs?"
IGNORING = {  # what a weak model writes: no veto, and the chair approves
    "sales": "Sales: take it.",
    "production": "Production: we can build it.",
    "finance": "Finance: looks fine to me.",
    "general_manager": "總經理決策: approved.",
}
# As the chat's Markdown holds them: data is escaped, so "<" is "&lt;" (shown as "<").
EN_MEMBER = (
    "⛔ **FINANCE VETO**: Nike: 12% &lt; 15%, below the 15% threshold — decided by the "
    "business-metrics table, not by the model."
)
EN_CHAIR = (
    "⛔ **FINANCE VETO** stands (Finance Controller: Nike: 12% &lt; 15%, threshold 15%): the "
    "proposal is not approved."
)
ZH_MEMBER = "⛔ **財務否決**：耐吉: 12% &lt; 15%，低於門檻 15% — 由業務指標表判定，不是模型的意見。"
ZH_CHAIR = "⛔ **財務否決**成立（財務長：耐吉: 12% &lt; 15%，門檻 15%）：提案不予核准。"


def ignore_the_veto(fake):
    for text in IGNORING.values():
        fake.reply(text)


async def board_turn(facade, fake, text=NIKE, language=None):
    conv = (await facade.create(OWNER, persona_id=BOARD)).id
    ignore_the_veto(fake)
    events = [e async for e in facade.send(OWNER, conv, text, language=language)]
    return conv, events


def contents(messages):
    return [m["content"] for m in messages]


async def test_the_veto_is_stored_with_the_vetoer_and_the_chair_whatever_they_wrote(rt, fake):
    facade = await rt.conversations()
    conv, events = await board_turn(facade, fake)
    lines = {e.speaker.persona_id: e.veto_line for e in events if isinstance(e, Spoke)}
    assert lines["sales"] is None and lines["production"] is None
    assert lines["finance"].code == "veto_member" and lines["general_manager"].code == "veto_chair"
    turns = (await facade.messages(OWNER, conv)).turns
    stored = {t.speaker: t for t in turns if t.role == "assistant"}
    for pid in ("sales", "production"):
        assert stored[pid].outcome_note is None
    for pid, code in (("finance", "veto_member"), ("general_manager", "veto_chair")):
        turn = stored[pid]
        assert turn.content == IGNORING[pid]  # the model's words, untouched
        assert turn.outcome is None and not turn.incomplete  # a normal reply with a line
        line = decode(turn.outcome_note).veto
        assert line.code == code
        assert line.params == {
            "label": "FINANCE VETO",
            "reason": "Nike: 12% < 15%",
            "threshold": "15",
            "member": "finance",
            "member_name": "Finance Controller",
            "label_en": "FINANCE VETO",
            "label_zh-TW": "財務否決",
            "reason_en": "Nike: 12% < 15%",
            "reason_zh-TW": "耐吉: 12% < 15%",
        }
    # The chair's prompt carried the veto too (the model was told; it did not listen).
    assert (
        "The veto stands: you must not approve" in fake.of("streamGenerateContent")[3].system_text
    )


async def test_no_line_when_the_named_margin_clears_the_threshold(rt, fake):
    facade = await rt.conversations()
    conv, events = await board_turn(facade, fake, ADIDAS)
    assert all(e.veto_line is None for e in events if isinstance(e, Spoke))
    assert all(t.outcome_note is None for t in (await facade.messages(OWNER, conv)).turns)
    view = await render_chat(rt, OWNER, conv)
    assert not any("⛔" in c for c in contents(view.chat))


async def test_the_chat_shows_the_line_live_and_on_reopen_in_the_pages_language(rt, fake):
    ignore_the_veto(fake)
    shown_before = [{"role": "user", "content": NIKE}]
    during, final = [], None
    async for view in chat.stream_reply(rt, OWNER, None, NIKE, BOARD, shown_before):
        if isinstance(view.chat, list) and not view.turn_done:
            during.append(contents(view.chat))
        final = view
    finance = f"💰 **Finance Controller**\n\n{IGNORING['finance']}\n\n{EN_MEMBER}"
    chair = f"🧭 **General Manager**\n\n{IGNORING['general_manager']}\n\n{EN_CHAIR}"
    assert contents(final.chat)[-2:] == [finance, chair]
    # Live: finance's bubble has its line before the chair's bubble opens.
    assert [finance, "🧭 **General Manager**"] in [c[-2:] for c in during]
    reopened = await render_chat(rt, OWNER, final.conversation_id)
    assert contents(reopened.chat) == contents(final.chat)
    with speaking("zh-TW"):
        zh = contents((await render_chat(rt, OWNER, final.conversation_id)).chat)
    assert zh[-2:] == [
        f"💰 **財務長**\n\n{IGNORING['finance']}\n\n{ZH_MEMBER}",
        f"🧭 **總經理**\n\n{IGNORING['general_manager']}\n\n{ZH_CHAIR}",
    ]


async def test_the_line_survives_a_restart_in_the_readers_language(tmp_path, fake):
    data = tmp_path / "data"
    first = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    conv, _ = await board_turn(await first.conversations(), fake, NIKE, language="zh-TW")
    await first.aclose()
    second = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    try:
        with speaking("zh-TW"):
            zh = contents((await render_chat(second, OWNER, conv)).chat)
        assert zh[-2].endswith(ZH_MEMBER) and zh[-1].endswith(ZH_CHAIR)
        with speaking("en"):  # a Chinese turn read on an English page: the English label
            en = contents((await render_chat(second, OWNER, conv)).chat)
        assert en[-2].endswith(EN_MEMBER) and en[-1].endswith(EN_CHAIR)
    finally:
        await second.aclose()


async def test_a_stopped_or_cut_reply_keeps_both_its_outcome_and_the_line(rt, fake):
    facade = await rt.conversations()
    conv = (await facade.create(OWNER, persona_id=BOARD)).id
    gate = threading.Event()
    for pid in ("sales", "production"):
        fake.reply(IGNORING[pid])
    fake.reply("Finance: the margin ", "is thin.", gate=gate)
    stream = facade.send(OWNER, conv, NIKE)
    async for event in stream:
        if isinstance(event, Delta) and event.text == "Finance: the margin ":
            break
    await stream.aclose()  # Stop
    gate.set()
    await (await rt.service()).wait_background()
    finance = (await facade.messages(OWNER, conv)).turns[-1]
    assert finance.speaker == "finance" and finance.outcome == "stopped"
    note = decode(finance.outcome_note)
    assert note.code == "stopped_stored" and note.veto.code == "veto_member"
    view = contents((await render_chat(rt, OWNER, conv)).chat)
    assert view[-1].endswith(f"_⏹ Stopped — this reply is incomplete._\n\n{EN_MEMBER}")


def test_a_long_note_and_a_line_still_fit_the_column():
    from types import SimpleNamespace

    from assistant.outcome_notes import MAX_NOTE_CHARS, OutcomeNote, veto_line

    veto = SimpleNamespace(
        reason=lambda: "; ".join(f"Entry {i}: 1% < 15%" for i in range(60)),
        label="L" * 300,
        threshold_pct=15.0,
        member="finance",
    )
    line = veto_line(veto, "chair", "N" * 300)
    stored = with_line(OutcomeNote('"' * 900, code="x", params={"p": "v" * 900}).encode(), line)
    assert len(stored) <= MAX_NOTE_CHARS
    assert decode(stored).veto == line and decode(stored).code == "x"
