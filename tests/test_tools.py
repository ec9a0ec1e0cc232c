"""Tools with notes: every tool path through the real google-genai client against the fake
Gemini server — function call → result sent back → final answer — and the note each call
leaves on the user's side of the history, in later requests and in summaries."""

from __future__ import annotations

import datetime as dt
import sqlite3
from zoneinfo import ZoneInfo

import pytest

from assistant import ChatService, Delta, Done
from assistant.chat import ToolUsed
from assistant.gemini import MAX_TOOL_ROUNDS, GeminiModel
from assistant.local import LocalModel
from assistant.tools import NOTE_PREFIX, Toolbox
from memory import ConversationStore, ExtractiveSummarizer
from personas import PersonaRegistry

OWNER = "ana"
NOON_UTC = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC).timestamp()


@pytest.fixture
async def env(tmp_path, fake):
    model = GeminiModel("test-key", base_url=fake.url)
    store = await ConversationStore.open(tmp_path, summarizer=ExtractiveSummarizer())
    service = ChatService(store, PersonaRegistry(data_dir=tmp_path), model, clock=lambda: NOON_UTC)
    yield service, store
    await service.wait_background()
    await store.close()
    await model.aclose()


async def send(service, conv_id, text):
    return [e async for e in service.send(OWNER, conv_id, text)]


async def test_remember_round_trip_pins_the_fact_and_leaves_a_note(env, fake, tmp_path):
    service, store = env
    conv = await store.create_conversation(OWNER)
    fake.call("remember", fact="I'm vegetarian")
    fake.reply("Noted: ", "you are vegetarian.")
    events = await send(service, conv.id, "Remember that I'm vegetarian.")

    used = [e for e in events if isinstance(e, ToolUsed)]
    assert [(u.name, u.status) for u in used] == [("remember", "ok")]
    assert "".join(e.text for e in events if isinstance(e, Delta)) == "Noted: you are vegetarian."
    assert events[-1].reply == "Noted: you are vegetarian."
    first, second = fake.requests
    assert set(first.function_names) == {"remember", "search_memory", "today"}
    assert second.function_calls == [{"name": "remember", "args": {"fact": "I'm vegetarian"}}]
    assert second.function_responses == [
        {
            "name": "remember",
            "response": {"pinned": "I'm vegetarian", "where": "this conversation"},
        }
    ]
    assert [p.content for p in await store.pinned(OWNER, conv.id)] == ["I'm vegetarian"]

    history = await store.transcript(OWNER, conv.id)
    assert [(t.role, t.origin) for t in history] == [
        ("user", None),
        ("user", "tool"),
        ("assistant", None),
    ]
    note = history[1].content
    assert (
        note == NOTE_PREFIX + 'remember(fact="I\'m vegetarian") → ok, pinned to this conversation'
    )
    assert "Noted" not in note  # a note, never the assistant's words

    fake.reply("Lentil soup.")
    await send(service, conv.id, "What should I cook?")
    later = fake.last
    assert "- I'm vegetarian" in later.system_text  # the pin
    assert later.turns[0] == ("user", "Remember that I'm vegetarian.\n\n" + note)  # user side
    assert later.turns[1] == ("model", "Noted: you are vegetarian.")
    await service.wait_background()
    with sqlite3.connect(tmp_path / "mnemo.db") as db:
        tokens = db.execute("SELECT input_tokens FROM turn_metrics ORDER BY id").fetchall()
    assert tokens[0] == (22,)  # both rounds of the tool turn are counted (11 + 11)


async def test_search_memory_is_the_sidebar_search_over_the_users_own_conversations(env, fake):
    service, store = env
    older = await store.create_conversation(OWNER, title="Invoices")
    await store.append(OWNER, older.id, "user", "Kestrel owes us 12,400 EUR.")
    theirs = await store.create_conversation("bob")
    await store.append("bob", theirs.id, "user", "Kestrel is my cat.")
    conv = await store.create_conversation(OWNER)
    fake.call("search_memory", "Let me look. ", query="Kestrel")
    fake.reply("Kestrel owes 12,400 EUR.")
    events = await send(service, conv.id, "What does Kestrel owe?")

    (response,) = fake.last.function_responses
    matches = response["response"]["matches"]
    assert [(m["conversation"], m["snippet"]) for m in matches] == [
        ("Invoices", "Kestrel owes us 12,400 EUR.")
    ]  # bob's cat stays bob's
    assert [e.note for e in events if isinstance(e, ToolUsed)] == [
        NOTE_PREFIX + 'search_memory(query="Kestrel") → ok, 1 match'
    ]
    assert events[-1].reply == "Let me look. Kestrel owes 12,400 EUR."
    sidebar = await store.search(OWNER, "Kestrel")  # the same search, this chat included
    assert {h.conversation_id for h in sidebar} == {older.id, conv.id}


