"""The roundtable turn through the Conversations facade: real SQLite in a tmp dir, real personas
and roundtables, the real google-genai client against the local fake Gemini server. We assert
on what each speaker's request really carried."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from assistant import Delta, RoundtableDone, Speaking, Spoke
from assistant.errors import NothingToRetry, RoundtableUnavailable
from assistant.gemini import GeminiModel
from assistant.roundtable import EARLIER_HEADER
from assistant.runtime import Runtime
from personas import BUILTIN_DIR, build_system_prompt, load_persona_text

OWNER = "owner-a"
BOARD = "roundtable:erp_board"
NIKE = "Should we take the Nike order of 20,000 pairs at list price?"
ADIDAS = "Should we take the Adidas order of 5,000 pairs?"
BUILTIN_GM = (BUILTIN_DIR / "general_manager.yaml").read_text(encoding="utf-8")
ORDER = ["sales", "production", "finance", "general_manager"]
ANSWERS = {
    "sales": "Sales: the customer is strategic.",
    "production": "Production: line 2 has room in March.",
    "finance": "Finance: the numbers are as follows.",
    "general_manager": "總經理決策: decided.",
}


@pytest.fixture
async def facade(rt):
    return await rt.conversations()


async def board_conversation(facade) -> str:
    return (await facade.create(OWNER, persona_id=BOARD)).id


def script_answers(fake):
    for pid in ORDER:
        fake.reply(ANSWERS[pid])


async def run(facade, conv, text):
    return [event async for event in facade.send(OWNER, conv, text)]


def streamed(fake):
    return fake.of("streamGenerateContent")


def metrics_rows(data_dir):
    with sqlite3.connect(data_dir / "mnemo.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM turn_metrics ORDER BY id")]


async def test_members_speak_in_order_each_seeing_the_earlier_answers(facade, fake, rt):
    conv = await board_conversation(facade)
    script_answers(fake)
    events = await run(facade, conv, ADIDAS)

    speaking = [e.speaker for e in events if isinstance(e, Speaking)]
    assert [s.persona_id for s in speaking] == ORDER
    assert [s.role for s in speaking] == ["member", "member", "member", "chair"]
    assert speaking[0].avatar == "📈" and speaking[3].display_name == "總經理"
    # Each speaker's deltas come between its Speaking and its Spoke.
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Speaking", "Delta", "Spoke"] * 4 + ["RoundtableDone"]
    assert [e.done.reply for e in events if isinstance(e, Spoke)] == [ANSWERS[p] for p in ORDER]
    assert events[-1].speakers == ORDER

    requests = streamed(fake)
    assert len(requests) == 4
    prompts = ["Sales Director", "Production Manager", "Finance Controller", "總經理"]
    for index, (request, name) in enumerate(zip(requests, prompts, strict=True)):
        assert request.system_text.startswith(f"Persona: {name}\n")
        assert "## Roundtable: ERP decision board" in request.system_text
        assert f"turn {index + 1} of 4" in request.system_text
        role, question = request.turns[-1]
        assert role == "user" and question.startswith(ADIDAS)
        earlier = ORDER[:index]
        for pid in ORDER:
            assert (ANSWERS[pid] in question) is (pid in earlier), (index, pid)
        assert (EARLIER_HEADER in question) is bool(earlier)
    # The sales seat's own temperature, not the chair's.
    assert requests[0].generation_config.get("temperature") == pytest.approx(0.8)
    assert "Adidas: gross margin 18.5%" in requests[0].system_text


async def test_the_board_answers_in_the_questions_language_and_knows_both_names(facade, fake):
    """The general manager alone always replies in 繁體中文 (its `language`); on the board every
    speaker replies in the question's language instead, so one turn is one language. Each
    speaker is told the others' names as both pages show them."""
    conv = await board_conversation(facade)
    script_answers(fake)
    await run(facade, conv, NIKE)
    requests = streamed(fake)
    for request in requests:
        assert "Reply in the language the user's question is written in" in request.system_text
        assert "Always reply in" not in request.system_text
        assert (
            "Sales Director (業務總監) → Production Manager (生產經理) → Finance Controller "
            "(財務長), then 總經理 (General Manager) concludes."
        ) in request.system_text
    assert "You speak as 總經理 (General Manager), turn 4 of 4." in requests[3].system_text
    assert "\nFinance Controller (財務長) vetoed this proposal" in requests[3].system_text
    alone = build_system_prompt(load_persona_text(BUILTIN_GM))
    assert "Always reply in 繁體中文" in alone


