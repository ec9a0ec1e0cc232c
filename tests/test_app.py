"""The app's handlers, called as plain functions: a real store and registry in a tmp dir and the
real google-genai client talking to the local fake Gemini server. No browser here."""

from __future__ import annotations

import html
import warnings

import gradio as gr
import pytest

import app
from assistant import conversations
from assistant.gemini import GeminiModel
from assistant.runtime import Runtime
from personas import BUILTIN_DIR, apply_form, load_persona_text
from ui import chat as chat_pane
from ui import memory_badge, page, personas_tab, sidebar, views

OWNER = "b-owner-aaaaaaaaaaaaaaaa"
OTHER = "b-other-bbbbbbbbbbbbbbbb"


async def send(rt, owner, conversation_id, text, chat=None, persona_id=None):
    """What the browser does on Enter: accept, then stream; returns the last view."""
    _box, chat, pending, _notice, _done, _busy, _sending = chat_pane.accept_message(
        text, chat or []
    )
    return [
        page.ChatView(*update[:-1])
        async for update in chat_pane.stream_reply(
            rt, owner, conversation_id, pending, persona_id, chat
        )
    ]


def texts(chat):
    return [(m["role"], m["content"]) for m in chat]


# ---- sessions ------------------------------------------------------------------------------


def test_identify_gives_a_new_browser_an_id_and_keeps_it():
    owner, kept = app.identify(None)
    assert owner == kept and owner.startswith("b-")
    assert app.identify(kept) == (kept, kept)


def test_identify_replaces_a_tampered_id():
    owner, kept = app.identify("../../etc/passwd")
    assert owner == kept and owner.startswith("b-") and "/" not in owner


def test_identify_uses_the_signed_in_username():
    profile = gr.OAuthProfile(
        {"preferred_username": "ada", "name": "Ada", "profile": "", "picture": ""}
    )
    owner, kept = app.identify("b-" + "x" * 24, profile)
    assert owner == "hf:ada" and kept == "b-" + "x" * 24


# ---- the input box -------------------------------------------------------------------------


SKIP = type(gr.skip())


def test_empty_input_does_nothing():
    box, chat, pending, notice, done, busy, _sending = chat_pane.accept_message("   ", [])
    assert pending == "" and done is True
    assert isinstance(box, SKIP) and isinstance(chat, SKIP) and isinstance(busy, SKIP)
    assert notice["visible"] is False


def test_a_message_sent_while_a_turn_runs_stays_in_the_box():
    # Enter pressed as a reply streams (or is finishing): Gradio would not start a second
    # reply beside the first, and the message, cleared from the box, was lost.
    box, chat, pending, notice, done, busy, _sending = chat_pane.accept_message(
        "And another thing", [{"role": "user", "content": "First"}], True
    )
    assert pending == ""  # nothing for the reply step to send
    assert all(isinstance(u, SKIP) for u in (box, chat, done, busy))  # the box keeps the text
    assert notice["visible"] is True
    assert (
        notice["value"]
        == "⏳ A reply is still coming: send this once it has finished, or press Stop first."
    )
    # Once the turn's last step has run, the notice is gone and the same message is taken.
    assert chat_pane.input_ready().busy is False
    assert chat_pane.input_ready().input_notice["visible"] is False
    _box, chat, pending, _notice, _done, busy, _sending = chat_pane.accept_message(
        "And another thing", [], False
    )
    assert pending == "And another thing" and busy is True


def test_too_long_input_stays_in_the_box_with_the_limit():
    box, chat, pending, notice, _done, _busy, _sending = chat_pane.accept_message("x" * 10_001, [])
    assert isinstance(box, SKIP) and isinstance(chat, SKIP) and pending == ""
    assert notice["visible"] is True
    assert "10,001" in notice["value"] and "10,000" in notice["value"]


