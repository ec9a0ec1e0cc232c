"""A turn's outcome (failed, stopped, incomplete, and why) is stored with the turn, so a reload
or a reopened conversation shows the same note the chat showed when it happened (issue 15,
item 3). Real SQLite in tmp_path, the real google-genai client against the fake Gemini server,
the app's handlers called as functions."""

from __future__ import annotations

import sqlite3
import warnings
from types import SimpleNamespace

import pytest

from assistant import ModelUnavailable
from assistant.outcome_notes import (
    FAILED_NOTE,
    INTERRUPTED,
    INTERRUPTED_NOTE,
    MAX_TOKENS_NOTE,
    STOPPED_EARLY_NOTE,
    STOPPED_NOTE,
    OutcomeNote,
    decode,
    reply_cut,
)
from assistant.turn_state import outcome_of
from memory import ConversationNotFound, ConversationStore, InvalidInput
from memory.migrations import MIGRATIONS
from ui import chat as chat_pane
from ui import page, sidebar, views
from ui.errors import ZH_TW as ERRORS_ZH
from ui.i18n import speaking
from ui.texts import STORED as STORED_SENTENCES
from ui.texts import ZH_TW

OWNER = "b-owner-aaaaaaaaaaaaaaaa"


async def send(rt, conversation_id, text, chat=None):
    """What the browser does on Enter: accept, then stream; returns the last view."""
    _box, chat, pending, _notice, _done, _busy, _sending = chat_pane.accept_message(
        text, chat or []
    )
    with warnings.catch_warnings():  # gr.Warning outside a running app: the toast
        warnings.simplefilter("ignore")
        updates = [
            page.ChatView(*update[:-1])
            async for update in chat_pane.stream_reply(
                rt, OWNER, conversation_id, pending, None, chat
            )
        ]
    return updates[-1]


def texts(chat):
    return [(m["role"], m["content"]) for m in chat]


# ---- memory ----------------------------------------------------------------------------


async def test_an_outcome_is_stored_with_the_turn_and_survives_a_reopen(tmp_path):
    store = await ConversationStore.open(tmp_path)
    conv = (await store.create_conversation(OWNER)).id
    question = await store.append(OWNER, conv, "user", "Why is the sky blue?")
    reply = await store.append(
        OWNER, conv, "assistant", "Because", outcome="incomplete", outcome_note="Cut at the limit."
    )
    assert reply.incomplete and reply.outcome == "incomplete"
    await store.set_outcome(OWNER, conv, question.id, "failed", "Gemini is busy. Retry.")
    await store.close()

    store = await ConversationStore.open(tmp_path)
    turns = await store.transcript(OWNER, conv)
    assert [(t.role, t.outcome, t.outcome_note, t.incomplete) for t in turns] == [
        ("user", "failed", "Gemini is busy. Retry.", True),
        ("assistant", "incomplete", "Cut at the limit.", True),
    ]
    await store.set_outcome(OWNER, conv, question.id, None)  # answered by a retry
    assert (await store.transcript(OWNER, conv))[0].outcome is None
    await store.close()


async def test_bad_outcomes_are_refused_and_change_nothing(tmp_path):
    async with await ConversationStore.open(tmp_path) as store:
        conv = (await store.create_conversation(OWNER)).id
        turn = await store.append(OWNER, conv, "user", "hello")
        with pytest.raises(InvalidInput, match="'failed', 'stopped' or 'incomplete'"):
            await store.append(OWNER, conv, "assistant", "hi", outcome="exploded")
        with pytest.raises(InvalidInput, match="must be text"):
            await store.set_outcome(OWNER, conv, turn.id, None, 42)  # type: ignore[arg-type]
        with pytest.raises(ConversationNotFound):
            await store.set_outcome("b-someone-else-bbbbbbbbbbbb", conv, turn.id, "failed", "x")
        with pytest.raises(ConversationNotFound):
            await store.set_outcome(OWNER, conv, turn.id + 99, "failed", "x")
        long = await store.append(
            OWNER, conv, "assistant", "hi", outcome="failed", outcome_note="why " * 500
        )
        assert len(long.outcome_note) == 1000
        turns = await store.transcript(OWNER, conv)
        assert [(t.content, t.outcome) for t in turns] == [("hello", None), ("hi", "failed")]


async def test_replies_stored_incomplete_before_the_migration_keep_their_mark(tmp_path):
    path = tmp_path / "mnemo.db"
    async with await ConversationStore.open(tmp_path) as store:
        conv = (await store.create_conversation(OWNER)).id
        await store.append(OWNER, conv, "assistant", "half a", incomplete=True)
    # Back to the schema before m011: the columns go, the old flag stays.
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE turns DROP COLUMN outcome")
        db.execute("ALTER TABLE turns DROP COLUMN outcome_note")
        db.execute("DELETE FROM _mnemo_migrations WHERE name = 'm011_turn_outcomes'")
    assert "m011_turn_outcomes" in [m.__name__ for m in MIGRATIONS]
    async with await ConversationStore.open(tmp_path) as store:
        [turn] = await store.transcript(OWNER, conv)
        assert (turn.incomplete, turn.outcome, turn.outcome_note) == (True, "incomplete", None)