async def test_no_veto_when_the_named_margin_clears_the_threshold(facade, fake):
    conv = await board_conversation(facade)
    script_answers(fake)
    events = await run(facade, conv, ADIDAS)
    assert all(e.veto is None for e in events if isinstance(e, Speaking))
    assert events[-1].veto is not None and not events[-1].veto.vetoed
    finance, chair = streamed(fake)[2], streamed(fake)[3]
    assert "gives no ground for a veto" in finance.system_text
    assert "FINANCE VETO" not in finance.system_text
    assert "The veto stands" not in chair.system_text


async def test_a_thin_margin_forces_finance_to_veto_and_the_chair_to_honour_it(facade, fake):
    conv = await board_conversation(facade)
    script_answers(fake)
    events = await run(facade, conv, NIKE)
    vetoes = {e.speaker.persona_id: e.veto for e in events if isinstance(e, Speaking)}
    assert vetoes["sales"] is None and vetoes["production"] is None
    assert vetoes["finance"].vetoed and vetoes["general_manager"].vetoed
    assert vetoes["finance"].reason() == "Nike: 12% < 15%"
    sales, production, finance, chair = streamed(fake)
    assert 'must start with "FINANCE VETO:"' in finance.system_text
    assert "You must veto this proposal" in finance.system_text
    assert "The veto stands: you must not approve" in chair.system_text
    assert '"總經理決策:"' in chair.system_text
    # Members before finance are not told of a veto (it is decided when finance speaks).
    for request in (sales, production):
        assert "VETO" not in request.system_text
        assert "Nike: gross margin 12%" in request.system_text


NIKE_ZH = "我們該以目前的報價接耐吉 20,000 雙的訂單嗎？"


@pytest.mark.parametrize(
    "question,language",
    [(NIKE_ZH, None), (NIKE_ZH, "en"), (NIKE, "zh-TW")],
    ids=["chinese-question", "chinese-question-english-page", "chinese-page"],
)
async def test_a_chinese_turn_vetoes_with_finances_chinese_label(facade, fake, question, language):
    """Asked in Chinese, or from a zh-TW page, finance is told to start its last line with its
    Chinese label (its `i18n` entry's veto_label) and the chair is told the veto stands, under
    that label; the veto is still the table's, not the model's."""
    conv = await board_conversation(facade)
    script_answers(fake)
    events = [e async for e in facade.send(OWNER, conv, question, language=language)]
    assert events[-1].veto.vetoed and events[-1].veto.label == "財務否決"
    assert events[-1].veto.reason() == "Nike: 12% < 15%"
    _, _, finance, chair = streamed(fake)
    assert 'must start with "財務否決:"' in finance.system_text
    assert "FINANCE VETO" not in finance.system_text + chair.system_text
    assert 'vetoed this proposal ("財務否決": Nike: 12% < 15%' in chair.system_text
    assert "The veto stands: you must not approve" in chair.system_text