def test_controls_lock_while_answering_and_unlock_after():
    # The controls that would switch or change the conversation under a streaming reply,
    # the confirmations of Reset and Delete among them (a reset under a streaming reply left
    # the reply without its question).
    buttons = {"new_chat", "conversations", "search", "persona", "reset", "rename", "delete"}
    buttons |= {"reset_yes", "delete_yes"}
    marked = {"search_results", "chat"}  # by class: Retry / Undo and search hits (app.css)
    locked = chat_pane.lock_controls(False)
    assert set(locked._fields) == buttons | marked
    assert all(getattr(locked, name)["interactive"] is False for name in buttons)
    assert all(getattr(locked, name)["elem_classes"] == ["turn-running"] for name in marked)
    assert all(isinstance(u, SKIP) for u in chat_pane.lock_controls(True))
    ready = chat_pane.input_ready()
    box = ready.chat_input
    assert box["submit_btn"] is True and box["stop_btn"] is False
    assert set(ready._fields) == buttons | marked | {"chat_input", "busy", "input_notice"}
    assert ready.busy is False
    assert all(getattr(ready, name)["interactive"] is True for name in buttons)
    assert all(getattr(ready, name)["elem_classes"] == [] for name in marked)


async def test_nothing_pending_streams_nothing(rt, fake):
    updates = [u async for u in chat_pane.stream_reply(rt, OWNER, None, "", None, [])]
    assert len(updates) == 1 and updates[0][-1] is True
    assert all(isinstance(v, SKIP) for v in updates[0][:-1])
    assert fake.requests == []


def test_accepted_message_shows_at_once_and_clears_the_box():
    box, chat, pending, notice, done, busy, _sending = chat_pane.accept_message(
        " Hello ", [{"role": "assistant", "content": "Hi"}]
    )
    assert done is False and busy is True and notice["visible"] is False
    assert pending == "Hello"
    assert chat[-1] == {"role": "user", "content": "Hello"}
    assert box["value"] == "" and box["stop_btn"] is True


# ---- chatting ------------------------------------------------------------------------------


async def test_first_message_creates_the_conversation_and_streams(rt, fake):
    fake.reply("Yes, ", "bring an ", "umbrella.")
    steps = await send(rt, OWNER, None, "Will it rain in Taipei tomorrow?")
    # First the sidebar lists the new conversation, then the reply streams in.
    assert steps[0].conversations["value"] == steps[0].conversation_id
    streamed = [v.chat[-1]["content"] for v in steps[1:-1]]
    assert streamed[-1] == "Yes, bring an umbrella."
    final = steps[-1]
    assert final.conversation_id
    assert texts(final.chat)[-2:] == [
        ("user", "Will it rain in Taipei tomorrow?"),
        ("assistant", "Yes, bring an umbrella."),
    ]
    assert final.badge.startswith("🧠 Remembering 2 messages")
    assert "Gemini 2.5 Flash" in final.badge
    labels = [label for label, _ in final.conversations["choices"]]
    assert len(labels) == 1 and labels[0].startswith("🧠 Will it rain in Taipei…\n")
    assert final.conversations["value"] == final.conversation_id


async def test_second_answer_is_given_the_first_exchange(rt, fake):
    fake.reply("Yes, rain in Taipei.")
    first = (await send(rt, OWNER, None, "Will it rain in Taipei tomorrow?"))[-1]
    fake.reply("Kaohsiung stays dry.")
    await send(rt, OWNER, first.conversation_id, "And Kaohsiung?", first.chat)
    assert fake.last.turns == [
        ("user", "Will it rain in Taipei tomorrow?"),
        ("model", "Yes, rain in Taipei."),
        ("user", "And Kaohsiung?"),
    ]


async def test_stopped_reply_is_shown_as_saved(rt, fake):
    """Stop cancels the stream mid-way; the follow-up step re-reads the partial reply."""
    fake.reply("one ", "two ", "three ", "four", chunk_delay=0.2)
    _box, chat, pending, _notice, done, _busy, _sending = chat_pane.accept_message(
        "Count slowly", []
    )
    stream = chat_pane.stream_reply(rt, OWNER, None, pending, None, chat)
    conversation_id = None
    async for update in stream:
        view = page.ChatView(*update[:-1])
        conversation_id = conversation_id or view.conversation_id
        if not isinstance(view.chat, SKIP) and "two" in view.chat[-1]["content"]:
            break
    await stream.aclose()  # what Gradio's cancel amounts to for the handler
    final = await chat_pane.finish_turn(rt, OWNER, conversation_id, done)
    role, shown = texts(final.chat)[-1]
    assert role == "assistant" and shown.startswith("one two")
    assert views.STOPPED_NOTE in shown
    assert final.badge.startswith("🧠 Remembering 2 messages")


async def test_finish_turn_leaves_a_completed_turn_alone(rt, fake):
    final = (await send(rt, OWNER, None, "Hello"))[-1]
    unchanged = await chat_pane.finish_turn(rt, OWNER, final.conversation_id, True)
    assert all(isinstance(v, SKIP) for v in unchanged)