@pytest.mark.parametrize(
    "zone,expected",
    [
        ("Asia/Taipei", {"date": "2026-12-01", "weekday": "Tuesday", "time": "20:00"}),
        ("America/Los_Angeles", {"date": "2026-12-01", "weekday": "Tuesday", "time": "04:00"}),
        (None, {"date": "2026-12-01", "weekday": "Tuesday", "time": "12:00"}),
    ],
)
async def test_today_is_in_the_users_time_zone(env, fake, zone, expected):
    service, store = env
    if zone:
        await store.set_time_zone(OWNER, zone)
    conv = await store.create_conversation(OWNER)
    fake.call("today")
    fake.reply("It is Tuesday.")
    events = await send(service, conv.id, "What day is it?")
    (response,) = fake.last.function_responses
    assert response["response"] == {**expected, "time_zone": zone or "UTC"}
    (used,) = [e for e in events if isinstance(e, ToolUsed)]
    assert used.note.startswith(NOTE_PREFIX + "today() → ok, Tuesday 2026-12-01")
    local = dt.datetime.fromtimestamp(NOON_UTC, ZoneInfo(zone or "UTC"))
    assert local.strftime("%H:%M") == expected["time"]


@pytest.mark.parametrize(
    "name,args,error",
    [
        ("launch_rockets", {}, "there is no tool named 'launch_rockets'"),
        ("remember", {"fact": "   "}, "The fact is empty"),
        ("remember", {"fact": "x" * 501}, "at most 500"),
        ("search_memory", {"query": ""}, "give words to search for"),
    ],
)
async def test_a_failing_tool_is_an_error_result_the_model_explains(env, fake, name, args, error):
    service, store = env
    conv = await store.create_conversation(OWNER)
    fake.call(name, **args)
    fake.reply("Sorry, that did not work.")
    events = await send(service, conv.id, "Do the thing.")
    (response,) = fake.last.function_responses
    assert error in response["response"]["error"]
    (used,) = [e for e in events if isinstance(e, ToolUsed)]
    assert used.status == "error" and "→ error" in used.note
    assert isinstance(events[-1], Done) and await store.pinned(OWNER, conv.id) == []


async def test_remember_about_me_needs_the_users_opt_in(env, fake):
    service, store = env
    conv = await store.create_conversation(OWNER)
    fake.call("remember", fact="I live in Porto", about_me=True)
    fake.reply("Noted.")
    await send(service, conv.id, "Remember I live in Porto, everywhere.")
    assert await store.about_me(OWNER) == []  # off by default: pinned here instead
    assert [p.content for p in await store.pinned(OWNER, conv.id)] == ["I live in Porto"]
    await store.set_about_me(OWNER, True)
    fake.call("remember", fact="I speak Portuguese", about_me=True)
    fake.reply("Noted.")
    await send(service, conv.id, "And that I speak Portuguese, everywhere.")
    assert [p.content for p in await store.about_me(OWNER)] == ["I speak Portuguese"]


async def test_a_model_that_keeps_calling_gets_no_tools_on_the_last_round(env, fake):
    service, store = env
    conv = await store.create_conversation(OWNER)
    for _ in range(MAX_TOOL_ROUNDS):
        fake.call("today")
    fake.reply("Tuesday, finally.")
    events = await send(service, conv.id, "What day is it?")
    assert len([e for e in events if isinstance(e, ToolUsed)]) == MAX_TOOL_ROUNDS
    assert [bool(r.function_names) for r in fake.requests] == [True] * MAX_TOOL_ROUNDS + [False]
    assert events[-1].reply == "Tuesday, finally."


async def test_retry_after_a_tool_turn_drops_its_notes_and_calls_again(env, fake):
    service, store = env
    conv = await store.create_conversation(OWNER)
    fake.call("today")
    fake.reply("Tuesday.")
    await send(service, conv.id, "What day is it?")
    fake.call("today")
    fake.reply("It is Tuesday.")
    events = [e async for e in service.retry(OWNER, conv.id)]
    assert events[-1].reply == "It is Tuesday."
    history = await store.transcript(OWNER, conv.id)
    assert [(t.role, t.is_tool_note) for t in history] == [
        ("user", False),
        ("user", True),
        ("assistant", False),
    ]
    assert fake.last.turns[0][1].startswith("What day is it?")


async def test_tool_notes_reach_the_summary(env, fake):
    service, store = env
    conv = await store.create_conversation(OWNER)
    fake.call("search_memory", query="Kestrel invoice")
    fake.reply("Nothing found.")
    await send(service, conv.id, "Find the Kestrel invoice.")
    for i in range(98):
        await store.append(OWNER, conv.id, "assistant" if i % 2 == 0 else "user", f"filler {i}")
    assert await store.summarize_if_needed(OWNER, conv.id)
    summary = (await store.context(OWNER, conv.id)).summary.content
    assert '- Tool: Tool note: search_memory(query="Kestrel invoice") → ok, 0 matches' in summary


def test_the_offline_model_does_without_tools():
    assert not getattr(LocalModel, "supports_tools", False)
    assert GeminiModel.supports_tools
    assert {d["name"] for d in Toolbox.declarations(None)} == {"remember", "search_memory", "today"}