async def test_an_english_turn_from_an_english_page_keeps_the_english_label(facade, fake):
    conv = await board_conversation(facade)
    script_answers(fake)
    events = [e async for e in facade.send(OWNER, conv, NIKE, language="en")]
    assert events[-1].veto.label == "FINANCE VETO"
    assert 'vetoed this proposal ("FINANCE VETO": Nike' in streamed(fake)[3].system_text
    # Retried from a zh-TW page, the same question gets the Chinese label.
    script_answers(fake)
    retried = [e async for e in facade.retry(OWNER, conv, language="zh-TW")]
    assert retried[-1].veto.label == "財務否決"
    assert 'must start with "財務否決:"' in streamed(fake)[6].system_text


async def test_a_threshold_edited_in_the_persona_editor_applies_from_the_next_message(facade, fake):
    conv = await board_conversation(facade)
    script_answers(fake)
    await run(facade, conv, ADIDAS)
    assert "gives no ground for a veto" in streamed(fake)[2].system_text
    document = await facade.persona(OWNER, "finance")
    await facade.save_persona(
        OWNER, document.yaml_text.replace("veto_threshold_pct: 15", "veto_threshold_pct: 20")
    )
    script_answers(fake)
    events = await run(facade, conv, ADIDAS)
    assert events[-1].veto.vetoed and events[-1].veto.threshold_pct == 20
    assert "Adidas: 18.5% < 20%" in streamed(fake)[6].system_text


async def test_each_reply_is_saved_with_its_speaker_and_metrics_per_member(facade, fake, rt):
    conv = await board_conversation(facade)
    script_answers(fake)
    await run(facade, conv, NIKE)
    await (await rt.service()).wait_background()
    page = await facade.messages(OWNER, conv)
    assert [(t.role, t.speaker) for t in page.turns] == [("user", None)] + [
        ("assistant", p) for p in ORDER
    ]
    rows = metrics_rows(rt.data_dir)
    assert [r["persona_id"] for r in rows] == ORDER
    assert all(r["status"] == "ok" for r in rows)
    texts = set(ANSWERS.values()) | {NIKE}
    assert not any(str(v) in texts for r in rows for v in r.values())  # numbers, never text

    # The next message sees who said what in its memory.
    script_answers(fake)
    await run(facade, conv, "And with a 5% price rise?")
    history = streamed(fake)[4].turns
    # Consecutive replies reach the model as one model turn, each line naming its speaker.
    assert history[0] == ("user", NIKE) and history[1][0] == "model"
    for pid in ORDER:
        assert f"[{pid}] {ANSWERS[pid]}" in history[1][1]


async def test_stop_mid_roundtable_keeps_the_partial_reply_and_skips_the_rest(facade, fake, rt):
    conv = await board_conversation(facade)
    gate = threading.Event()
    fake.reply(ANSWERS["sales"])
    fake.reply("Production: line 2 ", "is full until April.", gate=gate)
    stream = facade.send(OWNER, conv, NIKE)
    seen = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, Delta) and event.text == "Production: line 2 ":
            break
    await stream.aclose()  # what the app does on Stop
    gate.set()
    await (await rt.service()).wait_background()
    page = await facade.messages(OWNER, conv)
    assert [(t.speaker, t.content, t.incomplete) for t in page.turns] == [
        (None, NIKE, False),
        ("sales", ANSWERS["sales"], False),
        ("production", "Production: line 2 ", True),
    ]
    assert len(streamed(fake)) == 2  # finance and the chair were never asked
    assert [r["status"] for r in metrics_rows(rt.data_dir)] == ["ok", "stopped"]


async def test_retry_and_undo_act_on_the_whole_roundtable_turn(facade, fake):
    conv = await board_conversation(facade)
    script_answers(fake)
    await run(facade, conv, NIKE)
    for pid in ORDER:
        fake.reply(f"Again from {pid}.")
    events = [e async for e in facade.retry(OWNER, conv)]
    assert isinstance(events[-1], RoundtableDone)
    page = await facade.messages(OWNER, conv)
    assert [t.content for t in page.turns] == [NIKE] + [f"Again from {p}." for p in ORDER]
    retried = streamed(fake)[4:]
    assert retried[0].turns == [("user", NIKE)]  # no old answer left in memory
    assert retried[3].system_text.count("The veto stands") == 1
    dropped = await facade.undo(OWNER, conv)
    assert len(dropped) == 5
    assert (await facade.messages(OWNER, conv)).turns == []
    with pytest.raises(NothingToRetry):
        [e async for e in facade.retry(OWNER, conv)]