# ---- the chat turn and what a reload shows ---------------------------------------------


async def test_a_failed_turn_still_says_why_after_a_reload(rt, fake):
    fake.error(500)
    live = await send(rt, None, "Hello?")
    note = texts(live.chat)[-1]
    assert note[1].startswith("⚠️ **Not answered.**") and "Retry" in note[1]
    assert texts(live.chat).count(note) == 1  # stored and shown once, not twice

    reloaded = await page.open_latest(rt, OWNER)
    assert texts(reloaded.chat)[-2:] == [("user", "Hello?"), note]
    reopened = await sidebar.switch_conversation(rt, OWNER, live.conversation_id)
    assert texts(reopened.chat)[-2:] == [("user", "Hello?"), note]

    # A retry that answers clears it: the message has its reply now.
    chat, _, _, _ = chat_pane.begin_retry(reloaded.chat)
    fake.reply("Here now.")
    [*_, last] = [u async for u in chat_pane.stream_retry(rt, OWNER, live.conversation_id, chat)]
    after = await page.open_latest(rt, OWNER)
    assert texts(after.chat)[-2:] == [("user", "Hello?"), ("assistant", "Here now.")]
    assert texts(page.ChatView(*last[:-1]).chat) == texts(after.chat)


async def test_a_reply_that_broke_off_keeps_its_reason(rt, fake):
    fake.reply("Rain ", "is likely ", "later.", break_after=2)
    live = await send(rt, None, "Rain tomorrow?")
    store = await rt.store()
    reply = (await store.transcript(OWNER, live.conversation_id))[-1]
    assert reply.outcome == "failed" and "broke off" in decode(reply.outcome_note).text
    reloaded = await page.open_latest(rt, OWNER)
    role, shown = texts(reloaded.chat)[-1]
    assert role == "assistant" and shown.startswith("Rain is likely")
    assert "incomplete" in shown and decode(reply.outcome_note).text in shown


async def test_a_reply_cut_at_the_length_limit_says_so_after_a_reload(rt, fake):
    fake.reply("A long answer that", finish_reason="MAX_TOKENS")
    live = await send(rt, None, "Explain everything")
    reloaded = await page.open_latest(rt, OWNER)
    role, shown = texts(reloaded.chat)[-1]
    assert role == "assistant" and "length limit" in shown and "continue" in shown
    assert texts(live.chat)[-1] == (role, shown)


async def reopened_in(language: str, rt, conversation_id: str):
    """The chat as a page in `language` shows it when the conversation is opened again."""
    with speaking(language):
        return await sidebar.switch_conversation(rt, OWNER, conversation_id)


async def test_a_reply_that_broke_off_is_noted_in_the_readers_language(rt, fake):
    """The model fails mid-reply: the note stored with the reply is rendered when the
    conversation is reopened, in the page's language — not in the language it was sent in."""
    fake.reply("Rain ", "is likely ", "later.", break_after=2)
    live = await send(rt, None, "Rain tomorrow?")
    english = texts((await reopened_in("en", rt, live.conversation_id)).chat)[-1][1]
    assert english.startswith("Rain is likely") and "Broke off" in english
    assert "The connection to Gemini broke off mid-reply" in english
    zh = texts((await reopened_in("zh-TW", rt, live.conversation_id)).chat)[-1][1]
    assert zh.startswith("Rain is likely")  # the reply itself is the model's
    assert ZH_TW["broke_off"] in zh and ERRORS_ZH["unavailable"][1] in zh
    assert "Broke off" not in zh and "Retry" not in zh


async def test_an_unanswered_message_says_why_in_the_readers_language(rt, fake):
    fake.error(429)
    live = await send(rt, None, "Hello?")
    english = texts(live.chat)[-1][1]
    assert english.startswith("⚠️ **Not answered.**") and "429" in english
    zh = texts((await reopened_in("zh-TW", rt, live.conversation_id)).chat)
    assert zh[-2:] == [
        ("user", "Hello?"),
        ("assistant", ZH_TW["not_answered"] + " " + ERRORS_ZH["rate_limited"][1]),
    ]
    assert texts((await reopened_in("en", rt, live.conversation_id)).chat)[-1][1] == english


async def test_a_cut_reply_keeps_its_numbers_in_both_languages(rt, fake):
    fake.reply("A long answer that", finish_reason="MAX_TOKENS")
    live = await send(rt, None, "Explain everything")
    store = await rt.store()
    conv = live.conversation_id
    reply = (await store.transcript(OWNER, conv))[-1]
    await store.update_reply(
        OWNER,
        conv,
        reply.id,
        reply.content,
        outcome="incomplete",
        outcome_note=reply_cut(10_000).encode(),
    )
    zh = texts((await reopened_in("zh-TW", rt, conv)).chat)[-1][1]
    assert "回覆在 10,000 字元處被截斷" in zh
    en = texts((await reopened_in("en", rt, conv)).chat)[-1][1]
    assert "The reply was cut at 10,000 characters, the message limit." in en


