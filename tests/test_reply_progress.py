"""A reply streams into the database as it arrives (issue 15, item 4): a process SIGKILLed
mid-reply keeps what had streamed up to the last progress save, marked incomplete, searchable
and recalled like any message. A real subprocess, the real google-genai client, the fake
Gemini server streaming slowly, real SQLite."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import sys
import threading
from pathlib import Path

import pytest

from assistant.chat import ChatService
from assistant.embedding import select_embedder
from assistant.gemini import GeminiModel
from assistant.outcome_notes import INTERRUPTED, INTERRUPTED_NOTE
from assistant.turn_state import PROGRESS_CHARS
from memory import ConversationStore
from memory.recall import query_terms, recall_query
from personas import PersonaRegistry
from ui import views

ROOT = Path(__file__).resolve().parent.parent
CHAT_TURN = Path(__file__).resolve().parent / "helpers" / "chat_turn.py"
OWNER = "b-owner-aaaaaaaaaaaaaaaa"
WORDS = [f"chunk{i}word " for i in range(60)]


class Counting:
    """An embedder that counts the texts it is given."""

    def __init__(self, inner):
        self.inner, self.name, self.dims = inner, inner.name, inner.dims
        self.knows_cjk = inner.knows_cjk
        self.averages_tokens = inner.averages_tokens
        self.texts = 0

    async def embed(self, texts):
        self.texts += len(texts)
        return await self.inner.embed(texts)


def stored_reply(path):
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT content FROM turns WHERE role = 'assistant'").fetchall()
    return rows[0][0] if rows else ""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
async def test_a_reply_killed_mid_stream_keeps_what_had_streamed(tmp_path, fake):
    fake.reply(*WORDS, chunk_delay=0.15)  # ~9 s in all: progress saves every second
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHAT_TURN),
        str(tmp_path),
        fake.url,
        OWNER,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    first = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    assert first.startswith(b"conversation "), (first, await proc.stderr.read())
    conv = first.split()[1].decode()
    db_path = tmp_path / "mnemo.db"
    # Wait for a progress save that rewrote the reply (not just its first save), then kill.
    seen = []
    async with asyncio.timeout(60):
        while len(seen) < 2 or len(seen[-1]) <= len(seen[0]):
            await asyncio.sleep(0.05)
            text = stored_reply(db_path)
            if text and (not seen or text != seen[-1]):
                seen.append(text)
    proc.send_signal(signal.SIGKILL)
    streamed = (await proc.stdout.read()).decode()
    assert await proc.wait() == -signal.SIGKILL
    assert "done" not in streamed.splitlines()

    with contextlib.closing(sqlite3.connect(db_path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('integrity-check')")
    async with await ConversationStore.open(tmp_path) as store:
        question, reply = await store.transcript(OWNER, conv)
        assert reply.content.startswith("chunk0word chunk1word") and reply.content in "".join(WORDS)
        assert len(reply.content) >= len(seen[-1])  # at most the last moment is lost
        assert (reply.outcome, reply.outcome_note, reply.incomplete) == (
            "incomplete",
            INTERRUPTED_NOTE.encode(),
            True,
        )
        conversation = await store.get_conversation(OWNER, conv)
        assert conversation.chars == len(question.content) + len(reply.content)
        assert conversation.message_count == 2
        # Both indexes hold the saved text, not the first save's: search and recall find it.
        last_word = reply.content.split()[-1]
        hits = await store.search(OWNER, last_word)
        assert [h.turn_id for h in hits] == [reply.id]
        with contextlib.closing(sqlite3.connect(db_path)) as db:
            match = recall_query(conv, query_terms(last_word))
            assert db.execute(
                "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ?", (match,)
            ).fetchall() == [(reply.id,)]
        # Reopened, the chat shows it marked incomplete.
        shown = views.chat_messages(await store.transcript(OWNER, conv))
        assert INTERRUPTED in shown[-1]["content"] and "Incomplete" in shown[-1]["content"]
        # Deleting it takes its index entries with it (the old text left them on each save).
        await store.reset(OWNER, conv)
    with contextlib.closing(sqlite3.connect(db_path)) as db:
        first_word = seen[0].split()[-1]
        for word in (first_word, last_word):
            match = recall_query(conv, query_terms(word))
            assert (
                db.execute(
                    "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ?", (match,)
                ).fetchall()
                == []
            )


async def test_progress_saves_end_in_one_complete_reply(tmp_path, fake):
    """A reply long enough for progress saves ends as ONE turn, complete, with its vector,
    embedded once when final (its progress saves are not embedded), after the turn."""
    embedder = Counting(select_embedder())  # the app's default
    store = await ConversationStore.open(tmp_path, embedder=embedder)
    model = GeminiModel("k", base_url=fake.url)
    service = ChatService(store, PersonaRegistry(data_dir=tmp_path), model)
    try:
        conv = (await store.create_conversation(OWNER)).id
        chunks = ["x" * 2100 + " ", "zebra " * 400, "y" * 2100 + " ", "final words."]
        assert len("".join(chunks)) > 2 * PROGRESS_CHARS
        fake.reply(*chunks)
        async for _ in service.send(OWNER, conv, "Write a lot"):
            pass
        await service.wait_background()
        await store.flush_vectors()
        # The question and its content words (one call: recall, the question's kept to be
        # stored) and the final reply.
        assert embedder.texts == 3
        question, reply = await store.transcript(OWNER, conv)
        assert reply.content == "".join(chunks)
        assert (reply.outcome, reply.incomplete) == (None, False)
        assert (await store.get_conversation(OWNER, conv)).chars == len(question.content) + len(
            reply.content
        )
        with contextlib.closing(sqlite3.connect(tmp_path / "mnemo.db")) as db:
            [(count,)] = db.execute(
                "SELECT count(*) FROM turn_vectors WHERE turn_id = ?", (reply.id,)
            ).fetchall()
        assert count == 1
        assert [h.turn_id for h in await store.search(OWNER, "final words")] == [reply.id]
    finally:
        await service.wait_background()
        await store.close()
        await model.aclose()


async def test_stopped_after_a_progress_save_keeps_one_stopped_reply(tmp_path, fake):
    store = await ConversationStore.open(tmp_path)
    model = GeminiModel("k", base_url=fake.url)
    service = ChatService(store, PersonaRegistry(data_dir=tmp_path), model)
    try:
        conv = (await store.create_conversation(OWNER)).id
        gate = threading.Event()
        fake.reply("a" * (PROGRESS_CHARS + 10), "never", gate=gate)
        stream = service.send(OWNER, conv, "Go")
        await anext(stream)  # the first chunk is past PROGRESS_CHARS: saved at once
        async with asyncio.timeout(10):
            while len(stored_reply(tmp_path / "mnemo.db")) != PROGRESS_CHARS + 10:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        await stream.aclose()
        gate.set()
        await service.wait_background()
        _question, reply = await store.transcript(OWNER, conv)
        assert (reply.content, reply.outcome) == ("a" * (PROGRESS_CHARS + 10), "stopped")
    finally:
        await service.wait_background()
        await store.close()
        await model.aclose()