async def test_reopening_after_a_restart_shows_every_bubble_as_it_was(tmp_path, fake):
    data = tmp_path / "data"
    first = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    facade = await first.conversations()
    conv = await board_conversation(facade)
    script_answers(fake)
    await run(facade, conv, NIKE)
    await first.aclose()

    second = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    try:
        opened = await (await second.conversations()).open(OWNER, conv)
        assert opened.roundtable is not None and opened.roundtable.id == "erp_board"
        assert [p.id for p in opened.roundtable.speakers] == ORDER
        assert [t.speaker for t in opened.transcript.turns] == [None, *ORDER]
        assert [t.content for t in opened.transcript.turns[1:]] == [ANSWERS[p] for p in ORDER]
        assert {pid: info.avatar for pid, info in opened.speakers.items()} == {
            "sales": "📈",
            "production": "🏭",
            "finance": "💰",
            "general_manager": "🧭",
        }
        assert [m.speaker.persona_id for m in opened.preview.members] == ORDER
    finally:
        await second.aclose()


async def test_the_inspector_shows_what_each_member_receives(facade, fake):
    conv = await board_conversation(facade)
    preview = await facade.preview(OWNER, conv, draft=NIKE)
    members = {m.speaker.persona_id: m for m in preview.members}
    assert list(members) == ORDER
    assert members["sales"].user_message == NIKE
    assert "(Sales Director's answer this turn)" in members["finance"].user_message
    assert 'must start with "FINANCE VETO:"' in members["finance"].system_instruction
    assert members["general_manager"].veto is not None
    assert members["sales"].veto is None
    assert fake.requests == []  # a preview never calls the model
    # The inspector of a zh-TW page shows the label a Chinese turn would use.
    zh = await facade.preview(OWNER, conv, draft=NIKE, language="zh-TW")
    assert 'must start with "財務否決:"' in zh.members[2].system_instruction


async def test_a_roundtable_naming_a_missing_persona_is_refused_and_stores_nothing(facade, fake):
    conv = await board_conversation(facade)
    document = await facade.roundtable(OWNER, "erp_board")
    await facade.save_roundtable(
        OWNER, document.yaml_text.replace("  - production\n", "  - marketing\n")
    )
    with pytest.raises(RoundtableUnavailable, match=r"marketing\. Edit"):
        await run(facade, conv, NIKE)
    assert (await facade.messages(OWNER, conv)).turns == []
    assert fake.requests == []


async def test_roundtables_are_listed_and_edited_per_owner(facade):
    listed = await facade.roundtables(OWNER)
    assert [(r.id, r.ref, r.available) for r in listed] == [("erp_board", BOARD, True)]
    document = await facade.roundtable(OWNER, "erp_board")
    saved = await facade.save_roundtable(
        OWNER, document.yaml_text.replace("rounds: 1", "rounds: 2")
    )
    assert saved.rounds == 2 and saved.version == 1
    assert [p.id for p in saved.speakers] == ORDER[:3] * 2 + ["general_manager"]
    assert (await facade.roundtables("owner-b"))[0].rounds == 1
    back = await facade.rollback_roundtable(OWNER, "erp_board", 0)
    assert back.rounds == 1


async def test_reset_in_a_roundtable_conversation_asks_no_model(facade, fake):
    conv = await board_conversation(facade)
    script_answers(fake)
    await run(facade, conv, NIKE)
    events = await run(facade, conv, "/reset")
    assert type(events[-1]).__name__ == "Cleared" and events[-1].result.turns == 5
    assert len(streamed(fake)) == 4