async def test_reset_command_empties_memory_and_says_what_went(rt, fake):
    first = (await send(rt, OWNER, None, "My name is Ada."))[-1]
    final = (await send(rt, OWNER, first.conversation_id, "/reset", first.chat))[-1]
    assert final.badge.startswith("💤 Nothing remembered yet")
    assert "forgot 2 messages" in final.chat[-1]["content"]
    requests = len(fake.requests)
    await send(rt, OWNER, first.conversation_id, "What is my name?")
    assert len(fake.requests) == requests + 1
    assert fake.last.turns == [("user", "What is my name?")]


async def test_reset_button_empties_memory(rt, fake):
    first = (await send(rt, OWNER, None, "My name is Ada."))[-1]
    view = await memory_badge.reset_memory(rt, OWNER, first.conversation_id)
    assert view.badge.startswith("💤 Nothing remembered yet")
    assert "forgot 2 messages" in view.chat[-1]["content"]
    svc = await rt.service()
    assert (await svc.status(OWNER, first.conversation_id)).total == 0


async def test_undo_drops_the_exchange_and_returns_the_text(rt, fake):
    first = (await send(rt, OWNER, None, "First question"))[-1]
    second = (await send(rt, OWNER, first.conversation_id, "Second question", first.chat))[-1]
    *view, box = await chat_pane.undo_last(rt, OWNER, second.conversation_id)
    view = page.ChatView(*view)
    assert box["value"] == "Second question"
    assert [t for _, t in texts(view.chat)][-2:] == ["First question", "You said: First question"]
    assert view.badge.startswith("🧠 Remembering 2 messages")


async def test_retry_regenerates_the_last_reply(rt, fake):
    fake.reply("First try.")
    first = (await send(rt, OWNER, None, "Tell me a joke"))[-1]
    chat, _box, done, busy = chat_pane.begin_retry(first.chat)
    assert busy is True  # a message sent during the retry waits for it
    assert chat[-1]["role"] == "user" and done is False
    fake.reply("Second try.")
    updates = [u async for u in chat_pane.stream_retry(rt, OWNER, first.conversation_id, chat)]
    assert updates[-1][-1] is True
    assert texts(page.ChatView(*updates[-1][:-1]).chat)[-2:] == [
        ("user", "Tell me a joke"),
        ("assistant", "Second try."),
    ]
    assert fake.last.turns == [("user", "Tell me a joke")]


async def test_a_model_error_is_shown_and_the_message_kept(rt, fake):
    fake.error(429, "Resource has been exhausted")
    with pytest.warns(UserWarning) as toast:  # gr.Warning outside a running app
        final = (await send(rt, OWNER, None, "Hello?"))[-1]
    shown_toast = next(str(w.message) for w in toast if w.category is UserWarning)
    head = '<strong class="notice-title">The assistant could not answer</strong><br>'
    assert shown_toast.startswith(head)  # titled by the app, not Gradio's "Warning"
    message = html.unescape(shown_toast.removeprefix(head))
    assert "429" in message and "retry" in message.lower()
    role, shown = texts(final.chat)[-1]
    assert role == "assistant" and shown.startswith("⚠️ **Not answered.**") and message in shown
    assert ("user", "Hello?") in texts(final.chat)
    store = await rt.store()
    assert [t.content for t in await store.transcript(OWNER, final.conversation_id)] == ["Hello?"]
    # Retry asks again and answers the kept message.
    chat, _, _, _ = chat_pane.begin_retry(final.chat)
    fake.reply("Here now.")
    updates = [u async for u in chat_pane.stream_retry(rt, OWNER, final.conversation_id, chat)]
    assert texts(page.ChatView(*updates[-1][:-1]).chat)[-2:] == [
        ("user", "Hello?"),
        ("assistant", "Here now."),
    ]


async def test_switching_restores_the_transcript(rt, fake):
    a = (await send(rt, OWNER, None, "About apples"))[-1]
    b = (await send(rt, OWNER, None, "About bananas"))[-1]
    assert a.conversation_id != b.conversation_id
    view = await sidebar.switch_conversation(rt, OWNER, a.conversation_id)
    assert ("user", "About apples") in texts(view.chat)
    assert [cid for _, cid in view.conversations["choices"]] == [
        b.conversation_id,
        a.conversation_id,
    ]
    latest = await page.open_latest(rt, OWNER)
    assert latest.conversation_id == b.conversation_id