@pytest.mark.parametrize(
    "stored,english,chinese",
    [
        # Sentences the app wrote before notes had codes: recognised, their numbers kept.
        (INTERRUPTED, INTERRUPTED, "Mnemo 在這則回覆完成前停止了"),
        (
            "The reply was cut at 10,000 characters, the message limit.",
            "The reply was cut at 10,000 characters, the message limit.",
            "回覆在 10,000 字元處被截斷",
        ),
        # An error's message stored as written: shown as written, in either language.
        ("Gemini is busy. Retry.", "Gemini is busy. Retry.", "Gemini is busy. Retry."),
        ("{not json", "{not json", "{not json"),
        ('{"text": "no code"}', '{"text": "no code"}', '{"text": "no code"}'),
    ],
)
async def test_a_note_stored_before_codes_stays_readable(rt, fake, stored, english, chinese):
    fake.reply("Partly")
    live = await send(rt, None, "Old row?")
    store = await rt.store()
    conv = live.conversation_id
    reply = (await store.transcript(OWNER, conv))[-1]
    await store.update_reply(
        OWNER, conv, reply.id, reply.content, outcome="incomplete", outcome_note=stored
    )
    assert english in texts((await reopened_in("en", rt, conv)).chat)[-1][1]
    assert chinese in texts((await reopened_in("zh-TW", rt, conv)).chat)[-1][1]


@pytest.mark.parametrize(
    "note",
    [
        STOPPED_NOTE,
        INTERRUPTED_NOTE,
        STOPPED_EARLY_NOTE,
        FAILED_NOTE,
        MAX_TOKENS_NOTE,
        reply_cut(10_000),
    ],
    ids=lambda note: note.code,
)
def test_each_of_the_chats_own_notes_is_a_sentence_of_the_catalog(note):
    """The chat's own codes are ui.texts keys: an English page shows the sentence as the
    assistant wrote it, a Chinese page the catalog's translation with the same numbers."""
    assert note.code in STORED_SENTENCES
    with speaking("en"):
        assert views.stored_note(note.encode()) == note.text
    with speaking("zh-TW"):
        chinese = views.stored_note(note.encode())
    params = {k: f"{v:,}" for k, v in note.params.items()}
    assert chinese == ZH_TW[note.code].format(**params)


def test_a_coded_note_always_fits_its_column():
    long = OutcomeNote("x" * 5000, code="unavailable", params={"detail": "y" * 900, "n": 3})
    stored = long.encode()
    assert len(stored) <= 1000
    back = decode(stored)
    assert back.code == "unavailable" and back.text.startswith("xxx") and back.text.endswith("…")
    assert back.params == {}  # too long to keep: the sentence still says it
    short = OutcomeNote("Quota.", code="quota_hour", kind="quota", params={"quota": 5})
    assert decode(short.encode()) == short
    assert decode(None) is None


def test_every_outcome_has_a_note_in_the_chat():
    assert outcome_of("stopped", None, None) == ("stopped", STOPPED_NOTE.encode())
    outcome, note = outcome_of("error", ModelUnavailable("Gemini broke off."), None)
    assert outcome == "failed"
    assert decode(note) == OutcomeNote("Gemini broke off.", code="unavailable", kind="unavailable")
    assert outcome_of("error", KeyError("bug"), None) == ("failed", FAILED_NOTE.encode())
    cut = OutcomeNote("Cut at the limit.", code="reply_cut", params={"limit": 10})
    assert outcome_of("ok", None, cut) == ("incomplete", cut.encode())
    assert outcome_of("ok", None, None) == (None, None)
    question = SimpleNamespace(
        role="user", content="hi", outcome="stopped", outcome_note=STOPPED_EARLY_NOTE.encode()
    )
    reply = SimpleNamespace(
        role="assistant", content="ha", outcome="stopped", outcome_note=STOPPED_NOTE.encode()
    )
    shown = texts(views.chat_messages([question, reply]))
    assert shown == [
        ("user", "hi"),
        ("assistant", f"_⏹ {STOPPED_EARLY_NOTE.text}_"),
        ("assistant", f"ha\n\n{views.STOPPED_NOTE}"),
    ]
    # A note is shown as typed: an error quoting markup does not become markup.
    odd = SimpleNamespace(role="user", content="x", outcome="failed", outcome_note="<b>bad</b>")
    assert texts(views.chat_messages([odd]))[-1] == (
        "assistant",
        "⚠️ **Not answered.** &lt;b>bad&lt;/b>",
    )
