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
from assistant.turn_state import FAILED_UNEXPECTEDLY, STOPPED, STOPPED_EARLY, outcome_of
from memory import ConversationNotFound, ConversationStore, InvalidInput
from memory.migrations import MIGRATIONS
from ui import chat as chat_pane
from ui import page, sidebar, views

OWNER = "b-owner-aaaaaaaaaaaaaaaa"


async def send(rt, conversation_id, text, chat=None):
    """What the browser does on Enter: accept, then stream; returns the last view."""
    _box, chat, pending, _notice, _done = chat_pane.accept_message(text, chat or [])
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
        with pytest.raises(InvalidInput, match="needs an outcome"):
            await store.set_outcome(OWNER, conv, turn.id, None, "a note without an outcome")
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
    chat, _, _ = chat_pane.begin_retry(reloaded.chat)
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
    assert reply.outcome == "failed" and "broke off" in reply.outcome_note
    reloaded = await page.open_latest(rt, OWNER)
    role, shown = texts(reloaded.chat)[-1]
    assert role == "assistant" and shown.startswith("Rain is likely")
    assert "incomplete" in shown and reply.outcome_note in shown


async def test_a_reply_cut_at_the_length_limit_says_so_after_a_reload(rt, fake):
    fake.reply("A long answer that", finish_reason="MAX_TOKENS")
    live = await send(rt, None, "Explain everything")
    reloaded = await page.open_latest(rt, OWNER)
    role, shown = texts(reloaded.chat)[-1]
    assert role == "assistant" and "length limit" in shown and "continue" in shown
    assert texts(live.chat)[-1] == (role, shown)


def test_every_outcome_has_a_note_in_the_chat():
    assert outcome_of("stopped", None, None) == ("stopped", STOPPED)
    assert outcome_of("error", ModelUnavailable("Gemini broke off."), None) == (
        "failed",
        "Gemini broke off.",
    )
    assert outcome_of("error", KeyError("bug"), None) == ("failed", FAILED_UNEXPECTEDLY)
    assert outcome_of("ok", None, "Cut at the limit.") == ("incomplete", "Cut at the limit.")
    assert outcome_of("ok", None, None) == (None, None)
    question = SimpleNamespace(
        role="user", content="hi", outcome="stopped", outcome_note=STOPPED_EARLY
    )
    reply = SimpleNamespace(role="assistant", content="ha", outcome="stopped", outcome_note=STOPPED)
    shown = texts(views.chat_messages([question, reply]))
    assert shown == [
        ("user", "hi"),
        ("assistant", f"_⏹ {STOPPED_EARLY}_"),
        ("assistant", f"ha\n\n{views.STOPPED_NOTE}"),
    ]
    # A note is shown as typed: an error quoting markup does not become markup.
    odd = SimpleNamespace(role="user", content="x", outcome="failed", outcome_note="<b>bad</b>")
    assert texts(views.chat_messages([odd]))[-1] == (
        "assistant",
        "⚠️ **Not answered.** &lt;b>bad&lt;/b>",
    )
