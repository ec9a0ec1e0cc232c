"""The Conversations facade: every operation the UI and the API call, over real SQLite in a tmp
dir, real personas and the real google-genai client against the local fake Gemini server."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from assistant import Cleared, Delta, Done
from assistant.errors import (
    AssistantError,
    InvalidInput,
    InvalidMessage,
    InvalidPersonaYaml,
    NotFound,
    PersonaRefused,
    PersonaUnavailable,
    ReplyStreaming,
    StorageError,
    UserError,
)
from assistant.failopen import FailOpenStore
from assistant.records import OpenConversation, PersonaInfo, SearchResults, TranscriptPage
from assistant.runtime import Runtime
from personas import BUILTIN_DIR

OWNER = "owner-a"
OTHER = "owner-b"
TAIPEI = "Will it rain in Taipei tomorrow?"


@pytest.fixture
async def conversations(rt):
    return await rt.conversations()


async def events_of(stream):
    return [event async for event in stream]


async def chat(conversations, *messages, owner=OWNER, title=None, persona_id=None):
    """A saved conversation holding `messages`, alternating user and assistant."""
    conv = await conversations.create(owner, title=title, persona_id=persona_id)
    for i, text in enumerate(messages):
        await conversations.store.append(
            owner, conv.id, "user" if i % 2 == 0 else "assistant", text
        )
    return conv.id


# -- conversations -------------------------------------------------------------------------


async def test_create_then_open_gives_one_typed_record(conversations):
    conv = await conversations.create(OWNER, persona_id="finance", retention_minutes=30)
    opened = await conversations.open(OWNER, conv.id)
    assert isinstance(opened, OpenConversation) and opened.state == "open"
    assert opened.conversation.id == conv.id and opened.conversation.retention_minutes == 30
    assert isinstance(opened.persona, PersonaInfo) and opened.persona.id == "finance"
    assert opened.persona.greeting  # rendered, for the chat's first bubble
    assert opened.transcript == TranscriptPage([], 0, None)
    assert opened.status.total == 0 and not opened.status.degraded
    assert opened.preview.persona_id == "finance" and opened.preview.system_prompt
    assert opened.model == "Gemini 2.5 Flash"


async def test_a_new_chat_opens_with_its_persona_and_no_memory(conversations):
    opened = await conversations.open(OWNER, None, persona_id="sales")
    assert opened.state == "new" and opened.conversation is None and opened.status is None
    assert opened.persona.id == "sales"
    assert opened.preview.system_prompt and opened.preview.system_instruction == ""
    unknown = await conversations.open(OWNER, None, persona_id="no-such-persona")
    assert unknown.persona.id == "assistant"  # the default persona answers


async def test_list_is_newest_activity_first_and_latest_follows_it(conversations):
    assert await conversations.latest(OWNER) is None
    first = await chat(conversations, "one")
    second = await chat(conversations, "two")
    assert [c.id for c in await conversations.list(OWNER)] == [second, first]
    await conversations.store.append(OWNER, first, "user", "first is active again")
    assert await conversations.latest(OWNER) == first


async def test_send_streams_saves_and_the_transcript_shows_it(conversations, fake):
    conv = (await conversations.create(OWNER)).id
    fake.reply("Yes, ", "bring an umbrella.")
    events = await events_of(conversations.send(OWNER, conv, TAIPEI))
    assert [e.text for e in events if isinstance(e, Delta)] == ["Yes, ", "bring an umbrella."]
    assert isinstance(events[-1], Done) and events[-1].saved
    opened = await conversations.open(OWNER, conv)
    assert [(t.role, t.content) for t in opened.transcript.turns] == [
        ("user", TAIPEI),
        ("assistant", "Yes, bring an umbrella."),
    ]
    assert opened.status.total == 2


async def test_messages_come_in_pages_back_to_the_first(conversations):
    texts = [f"message {i}" for i in range(7)]
    conv = await chat(conversations, *texts)
    newest = await conversations.messages(OWNER, conv, limit=3)
    assert [t.content for t in newest.turns] == texts[4:]
    assert newest.earlier == 4 and newest.next_before == newest.turns[0].id
    older = await conversations.messages(OWNER, conv, limit=3, before_id=newest.next_before)
    assert [t.content for t in older.turns] == texts[1:4]
    oldest = await conversations.messages(OWNER, conv, limit=3, before_id=older.next_before)
    assert [t.content for t in oldest.turns] == texts[:1] and oldest.next_before is None


async def test_rename_retention_and_delete(conversations):
    conv = await chat(conversations, "hello")
    assert (await conversations.rename(OWNER, conv, "  Trip   to Kyoto ")).title == "Trip to Kyoto"
    assert (await conversations.set_retention(OWNER, conv, 30)).retention_minutes == 30
    assert (await conversations.set_retention(OWNER, conv, None)).retention_minutes is None
    await conversations.delete(OWNER, conv)
    assert (await conversations.open(OWNER, conv)).state == "missing"
    with pytest.raises(NotFound):
        await conversations.delete(OWNER, conv)


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda c, conv: c.rename(OWNER, conv, "   "), "title is empty"),
        (lambda c, conv: c.rename(OWNER, conv, "x" * 101), "limit is 100"),
        (lambda c, conv: c.set_retention(OWNER, conv, -5), "whole number of minutes"),
        (lambda c, conv: c.create(OWNER, retention_minutes=0), "whole number of minutes"),
    ],
)
async def test_refused_input_is_an_invalid_input_and_changes_nothing(conversations, call, words):
    conv = await chat(conversations, "hello", title="Kept")
    with pytest.raises(InvalidInput, match=words) as caught:
        await call(conversations, conv)
    assert isinstance(caught.value, UserError) and caught.value.message
    kept = await conversations.get(OWNER, conv)
    assert kept.title == "Kept" and kept.retention_minutes is None
    assert len(await conversations.list(OWNER)) == 1


async def test_set_persona_says_whether_it_changed(conversations):
    conv = await chat(conversations, "hello")
    change = await conversations.set_persona(OWNER, conv, "finance")
    assert change.changed and change.persona.id == "finance"
    assert change.conversation.persona_id == "finance"
    assert not (await conversations.set_persona(OWNER, conv, "finance")).changed
    with pytest.raises(PersonaUnavailable, match="Pick another persona"):
        await conversations.set_persona(OWNER, conv, "no-such-persona")
    assert (await conversations.get(OWNER, conv)).persona_id == "finance"


# -- owner isolation: another owner's id behaves exactly as a missing one ------------------

FOREIGN_CALLS = {
    "get": lambda c, conv: c.get(OTHER, conv),
    "rename": lambda c, conv: c.rename(OTHER, conv, "mine now"),
    "delete": lambda c, conv: c.delete(OTHER, conv),
    "set_retention": lambda c, conv: c.set_retention(OTHER, conv, 30),
    "set_persona": lambda c, conv: c.set_persona(OTHER, conv, "finance"),
    "messages": lambda c, conv: c.messages(OTHER, conv),
    "status": lambda c, conv: c.status(OTHER, conv),
    "preview": lambda c, conv: c.preview(OTHER, conv),
    "reset": lambda c, conv: c.reset(OTHER, conv),
    "undo": lambda c, conv: c.undo(OTHER, conv),
    "send": lambda c, conv: events_of(c.send(OTHER, conv, "hello")),
    "retry": lambda c, conv: events_of(c.retry(OTHER, conv)),
}


@pytest.mark.parametrize("operation", sorted(FOREIGN_CALLS))
@pytest.mark.parametrize("whose", ["another owner's", "a missing"])
async def test_another_owners_conversation_is_not_found(conversations, fake, operation, whose):
    conv = await chat(conversations, "my secret plan", "Noted.", title="Mine")
    target = conv if whose == "another owner's" else "no-such-conversation"
    with pytest.raises(NotFound, match="no longer exists") as caught:
        await FOREIGN_CALLS[operation](conversations, target)
    assert caught.value.title == "Conversation not found"
    assert fake.requests == []  # no model call for someone else's conversation
    mine = await conversations.open(OWNER, conv)
    assert mine.conversation.title == "Mine" and mine.status.total == 2
    assert (await conversations.open(OTHER, conv)).state == "missing"
    assert await conversations.list(OTHER) == []
    assert (await conversations.search(OTHER, "secret")).results == []


# -- memory and the turn -------------------------------------------------------------------


async def test_undo_reset_and_preview(conversations, fake):
    conv = (await conversations.create(OWNER)).id
    await events_of(conversations.send(OWNER, conv, TAIPEI))
    preview = await conversations.preview(OWNER, conv, draft="  and tomorrow? ")
    assert preview.turns[0]["content"] == TAIPEI
    dropped = await conversations.undo(OWNER, conv)
    assert [t.role for t in dropped] == ["user", "assistant"]
    await events_of(conversations.send(OWNER, conv, "Remember: my name is Ana."))
    cleared = await conversations.reset(OWNER, conv)
    assert cleared.turns == 2
    assert (await conversations.status(OWNER, conv)).total == 0
    reset_by_command = await events_of(conversations.send(OWNER, conv, "/reset"))
    assert isinstance(reset_by_command[0], Cleared)


async def test_retry_answers_again(conversations, fake):
    conv = (await conversations.create(OWNER)).id
    await events_of(conversations.send(OWNER, conv, TAIPEI))
    fake.reply("Again: sunny.")
    events = await events_of(conversations.retry(OWNER, conv))
    assert events[-1].reply == "Again: sunny."
    assert fake.last.turns == [("user", TAIPEI)]


@pytest.mark.parametrize(
    "text,words", [("", "empty"), ("  \n", "empty"), ("x" * 10_001, "10,001 characters")]
)
async def test_a_message_memory_would_refuse_is_refused_with_memorys_words(
    conversations, fake, text, words
):
    with pytest.raises(InvalidMessage, match=words) as caught:
        conversations.check_message(text)
    assert isinstance(caught.value, InvalidInput)  # one family: the UI maps it once
    conv = (await conversations.create(OWNER)).id
    with pytest.raises(InvalidMessage, match=words):
        await events_of(conversations.send(OWNER, conv, text))
    assert fake.requests == [] and (await conversations.messages(OWNER, conv)).turns == []
    conversations.check_message("x" * 10_000)  # the limit itself goes through


async def test_model_errors_are_in_the_family_and_keep_the_message(conversations, fake):
    conv = (await conversations.create(OWNER)).id
    fake.error(429)
    with pytest.raises(AssistantError) as caught:
        await events_of(conversations.send(OWNER, conv, TAIPEI))
    assert isinstance(caught.value, UserError)
    assert caught.value.title == "The assistant could not answer"
    assert [t.content for t in (await conversations.messages(OWNER, conv)).turns] == [TAIPEI]


async def test_settled_waits_for_a_streaming_reply(conversations, fake):
    conv = (await conversations.create(OWNER)).id
    gate = threading.Event()
    fake.reply("slow ", "reply", gate=gate)
    stream = conversations.send(OWNER, conv, TAIPEI)
    assert await anext(stream) == Delta("slow ")
    await conversations.settled(conv, wait_s=0.05)  # times out: still streaming
    gate.set()
    rest = [e async for e in stream]
    assert isinstance(rest[-1], Done)
    await conversations.settled(conv, wait_s=5)  # returns at once now
    assert [t.content for t in (await conversations.messages(OWNER, conv)).turns][-1] == (
        "slow reply"
    )


# -- storage down --------------------------------------------------------------------------


@pytest.fixture
async def broken(tmp_path, fake):
    """A runtime whose database file is garbage: the store cannot open."""
    from assistant.gemini import GeminiModel

    data = tmp_path / "broken"
    data.mkdir()
    (data / "mnemo.db").write_bytes(b"this is not a database " * 400)
    runtime = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    yield await runtime.conversations()
    await runtime.aclose()


@pytest.mark.parametrize(
    "call,action",
    [
        (lambda c: c.rename(OWNER, "c", "New"), "rename the conversation"),
        (lambda c: c.delete(OWNER, "c"), "delete the conversation"),
        (lambda c: c.set_retention(OWNER, "c", 30), "change how long"),
        (lambda c: c.set_persona(OWNER, "c", "finance"), "change the persona"),
        (lambda c: c.get(OWNER, "c"), "open that conversation"),
    ],
)
async def test_changes_that_need_storage_say_it_is_unavailable(broken, call, action):
    with pytest.raises(StorageError, match=action) as caught:
        await call(broken)
    assert caught.value.title == "Storage unavailable"
    assert "data directory is writable" in caught.value.message


async def test_with_storage_down_the_chat_still_answers(broken, fake):
    conv = await broken.create(OWNER)  # unsaved, on screen only
    events = await events_of(broken.send(OWNER, conv.id, TAIPEI))
    assert events[-1].degraded and not events[-1].saved
    opened = await broken.open(OWNER, "a-real-looking-id")
    assert opened.state == "unreadable" and opened.status.degraded
    assert await broken.list(OWNER) == []
    results = await broken.search(OWNER, "taipei")
    assert not results.available and results.results == []


# -- search --------------------------------------------------------------------------------


class CountingStore:
    """The real fail-open store, counting which verbs the facade calls."""

    def __init__(self, store: FailOpenStore):
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name):
        self.calls[name] += 1
        return getattr(self._store, name)


async def test_search_groups_by_conversation_with_one_full_text_query(conversations):
    older = await chat(conversations, "We ate ramen at Menya Musashi", "Noted: Menya Musashi.")
    await chat(conversations, "Plan a weekend in Tainan", "Start at Anping.")
    newer = await chat(conversations, "My sister loves ramen", "Ramen it is.")
    titled = await chat(conversations, "Hello", title="Ramen tour of Tokyo")
    counting = CountingStore(conversations.store)
    conversations.store = counting
    found = await conversations.search(OWNER, "  ramen ", mark=("[", "]"))
    assert isinstance(found, SearchResults) and found.available and found.searchable
    assert [r.conversation.id for r in found.results] == [titled, newer, older]
    by_id = {r.conversation.id: r for r in found.results}
    assert by_id[titled].hits == [] and by_id[titled].title == "[Ramen] tour of Tokyo"
    assert [h.snippet for h in by_id[newer].hits] == ["[Ramen] it is.", "My sister loves [ramen]"]
    assert by_id[older].persona.id == "assistant"
    assert counting.calls["search"] == 1 and counting.calls["find_conversations"] == 0


@pytest.mark.parametrize("query,searchable", [("", True), ("   ", True), ("?!…", False)])
async def test_a_query_without_words_finds_nothing_without_looking(
    conversations, query, searchable
):
    await chat(conversations, "?! is punctuation")
    counting = CountingStore(conversations.store)
    conversations.store = counting
    found = await conversations.search(OWNER, query)
    assert found.results == [] and found.searchable is searchable and found.available
    assert counting.calls["search"] == 0


# -- the persona editor --------------------------------------------------------------------


async def test_persona_list_and_document(conversations):
    ids = [p.id for p in await conversations.personas(OWNER)]
    assert {"assistant", "finance", "sales"} <= set(ids)
    doc = await conversations.persona(OWNER, "finance")
    assert doc.info.id == "finance" and doc.info.source == "builtin" and doc.info.version == 0
    assert doc.yaml_text == (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
    assert doc.system_prompt and doc.form["display_name"] == doc.info.display_name
    assert [v.version for v in doc.versions] == [0] and not doc.fell_back
    fallback = await conversations.persona(OWNER, "no-such-persona")
    assert fallback.info.id == "assistant" and fallback.fell_back


async def test_validate_bad_yaml_says_where(conversations):
    with pytest.raises(InvalidPersonaYaml) as caught:
        conversations.validate_persona("id: finance\ndisplay_name: [unclosed\n")
    assert caught.value.problems and "line" in caught.value.problems[0]
    assert caught.value.title == "Persona not saved"
    good = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
    draft = conversations.validate_persona(good)
    assert draft.id == "finance" and draft.system_prompt and draft.form["display_name"]


async def test_save_versions_rollback_and_revert_per_owner(conversations):
    yaml_text = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
    edited = conversations.apply_persona_form(yaml_text, {"display_name": "Finance Desk"})
    assert edited.problems == [] and "Finance Desk" in edited.yaml_text
    saved = await conversations.save_persona(OWNER, edited.yaml_text)
    assert (saved.id, saved.version, saved.display_name) == ("finance", 1, "Finance Desk")
    versions = await conversations.persona_versions(OWNER, "finance")
    assert [v.version for v in versions] == [1, 0]  # newest first
    other = await conversations.persona(OTHER, "finance")
    assert other.info.version == 0 and other.info.display_name != "Finance Desk"  # mine only
    back = await conversations.rollback_persona(OWNER, "finance", 0)
    assert back.version == 0
    await conversations.rollback_persona(OWNER, "finance", 1)
    assert (await conversations.revert_persona(OWNER, "finance")).source == "builtin"
    with pytest.raises(PersonaUnavailable):
        await conversations.rollback_persona(OWNER, "finance", 99)


async def test_bad_yaml_never_replaces_a_working_persona(conversations):
    with pytest.raises(InvalidPersonaYaml):
        await conversations.save_persona(OWNER, "id: finance\ntemperature: hot\n")
    assert (await conversations.persona(OWNER, "finance")).info.version == 0
    broken_form = conversations.apply_persona_form("id: [", {"display_name": "X"})
    assert broken_form.system_prompt is None and broken_form.problems


async def test_an_owners_own_persona_cannot_be_reverted(conversations):
    text = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
    own = text.replace("id: finance", "id: my-coach", 1)
    await conversations.save_persona(OWNER, own)
    with pytest.raises(PersonaRefused, match="no built-in version") as caught:
        await conversations.revert_persona(OWNER, "my-coach")
    assert caught.value.title == "Nothing to revert to"


async def test_persona_files_are_read_off_the_event_loop(conversations):
    loop_thread = threading.get_ident()
    seen: list[int] = []
    registry = conversations.registry
    for name in ("get", "list", "versions", "save"):
        real = getattr(registry, name)

        def spy(*args, _real=real, **kwargs):
            seen.append(threading.get_ident())
            return _real(*args, **kwargs)

        setattr(registry, name, spy)
    await conversations.personas(OWNER)
    await conversations.persona(OWNER, "finance")
    await conversations.save_persona(OWNER, (BUILTIN_DIR / "sales.yaml").read_text("utf-8"))
    conv = await conversations.create(OWNER, persona_id="sales")
    await conversations.open(OWNER, conv.id)
    await conversations.search(OWNER, "anything")
    assert seen and loop_thread not in seen


@pytest.mark.parametrize("verb", ["reset", "undo"])
async def test_reset_and_undo_are_refused_while_a_reply_streams(conversations, fake, verb):
    """Either one, while the reply streamed, forgot its question, and the reply's first save
    then put it back alone: a conversation holding an answer to nothing."""
    gate = threading.Event()
    fake.reply("The ", "answer.", gate=gate)
    conv = await conversations.create(OWNER)
    stream = conversations.send(OWNER, conv.id, TAIPEI)
    async for event in stream:
        if isinstance(event, Delta):
            break
    with pytest.raises(ReplyStreaming, match="stop it or let it finish"):
        await getattr(conversations, verb)(OWNER, conv.id)
    with pytest.raises(NotFound):  # someone else's conversation is not theirs to learn of
        await getattr(conversations, verb)(OTHER, conv.id)
    gate.set()
    await events_of(stream)
    turns = (await conversations.open(OWNER, conv.id)).transcript.turns
    assert [(t.role, t.content) for t in turns] == [("user", TAIPEI), ("assistant", "The answer.")]
    await getattr(conversations, verb)(OWNER, conv.id)  # once it is over
    assert len((await conversations.open(OWNER, conv.id)).transcript.turns) < 2