async def test_owners_never_see_each_other(rt, fake):
    mine = (await send(rt, OWNER, None, "A secret of mine"))[-1]
    theirs = await page.open_latest(rt, OTHER)
    assert theirs.conversation_id is None and theirs.conversations["choices"] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peek = await sidebar.switch_conversation(rt, OTHER, mine.conversation_id)
    assert peek.conversation_id is None
    assert all("secret" not in m["content"] for m in peek.chat)
    with pytest.raises(gr.Error):
        await sidebar.rename_conversation(rt, OTHER, mine.conversation_id, "mine now")


async def test_rename_and_delete(rt, fake):
    first = (await send(rt, OWNER, None, "Plan the trip"))[-1]
    view = await sidebar.rename_conversation(rt, OWNER, first.conversation_id, "  Trip to Tainan ")
    assert view.conversations["choices"][0][0].split("\n")[0].endswith("Trip to Tainan")
    shown, text = await sidebar.ask_delete(rt, OWNER, first.conversation_id)
    assert shown["visible"] is True and "Trip to Tainan" in text
    *after, hidden = await sidebar.confirm_delete(rt, OWNER, first.conversation_id)
    after = page.ChatView(*after)
    assert hidden["visible"] is False
    assert after.conversation_id is None and after.conversations["choices"] == []


async def test_rename_needs_a_name(rt, fake):
    first = (await send(rt, OWNER, None, "Hello"))[-1]
    with pytest.raises(gr.Error, match="new name"):
        await sidebar.rename_conversation(rt, OWNER, first.conversation_id, "   ")


