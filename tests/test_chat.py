"""ChatService end to end: real SQLite in a tmp dir, real personas, the real google-genai client
against the local fake Gemini server. We assert on what the SDK actually sent."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import sqlite3
import threading
from types import SimpleNamespace

import pytest
from fake_gemini import Reply

from assistant import (
    BlockedBySafety,
    ChatService,
    Cleared,
    Delta,
    Done,
    InvalidMessage,
    ModelUnavailable,
    NothingToRetry,
    QuotaExceeded,
    RateLimited,
)
from assistant.chat import compose_system
from assistant.failopen import FailOpenStore
from assistant.gemini import GeminiModel
from assistant.runtime import Runtime
from assistant.summarizer import GeminiSummarizer, summarizer_for
from memory import (
    MEMORY_NOTE_HEADER,
    ContextWindow,
    ConversationStore,
    ExtractiveSummarizer,
    MemoryPolicy,
    RecalledTurn,
    StorageUnavailable,
    Turn,
)
from personas import PersonaRegistry, build_system_prompt
from ui.badge import badge_text

OWNER = "owner-a"
TAIPEI = "Will it rain in Taipei tomorrow?"
KAOHSIUNG = "And Kaohsiung?"


@pytest.fixture
async def make_env(tmp_path, fake):
    """A factory: `await make_env(policy=..., store=..., quota=...)` builds a ChatService over
    real SQLite in tmp_path and personas; everything it built is closed after the test."""
    built = []

    async def make(*, policy=None, summarizer=None, store=None, quota=None):
        model = GeminiModel("test-key", base_url=fake.url)
        if store is None:
            store = await ConversationStore.open(
                tmp_path,
                policy=policy or MemoryPolicy(),
                summarizer=summarizer or summarizer_for(model),
            )
        registry = PersonaRegistry(data_dir=tmp_path)
        service = ChatService(store, registry, model, quota_per_hour=quota)
        env = SimpleNamespace(model=model, store=store, registry=registry, service=service)
        built.append(env)
        return env

    yield make
    for env in built:
        await env.service.wait_background()
        await env.store.close()
        await env.model.aclose()
        await env.service.model.aclose()  # a test may have swapped in another client


@pytest.fixture
async def env(make_env):
    return await make_env()


async def turn(service, conv_id, text, owner=OWNER):
    return [event async for event in service.send(owner, conv_id, text)]


def done_of(events) -> Done:
    assert isinstance(events[-1], Done), events
    return events[-1]


async def new_conv(env, persona_id="assistant", owner=OWNER):
    return (await env.store.create_conversation(owner, persona_id=persona_id)).id


def metrics_rows(tmp_path):
    with sqlite3.connect(tmp_path / "mnemo.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM turn_metrics ORDER BY id")]


# -- the memory scenarios ----------------------------------------------------------------


async def test_second_message_carries_the_first_exchange(env, fake):
    conv = await new_conv(env)
    fake.reply("Yes, ", "bring an umbrella.")
    first = await turn(env.service, conv, TAIPEI)
    assert [e.text for e in first if isinstance(e, Delta)] == ["Yes, ", "bring an umbrella."]
    assert done_of(first).reply == "Yes, bring an umbrella."
    assert done_of(first).model == "Gemini 2.5 Flash"

    fake.reply("Sunny in Kaohsiung.")
    await turn(env.service, conv, KAOHSIUNG)

    first_request, second_request = fake.requests
    assert first_request.turns == [("user", TAIPEI)]
    assert second_request.turns == [
        ("user", TAIPEI),
        ("model", "Yes, bring an umbrella."),
        ("user", KAOHSIUNG),
    ]
    persona = env.registry.get(OWNER, "assistant").persona
    assert second_request.system_text == build_system_prompt(persona)
    assert MEMORY_NOTE_HEADER not in second_request.system_text  # no summary yet


async def test_after_reset_the_request_carries_nothing(env, fake, tmp_path):
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    await turn(env.service, conv, KAOHSIUNG)
    await env.service.wait_background()
    requests_before = len(fake.requests)
    metrics_before = len(metrics_rows(tmp_path))

    events = await turn(env.service, conv, "  /Reset  ")
    assert len(events) == 1 and isinstance(events[0], Cleared)
    assert events[0].result.turns == 4
    assert len(fake.requests) == requests_before  # no model call
    await env.service.wait_background()
    assert len(metrics_rows(tmp_path)) == metrics_before  # no quota used

    await turn(env.service, conv, KAOHSIUNG)
    assert fake.last.turns == [("user", KAOHSIUNG)]
    assert (await env.service.status(OWNER, conv)).active == 2


@pytest.mark.parametrize("text", ["/reset", "/RESET", " /reset\n", "\t/ReSeT "])
async def test_reset_command_variants(env, fake, text):
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    events = await turn(env.service, conv, text)
    assert [type(e) for e in events] == [Cleared]
    assert (await env.store.transcript(OWNER, conv)) == []


@pytest.mark.parametrize("text", ["/reset now", "please /reset", "/resets", "/ reset"])
async def test_not_the_reset_command(env, fake, text):
    conv = await new_conv(env)
    events = await turn(env.service, conv, text)
    assert isinstance(events[-1], Done)
    assert fake.last.turns == [("user", text)]


async def test_persona_prompt_and_temperature_and_hot_edit(env, fake):
    conv = await new_conv(env, persona_id="finance")
    await turn(env.service, conv, "Should we give a 20% discount?")
    finance = env.registry.get(OWNER, "finance").persona
    assert fake.last.system_text == build_system_prompt(finance)
    if finance.temperature is not None:
        assert fake.last.generation_config["temperature"] == finance.temperature

    edited = env.registry.get(OWNER, "finance").yaml_text.replace(
        "veto_threshold_pct: 15", "veto_threshold_pct: 25"
    )
    assert edited != env.registry.get(OWNER, "finance").yaml_text
    env.registry.save(OWNER, edited)
    await turn(env.service, conv, "And 10%?")
    assert "25" in fake.last.system_text
    assert fake.last.system_text == build_system_prompt(env.registry.get(OWNER, "finance").persona)


async def test_history_is_clipped_but_the_new_message_goes_whole(env, fake):
    conv = await new_conv(env)
    long_old = "old " * 1000  # 4,000 chars: clipped to 2,000 for the prompt
    long_new = "new " * 1500  # 6,000 chars
    await turn(env.service, conv, long_old)
    await turn(env.service, conv, long_new)
    sent = fake.last.turns
    assert sent[0][0] == "user" and len(sent[0][1]) == 2000 and "[…]" in sent[0][1]
    assert sent[-1] == ("user", long_new)


async def test_summary_reaches_the_model_as_a_labelled_memory_note(make_env, tmp_path, fake):
    def answer(request):
        if request.action == "generateContent":  # the summarizer
            return Reply(["- User asked about rain in Taipei (tomorrow)."])
        return Reply(["ok"])

    fake.default = answer
    env = await make_env(policy=MemoryPolicy(keep_recent=2, summarize_at=4))
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    await turn(env.service, conv, KAOHSIUNG)  # 4 active messages: summarization is due
    await env.service.wait_background()
    assert isinstance(env.store.summarizer, GeminiSummarizer)
    summary_request = fake.of("generateContent")[0]
    prompt = summary_request.turns[0][1]
    assert TAIPEI in prompt and "Previous memory" in prompt
    assert "Keep every name, number" in summary_request.system_text

    await turn(env.service, conv, "What did I ask first?")
    request = fake.last
    assert MEMORY_NOTE_HEADER in request.system_text
    assert "- User asked about rain in Taipei (tomorrow)." in request.system_text
    assert request.turns == [
        ("user", KAOHSIUNG),
        ("model", "ok"),
        ("user", "What did I ask first?"),
    ]
    preview = await env.service.preview(OWNER, conv)
    assert preview.summary == "- User asked about rain in Taipei (tomorrow)."


def test_memory_note_labels_summary_and_recalled_turns():
    summary = Turn(9, "c", "summary", "- User: lives in Porto.", 1.0, is_summary=True)
    recalled = RecalledTurn(
        turn=Turn(3, "c", "user", "The restaurant was Casa Guedes.", 1_795_942_800.0),
        matched=("restaurant",),
    )
    window = ContextWindow(summary=summary, turns=[], chars=60, budget=12_000, recalled=[recalled])
    system = compose_system("Persona: Mnemo", window)
    assert system == (
        "Persona: Mnemo\n\n"
        + MEMORY_NOTE_HEADER
        + "\n\nSummary of the earlier conversation:\n- User: lives in Porto."
        + "\n\nRecalled older messages that match the new message, oldest first, under the "
        + "date they were written (a date in [= ...] is what a relative date in the message "
        + "meant):\n[Sunday, 29 November 2026]\nUser: The restaurant was Casa Guedes."
    )
    empty = ContextWindow(summary=None, turns=[], chars=0, budget=12_000)
    assert compose_system("Persona: Mnemo", empty) == "Persona: Mnemo"


async def test_background_summarization_never_delays_the_reply(make_env, tmp_path, fake):
    class SlowSummarizer:
        def __init__(self):
            self.release = asyncio.Event()

        async def summarize(self, previous, turns, max_chars):
            await self.release.wait()
            return "- User: Taipei and Kaohsiung weather."

    slow = SlowSummarizer()
    env = await make_env(policy=MemoryPolicy(keep_recent=2, summarize_at=4), summarizer=slow)
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    done = done_of(await turn(env.service, conv, KAOHSIUNG))
    assert done.status == "ok"  # the reply arrived while the summarizer is stuck
    status = await env.service.status(OWNER, conv)
    assert status.summarizing
    assert badge_text(status, "Gemini 2.5 Flash").startswith("🗜️ Summarizing…")
    # Another turn goes through meanwhile too.
    assert done_of(await turn(env.service, conv, "Thanks")).status == "ok"
    slow.release.set()
    await env.service.wait_background()
    status = await env.service.status(OWNER, conv)
    assert not status.summarizing and status.summaries == 1


# -- preview, retry, undo ----------------------------------------------------------------


async def test_preview_is_exactly_what_the_next_request_carries(env, fake):
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    preview = await env.service.preview(OWNER, conv)
    await turn(env.service, conv, KAOHSIUNG)
    assert fake.last.system_text == preview.system_instruction
    role = {"user": "user", "assistant": "model"}
    assert fake.last.turns[:-1] == [(role[t["role"]], t["content"]) for t in preview.turns]
    assert preview.chars == sum(len(t["content"]) for t in preview.turns)
    assert preview.budget == 16_000 and preview.persona_id == "assistant"


async def test_retry_regenerates_the_last_reply_from_the_same_history(env, fake):
    conv = await new_conv(env)
    fake.reply("first try")
    await turn(env.service, conv, TAIPEI)
    fake.reply("second try")
    events = [e async for e in env.service.retry(OWNER, conv)]
    assert done_of(events).reply == "second try"
    assert fake.requests[1].turns == fake.requests[0].turns == [("user", TAIPEI)]
    transcript = await env.store.transcript(OWNER, conv)
    assert [(t.role, t.content) for t in transcript] == [
        ("user", TAIPEI),
        ("assistant", "second try"),
    ]


async def test_retry_with_nothing_to_answer(env, fake):
    conv = await new_conv(env)
    with pytest.raises(NothingToRetry):
        _ = [e async for e in env.service.retry(OWNER, conv)]
    assert fake.requests == []


async def test_undo_drops_the_last_exchange_from_memory(env, fake):
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    await turn(env.service, conv, KAOHSIUNG)
    dropped = await env.service.undo(OWNER, conv)
    assert [t.content for t in dropped] == [KAOHSIUNG, f"You said: {KAOHSIUNG}"]
    await turn(env.service, conv, "Tainan?")
    assert [text for _, text in fake.last.turns] == [
        TAIPEI,
        f"You said: {TAIPEI}",
        "Tainan?",
    ]


# -- errors: each gives its message and keeps the user's turn ------------------------------


@pytest.mark.parametrize(
    "status,expected,words",
    [
        (429, RateLimited, "retry"),
        (500, ModelUnavailable, "Retry in a moment"),
    ],
)
async def test_http_errors_keep_the_users_turn(env, fake, tmp_path, status, expected, words):
    conv = await new_conv(env)
    fake.error(status)
    with pytest.raises(expected) as caught:
        await turn(env.service, conv, TAIPEI)
    assert words in caught.value.message
    transcript = await env.store.transcript(OWNER, conv)
    assert [(t.role, t.content) for t in transcript] == [("user", TAIPEI)]
    await env.service.wait_background()
    [row] = metrics_rows(tmp_path)
    assert row["status"] == "error" and row["error_kind"] == expected.kind

    # The next message still carries the unanswered one.
    await turn(env.service, conv, KAOHSIUNG)
    assert fake.last.turns == [("user", f"{TAIPEI}\n\n{KAOHSIUNG}")]


async def test_connection_refused_keeps_the_users_turn(make_env, tmp_path, fake):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = await make_env()
    env.service.model = GeminiModel("k", base_url=f"http://127.0.0.1:{port}")
    conv = await new_conv(env)
    with pytest.raises(ModelUnavailable, match="Could not reach Gemini"):
        await turn(env.service, conv, TAIPEI)
    transcript = await env.store.transcript(OWNER, conv)
    assert [(t.role, t.content) for t in transcript] == [("user", TAIPEI)]


async def test_stream_breaking_half_way_keeps_the_partial_reply(env, fake):
    conv = await new_conv(env)
    fake.reply("Rain ", "is likely ", "in the afternoon.", break_after=2)
    deltas = []
    with pytest.raises(ModelUnavailable, match="broke off") as caught:
        async for event in env.service.send(OWNER, conv, TAIPEI):
            deltas.append(event.text)
    assert deltas == ["Rain ", "is likely "]
    assert caught.value.partial == "Rain is likely "
    transcript = await env.store.transcript(OWNER, conv)
    assert [(t.role, t.content, t.incomplete) for t in transcript] == [
        ("user", TAIPEI, False),
        ("assistant", "Rain is likely ", True),
    ]


async def test_safety_block_is_refused_and_keeps_the_turn(env, fake, tmp_path):
    conv = await new_conv(env)
    fake.blocked("prompt")
    with pytest.raises(BlockedBySafety, match="Rephrase"):
        await turn(env.service, conv, "something blocked")
    assert [t.role for t in await env.store.transcript(OWNER, conv)] == ["user"]
    await env.service.wait_background()
    assert metrics_rows(tmp_path)[0]["status"] == "refused"


@pytest.mark.parametrize("text", ["", "   \n", "x" * 10_001])
async def test_invalid_messages_are_refused_before_anything(env, fake, text):
    conv = await new_conv(env)
    with pytest.raises(InvalidMessage):
        await turn(env.service, conv, text)
    assert fake.requests == [] and await env.store.transcript(OWNER, conv) == []


async def test_a_message_of_exactly_the_limit_goes_through(env, fake):
    conv = await new_conv(env)
    await turn(env.service, conv, "字" * 10_000)
    assert len(fake.last.turns[-1][1]) == 10_000


# -- stopping ----------------------------------------------------------------------------


async def test_closing_the_stream_keeps_the_partial_reply(env, fake, tmp_path, caplog):
    conv = await new_conv(env)
    gate = threading.Event()
    fake.reply("The forecast ", "says rain.", gate=gate)
    stream = env.service.send(OWNER, conv, TAIPEI)
    assert await anext(stream) == Delta("The forecast ")
    await stream.aclose()  # what the app does on Stop
    gate.set()
    await env.service.wait_background()
    transcript = await env.store.transcript(OWNER, conv)
    assert [(t.role, t.content, t.incomplete) for t in transcript] == [
        ("user", TAIPEI, False),
        ("assistant", "The forecast ", True),
    ]
    assert metrics_rows(tmp_path)[0]["status"] == "stopped"
    # The SDK's stream was unwound in order, not left half-read to the garbage collector.
    gc.collect()
    await asyncio.sleep(0.05)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_cancelling_the_task_keeps_the_partial_reply(env, fake):
    conv = await new_conv(env)
    gate = threading.Event()
    fake.reply("Partly ", "cloudy.", gate=gate)
    first = asyncio.Event()

    async def consume():
        async for _event in env.service.send(OWNER, conv, TAIPEI):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    await env.service.wait_background()
    transcript = await env.store.transcript(OWNER, conv)
    assert [(t.content, t.incomplete) for t in transcript] == [(TAIPEI, False), ("Partly ", True)]


# -- quota (fail-closed) and storage (fail-open) --------------------------------------------


async def test_quota_refuses_past_the_limit(make_env, tmp_path, fake):
    env = await make_env(quota=2)
    conv = await new_conv(env)
    await turn(env.service, conv, "one")
    await env.service.wait_background()
    await turn(env.service, conv, "two")
    await env.service.wait_background()
    with pytest.raises(QuotaExceeded, match="2 messages in the last hour"):
        await turn(env.service, conv, "three")
    assert len(fake.requests) == 2
    assert [t.content for t in await env.store.transcript(OWNER, conv)][-1] != "three"
    # Reset still works when over quota; other owners are not affected.
    assert isinstance((await turn(env.service, conv, "/reset"))[0], Cleared)
    other = await new_conv(env, owner="owner-b")
    assert isinstance((await turn(env.service, other, "hi", owner="owner-b"))[-1], Done)


async def test_quota_fails_closed_when_it_cannot_be_counted(make_env, tmp_path, fake):
    class QuotaDown(ConversationStore):
        async def count_turn_requests(self, owner, since):
            raise StorageUnavailable("database is locked")

    store = await QuotaDown.open(tmp_path)
    env = await make_env(store=store, quota=100)
    conv = await new_conv(env)
    with pytest.raises(QuotaExceeded, match="cannot check"):
        await turn(env.service, conv, TAIPEI)
    assert fake.requests == []


async def test_broken_database_answers_without_history(make_env, tmp_path, fake):
    (tmp_path / "mnemo.db").write_bytes(b"this is not a database " * 400)
    store = await FailOpenStore.open(tmp_path)
    env = await make_env(store=store, quota=None)
    events = await turn(env.service, "some-conversation", TAIPEI)
    done = done_of(events)
    assert done.degraded and not done.saved
    assert fake.last.turns == [("user", TAIPEI)]
    # The default persona still applies.
    assert fake.last.system_text.startswith("Persona: ")
    status = await env.service.status(OWNER, "some-conversation")
    assert status.degraded
    assert badge_text(status, "Gemini 2.5 Flash").startswith("⚠️ Memory unavailable")


# -- metrics -----------------------------------------------------------------------------


async def test_metrics_are_recorded_without_text(env, fake, tmp_path):
    conv = await new_conv(env)
    fake.reply("Secret ", "answer", prompt_tokens=17, output_tokens=3)
    await turn(env.service, conv, "my secret question")
    await env.service.wait_background()
    [row] = metrics_rows(tmp_path)
    assert row["model"] == "gemini-2.5-flash"
    assert (row["input_tokens"], row["output_tokens"], row["status"]) == (17, 3, "ok")
    assert row["latency_ms"] >= row["first_token_ms"] >= 0
    assert not any("secret" in str(value).lower() for value in row.values())


async def test_unknown_or_foreign_conversation_is_not_found(env, fake):
    from memory import ConversationNotFound

    theirs = await new_conv(env, owner="owner-b")
    for conv in ("no-such-conversation", theirs):
        with pytest.raises(ConversationNotFound):
            await turn(env.service, conv, TAIPEI)
    assert fake.requests == []
    assert await env.store.transcript("owner-b", theirs) == []


async def test_reply_cut_by_the_token_limit_is_marked_incomplete(env, fake):
    conv = await new_conv(env)
    fake.reply("A long answer that", finish_reason="MAX_TOKENS")
    done = done_of(await turn(env.service, conv, TAIPEI))
    assert done.status == "incomplete" and "continue" in done.notice
    reply = (await env.store.transcript(OWNER, conv))[-1]
    assert (reply.content, reply.incomplete) == ("A long answer that", True)


@pytest.fixture
async def runtime_from_env(tmp_path, fake, monkeypatch):
    """A Runtime over tmp_path built from settings alone: Gemini on the fake server."""
    monkeypatch.setenv("MNEMO_MODEL", "gemini")
    monkeypatch.setenv("GEMINI_API_KEY", "from-env")
    monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
    runtime = Runtime(str(tmp_path))
    yield runtime
    await runtime.close()
    await runtime.model.aclose()


async def test_runtime_builds_everything_from_settings(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("MNEMO_MODEL", "gemini")
    monkeypatch.setenv("GEMINI_API_KEY", "from-env")
    monkeypatch.setenv("GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("MNEMO_QUOTA_PER_HOUR", "7")
    runtime = Runtime(str(tmp_path))
    try:
        await _runtime_builds_everything(runtime, tmp_path, fake)
    finally:
        await runtime.close()
        await runtime.model.aclose()


async def _runtime_builds_everything(runtime_from_env, tmp_path, fake):
    service = await runtime_from_env.service()
    assert service.quota_per_hour == 7
    assert isinstance(service.store.store.summarizer, GeminiSummarizer)
    conv = (await service.store.create_conversation(OWNER)).id
    assert done_of(await turn(service, conv, TAIPEI)).model == "Gemini 2.5 Flash"
    assert fake.last.headers["x-goog-api-key"] == "from-env"
    assert (tmp_path / "mnemo.db").exists()
    assert (await runtime_from_env.conversations()).service is service  # one of each


async def test_runtime_with_a_corrupt_database_still_answers(runtime_from_env, tmp_path):
    (tmp_path / "mnemo.db").write_bytes(b"garbage " * 1000)
    service = await runtime_from_env.service()
    conv = (await service.store.create_conversation(OWNER)).id
    done = done_of(await turn(service, conv, TAIPEI))
    assert done.degraded and not done.saved and done.reply
    assert (await service.status(OWNER, conv)).degraded
    assert (tmp_path / "mnemo.db").read_bytes() == b"garbage " * 1000  # nothing overwritten


async def test_storage_failing_mid_conversation_answers_without_history(env, fake):
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    await env.service.wait_background()
    await env.store.close()  # the database goes away under a running app
    done = done_of(await turn(env.service, conv, KAOHSIUNG))
    assert done.degraded and not done.saved and done.reply
    assert fake.last.turns == [("user", KAOHSIUNG)]
    assert (await env.service.status(OWNER, conv)).degraded


async def test_reply_blocked_half_way_keeps_what_arrived(env, fake, tmp_path):
    conv = await new_conv(env)
    fake.reply("Here is how ", "", finish_reason="SAFETY")
    with pytest.raises(BlockedBySafety) as caught:
        await turn(env.service, conv, "how do I ...")
    assert caught.value.partial == "Here is how "
    reply = (await env.store.transcript(OWNER, conv))[-1]
    assert (reply.role, reply.content, reply.incomplete) == ("assistant", "Here is how ", True)
    await env.service.wait_background()
    assert metrics_rows(tmp_path)[0]["status"] == "refused"


async def test_a_conversation_created_while_storage_was_down_still_chats(make_env, tmp_path, fake):
    (tmp_path / "mnemo.db").write_bytes(b"garbage " * 1000)
    store = await FailOpenStore.open(tmp_path)
    env = await make_env(store=store)
    conv = await store.create_conversation(OWNER, persona_id="finance")
    assert conv.id.startswith("unsaved-")  # exists only on screen
    done = done_of(await turn(env.service, conv.id, TAIPEI))
    assert done.degraded and not done.saved
    assert fake.last.turns == [("user", TAIPEI)]


async def test_recalled_turns_reach_the_model_in_the_memory_note(make_env, tmp_path, fake):
    env = await make_env(
        policy=MemoryPolicy(keep_recent=2, summarize_at=4),
        summarizer=ExtractiveSummarizer(),
    )
    conv = await new_conv(env)
    await turn(env.service, conv, "We had dinner at a restaurant called Casa Guedes.")
    await turn(env.service, conv, "Then we walked along the river.")
    await env.service.wait_background()  # the first exchange is now compacted
    await turn(env.service, conv, "Which restaurant did we go to?")
    system = fake.last.system_text
    assert MEMORY_NOTE_HEADER in system
    assert "Recalled older messages that match the new message" in system
    recalled_part = system.split("Recalled older messages")[1]
    assert "Casa Guedes" in recalled_part
    assert all("Casa Guedes" not in text for _, text in fake.last.turns)

    preview = await env.service.preview(OWNER, conv, draft="Was Casa Guedes expensive?")
    assert any("Casa Guedes" in r["content"] for r in preview.recalled)
    assert "Casa Guedes" in preview.system_instruction.split("Recalled older messages")[1]
    assert (await env.service.preview(OWNER, conv)).recalled == []


async def test_quota_counts_turns_still_in_flight(make_env, tmp_path, fake):
    env = await make_env(quota=1)
    conv = await new_conv(env)
    gate = threading.Event()
    fake.reply("slow ", "reply", gate=gate)
    first = env.service.send(OWNER, conv, "one")
    assert await anext(first) == Delta("slow ")  # admitted, no metrics row yet
    with pytest.raises(QuotaExceeded):
        await turn(env.service, conv, "two, sent from another tab")
    gate.set()
    assert isinstance([e async for e in first][-1], Done)
    await env.service.wait_background()
    assert env.service._pending == {}
    gate.set()


async def test_a_metrics_row_written_but_not_yet_released_is_counted_once(make_env, tmp_path, fake):
    """The quota adds the database's count to the turns still in flight. A turn whose
    metrics row is committed (in a thread) but whose slot is not yet released (later, on the
    loop) was counted in both: under load a roundtable's second speaker was refused at 5 of
    6. Here the gap between the two is held open while the next message is checked."""
    written, go_on = asyncio.Event(), asyncio.Event()

    class SlowToRelease(ConversationStore):
        async def record_metrics(self, owner, conv_id, metrics):
            await super().record_metrics(owner, conv_id, metrics)
            written.set()
            await go_on.wait()  # the row is in the database; the slot is still pending

    store = await SlowToRelease.open(tmp_path)
    env = await make_env(store=store, quota=2)
    conv = await new_conv(env)
    assert isinstance((await turn(env.service, conv, "one"))[-1], Done)
    await written.wait()
    second = asyncio.create_task(turn(env.service, conv, "two"))
    # Counted twice, the second message is refused at once; counted once, it waits for the
    # slot's release. Half a second is ample for a refusal to show; passing does not need it.
    await asyncio.wait([second], timeout=0.5)
    go_on.set()
    assert isinstance((await second)[-1], Done)  # 1 of 2 used: let through
    await env.service.wait_background()
    assert env.service._pending == {}
    with pytest.raises(QuotaExceeded, match="2 messages in the last hour"):
        await turn(env.service, conv, "three")


async def test_failed_turns_release_their_quota_slot(make_env, tmp_path, fake):
    env = await make_env(quota=5)
    from memory import ConversationNotFound

    with pytest.raises(ConversationNotFound):
        await turn(env.service, "missing", TAIPEI)
    conv = await new_conv(env)
    fake.error(500)
    with pytest.raises(ModelUnavailable):
        await turn(env.service, conv, TAIPEI)
    with pytest.raises(NothingToRetry):
        _ = [e async for e in env.service.retry(OWNER, await new_conv(env))]
    await env.service.wait_background()
    assert env.service._pending == {}
    assert len(metrics_rows(tmp_path)) == 1  # only the model call that happened


async def test_retry_right_after_a_summarization(make_env, tmp_path, fake):
    env = await make_env(
        policy=MemoryPolicy(keep_recent=2, summarize_at=4),
        summarizer=ExtractiveSummarizer(),
    )
    conv = await new_conv(env)
    await turn(env.service, conv, TAIPEI)
    await turn(env.service, conv, KAOHSIUNG)
    await env.service.wait_background()
    assert (await env.store.transcript(OWNER, conv))[-1].is_summary  # newest row
    fake.reply("Again: sunny.")
    done = done_of([e async for e in env.service.retry(OWNER, conv)])
    assert done.reply == "Again: sunny."
    assert fake.last.turns == [("user", KAOHSIUNG)]