async def test_new_chat_waits_while_a_message_is_being_answered(rt, fake):
    """New chat clicked just after Enter, before the lock: the reply goes on in the
    conversation shown, so the blank chat is not shown under it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gr.Info outside a running app
        view = await sidebar.new_chat(rt, OWNER, "finance", busy=True)
    assert list(view) == [gr.skip()] * len(view)  # nothing on screen changes


async def test_new_chat_shows_the_persona_greeting_and_is_not_saved(rt, fake):
    view = await sidebar.new_chat(rt, OWNER, "finance")
    assert view.conversation_id is None
    assert view.persona["value"] == "finance"
    assert view.chat and view.chat[0]["role"] == "assistant"
    assert view.badge.startswith("💤 Nothing remembered yet")
    assert view.conversations["choices"] == []
    final = (await send(rt, OWNER, None, "Check this deal", persona_id="finance"))[-1]
    store = await rt.store()
    conversation = await store.get_conversation(OWNER, final.conversation_id)
    assert conversation.persona_id == "finance"


async def test_changing_the_persona_of_a_conversation(rt, fake):
    first = (await send(rt, OWNER, None, "Hello"))[-1]
    view = await chat_pane.change_persona(rt, OWNER, first.conversation_id, "sales")
    assert view.persona["value"] == "sales"
    sales = rt.registry.get(OWNER, "sales").persona
    assert sales.display_name in view.inspector


async def test_inspector_shows_what_the_model_receives(rt, fake):
    fake.reply("Noted.")
    first = (await send(rt, OWNER, None, "My cat is called Mochi"))[-1]
    assert "#### System instruction" in first.inspector
    assert "My cat is called Mochi" in first.inspector and "Noted." in first.inspector


# ---- the persona editor --------------------------------------------------------------------

# `role_description` indented under display_name: a YAML syntax error at line 3, column 19.
BROKEN = "id: assistant\ndisplay_name: Ada\n  role_description: x\n"
WHERE = "line 3, column 19"


async def test_editor_shows_yaml_form_versions_and_preview(rt):
    picker, yaml_text, *rest = await personas_tab.show_editor(rt, OWNER, "finance")
    fields = len(personas_tab.FORM_FIELDS)
    form, (versions, preview, status) = rest[:fields], rest[fields:]
    assert picker["value"] == "finance"
    assert "veto_threshold_pct" in yaml_text
    assert form[0] == rt.registry.get(OWNER, "finance").persona.display_name
    assert versions["choices"][0] == ("v0 · built-in", 0)
    assert "15" in preview  # the veto threshold, filled into the rules
    assert "v0" in status


def test_yaml_edit_updates_form_and_preview():
    text = "id: tester\ndisplay_name: Tess\nrole_description: Tests things.\ntemperature: 0.3\n"
    *form, preview, status = personas_tab.yaml_edited(text)
    assert form[0] == "Tess" and form[personas_tab.FORM_FIELDS.index("temperature")] == 0.3
    assert "Tests things." in preview and "Valid" in status


def test_broken_yaml_reports_line_and_column_and_leaves_the_form():
    *form, _preview, status = personas_tab.yaml_edited(BROKEN)
    assert WHERE in status
    assert all(isinstance(v, type(gr.skip())) for v in form)


def test_form_edit_rewrites_the_yaml():
    text = "id: tester\ndisplay_name: Tess\nrole_description: Tests things.\n"
    values = ["Tess", "🧪", "Tests things.", "", "", "edge cases\nregressions", "", 0.5, "n: 3"]
    new_yaml, preview, _status = personas_tab.form_edited(text, *values)
    assert "avatar: 🧪" in new_yaml and "- regressions" in new_yaml and "n: 3" in new_yaml
    assert "temperature: 0.5" in new_yaml
    assert "edge cases" in preview


def test_form_edit_waits_for_valid_yaml():
    values = ["X", "", "r", "", "", "", "", None, ""]
    _new_yaml, _preview, status = personas_tab.form_edited(BROKEN, *values)
    assert "Fix the YAML first" in status


async def test_save_applies_from_the_next_message(rt, fake):
    first = (await send(rt, OWNER, None, "Hello"))[-1]
    yaml_text = rt.registry.get(OWNER, "assistant").yaml_text
    edited = yaml_text.replace(
        "role_description: >\n", "role_description: >\n  Always answer like a pirate.\n", 1
    )
    assert edited != yaml_text
    result = await personas_tab.save_persona(rt, OWNER, edited)
    assert "Saved as **v1**" in result[-1]
    await send(rt, OWNER, first.conversation_id, "Hi again")
    assert "Always answer like a pirate." in fake.last.system_text
    # Someone else still gets the built-in.
    assert "pirate" not in rt.registry.get(OTHER, "assistant").yaml_text


async def test_broken_save_keeps_the_old_persona(rt, fake):
    before = rt.registry.get(OWNER, "assistant")
    with pytest.warns(UserWarning, match="not saved"):  # the toast, outside a running app
        result = await personas_tab.save_persona(rt, OWNER, BROKEN)
    assert WHERE in result[-1] and "Not saved" in result[-1]
    assert rt.registry.get(OWNER, "assistant").version == before.version


async def test_rollback_and_revert(rt):
    base = rt.registry.get(OWNER, "sales").yaml_text
    await personas_tab.save_persona(rt, OWNER, base.replace("display_name:", "display_name: X", 1))
    await personas_tab.save_persona(rt, OWNER, base)
    out = await personas_tab.rollback_persona(rt, OWNER, "sales", 1)
    assert rt.registry.get(OWNER, "sales").version == 1 and "v1" in out[-1]
    await personas_tab.revert_persona(rt, OWNER, "sales")
    assert rt.registry.get(OWNER, "sales").source == "builtin"


async def test_retention_shows_in_the_badge(rt, fake):
    first = (await send(rt, OWNER, None, "Short-lived"))[-1]
    assert first.retention["value"] == 0
    view = await sidebar.set_retention(rt, OWNER, first.conversation_id, 30)
    assert view.retention["value"] == 30
    assert "⏳ Forgets after 30 min idle" in view.badge
    view = await sidebar.set_retention(rt, OWNER, first.conversation_id, 0)
    assert "⏳" not in view.badge


@pytest.mark.parametrize("path", sorted(BUILTIN_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_form_edit_keeps_every_other_field_of_a_builtin(path):
    text = path.read_text(encoding="utf-8")
    before = load_persona_text(text)
    new_text, after, problems = apply_form(text, {"avatar": "🦉"})
    assert problems == [] and after is not None
    assert after.avatar == "🦉"
    assert after.model_dump(exclude={"avatar"}) == before.model_dump(exclude={"avatar"})
    assert new_text.startswith("#") == text.startswith("#")  # leading comments kept


async def test_broken_database_still_answers_and_says_memory_is_off(tmp_path, fake):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mnemo.db").write_bytes(b"this is not a database" * 100)
    rt = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    try:
        opened = await page.open_latest(rt, OWNER)
        assert opened.conversation_id is None and opened.conversations["choices"] == []
        fake.reply("Still here.")
        final = (await send(rt, OWNER, None, "Hello?", opened.chat))[-1]
        assert final.badge.startswith("⚠️ Memory unavailable — answering without history")
        assert texts(final.chat)[-2:] == [("user", "Hello?"), ("assistant", "Still here.")]
        assert fake.last.turns == [("user", "Hello?")]
    finally:
        await rt.aclose()


async def test_own_persona_has_nothing_to_revert_to(rt):
    own = "id: owl\ndisplay_name: Owl\nrole_description: A wise owl.\n"
    await personas_tab.save_persona(rt, OWNER, own)
    with pytest.raises(gr.Error, match="no built-in version"):
        await personas_tab.revert_persona(rt, OWNER, "owl")
    assert rt.registry.get(OWNER, "owl").persona.display_name == "Owl"


async def test_a_long_conversation_shows_its_latest_messages(rt, fake, monkeypatch):
    monkeypatch.setattr(conversations, "PAGE_ROWS", 4)  # the transcript page a chat shows
    view = (await send(rt, OWNER, None, "one"))[-1]
    for text in ("two", "three"):
        view = (await send(rt, OWNER, view.conversation_id, text, view.chat))[-1]
    view = await sidebar.switch_conversation(rt, OWNER, view.conversation_id)
    assert texts(view.chat) == [
        ("assistant", "_… 2 earlier messages are not shown here._"),
        ("user", "two"),
        ("assistant", "You said: two"),
        ("user", "three"),
        ("assistant", "You said: three"),
    ]


async def test_folded_messages_are_marked_in_the_chat(rt):
    """Issue 15, item 8: messages a summary replaced looked like live ones."""
    store = await rt.store()
    conversation = await store.create_conversation(OWNER)
    for i in range(101):  # the default policy folds all but the newest 20 at 101
        role = "user" if i % 2 == 0 else "assistant"
        await store.append(OWNER, conversation.id, role, f"message number {i}")
    assert await store.summarize_if_needed(OWNER, conversation.id)
    turns = await store.transcript(OWNER, conversation.id, limit=200)
    folded = sum(1 for t in turns if t.compacted and not t.is_summary)
    assert 0 < folded < 101
    view = await sidebar.switch_conversation(rt, OWNER, conversation.id)
    shown = [content for _role, content in texts(view.chat)]
    note = shown.index(views.folded_note(folded))
    assert shown[note - 1] == f"message number {folded - 1}"
    assert shown[note + 1] == f"message number {folded}"
    assert shown[-1] == "message number 100" and shown.count(views.folded_note(folded)) == 1


# Internal helpers that handlers call after their own owner check.
_NOT_HANDLERS = {"_stream", "_listing", "persona_choices", "persona_or_default", "render_chat"}
_PLAUSIBLE = {
    "conversation_id": "c-some-conversation",
    "query": "ramen",
    "text": "hello",
    "draft": "hello",
    "title": "A title",
    "persona_id": "assistant",
    "yaml_text": "id: owl\ndisplay_name: Owl\nrole_description: A wise owl.\n",
    "hit_ids": ["c-some-conversation"],
    "index": 0,
    "minutes": 30,
    "name": "my bot",
    "token_id": "t-1",
    "version": 1,
    "chat": [],
    "done": False,
    "lang": "zh-TW",
    "sending": chat_pane.Sending("c-some-conversation", []),
    "busy": False,
}


def _owner_handlers():
    import inspect

    from ui import tokens

    for module in (chat_pane, sidebar, memory_badge, personas_tab, tokens, page):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            params = list(inspect.signature(fn).parameters)
            handler = fn.__module__ == module.__name__ and name not in _NOT_HANDLERS
            if handler and params[:2] == ["rt", "owner"]:
                yield pytest.param(fn, params[2:], id=f"{module.__name__}.{name}")


@pytest.mark.parametrize("handler,params", list(_owner_handlers()))
async def test_every_handler_fails_cleanly_without_an_owner(rt, fake, caplog, handler, params):
    """Issue 15, item 11: a request from a page that never identified itself (a script)."""
    import inspect

    args = [_PLAUSIBLE[p] for p in params]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gr.Info outside a running app
        try:
            result = handler(rt, "", *args)
            if inspect.isasyncgen(result):
                [_ async for _ in result]
            elif inspect.iscoroutine(result):
                await result
        except gr.Error as exc:
            assert "Reload the page" in str(exc)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert fake.requests == []  # nothing reached the model
