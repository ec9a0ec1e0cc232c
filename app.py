"""Mnemo: a chat assistant that remembers. `python app.py` launches the Gradio app.

`build_demo()` only creates components and wires events. The handlers below are module-level
functions over plain values (owner id, conversation id, text) that return plain values or
`gr.update(...)`s, so tests call them directly. Each takes the `Runtime` first; `build_demo()`
binds it with `functools.partial`. Lower layers raise their own errors; `user_errors()` turns
them into `gr.Error` messages a person can act on, and nothing else reaches the browser.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import gradio as gr

from assistant import config
from assistant.badge import badge_text
from assistant.chat import Cleared, Delta, Done
from assistant.errors import AssistantError
from assistant.local import LocalModel
from memory import ConversationNotFound, MemoryStoreError, StorageUnavailable
from personas import (
    DEFAULT_PERSONA_ID,
    InvalidPersona,
    PersonaError,
    PersonaNotFound,
    build_system_prompt,
    load_persona_text,
    render_greeting,
)
from ui import views
from ui.persona_form import FORM_FIELDS, apply_form, form_values
from ui.runtime import Runtime, app_data_dir, server_host
from ui.sessions import browser_secret, owner_for

log = logging.getLogger("mnemo.app")

HERE = Path(__file__).parent
MAX_CHARS = views.MAX_MESSAGE_CHARS


# ---- errors ------------------------------------------------------------------------------


@contextlib.contextmanager
def user_errors(action: str) -> Iterator[None]:
    """Turn an exception from a lower layer into a gr.Error saying what to do next."""
    try:
        yield
    except gr.Error:
        raise
    except AssistantError as exc:
        raise gr.Error(exc.message, title="The assistant could not answer") from exc
    except InvalidPersona as exc:
        raise gr.Error(str(exc), title="Persona not saved") from exc
    except PersonaNotFound as exc:
        raise gr.Error(
            f"{exc} Pick another persona, or revert this one to its built-in version.",
            title="Persona not found",
        ) from exc
    except PersonaError as exc:
        raise gr.Error(str(exc), title=f"Could not {action}") from exc
    except ConversationNotFound as exc:
        raise gr.Error(
            "This conversation no longer exists (deleted in another tab?). "
            "Pick another one in the sidebar or start a new chat.",
            title="Conversation not found",
        ) from exc
    except StorageUnavailable as exc:
        raise gr.Error(
            f"The conversation database is unavailable, so I could not {action}. "
            "Check that the data directory is writable and has free space, then try again.",
            title="Storage unavailable",
        ) from exc
    except MemoryStoreError as exc:
        raise gr.Error(str(exc), title=f"Could not {action}") from exc
    except Exception as exc:
        log.exception("unexpected error while trying to %s", action)
        raise gr.Error(
            f"Something unexpected went wrong while trying to {action}. Try again; if it "
            "keeps happening, the server log has the details.",
            title="Unexpected error",
        ) from exc


# ---- sessions ----------------------------------------------------------------------------


def identify(browser_id: str | None, profile: gr.OAuthProfile | None = None) -> tuple[str, str]:
    """(owner, browser id to keep) for this page load."""
    username = getattr(profile, "username", None) if profile is not None else None
    return owner_for(browser_id, username)


# ---- the chat pane and sidebar -----------------------------------------------------------


class ChatView(NamedTuple):
    """Everything the chat pane and the sidebar show for one conversation (or a new chat)."""

    conversation_id: str | None
    conversations: Any  # gr.update(choices=[(label, id)], value=id)
    chat: Any  # list of Chatbot messages
    persona: Any  # gr.update(choices=[(label, id)], value=id)
    badge: str
    inspector: str
    title: Any  # the rename box
    retention: Any  # the "forget after" picker


def _persona_or_default(rt: Runtime, owner: str, persona_id: str | None):
    try:
        return rt.registry.get(owner, persona_id or DEFAULT_PERSONA_ID).persona
    except PersonaNotFound:
        return rt.registry.get(owner, DEFAULT_PERSONA_ID).persona


def _persona_choices(rt: Runtime, owner: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    versions = rt.registry.list(owner)
    choices = [(views.persona_label(v.persona), v.persona.id) for v in versions]
    avatars = {v.persona.id: v.persona.avatar or "💬" for v in versions}
    return choices, avatars


async def render_chat(
    rt: Runtime,
    owner: str,
    conversation_id: str | None,
    persona_id: str | None = None,
    shown: list[dict[str, Any]] | None = None,
) -> ChatView:
    """The chat pane for a conversation, or for a new chat with the given persona.

    When storage is down the conversation cannot be read back: the chat keeps what is on
    screen (`shown`) and the badge says memory is unavailable.
    """
    svc = await rt.service()
    store = await rt.store()
    conversations = await store.list_conversations(owner)
    persona_choices, avatars = _persona_choices(rt, owner)
    conversation = None
    unreadable = False
    if conversation_id:
        try:
            conversation = await store.get_conversation(owner, conversation_id)
        except ConversationNotFound:
            gr.Warning("That conversation no longer exists; showing a new chat instead.")
            conversation_id = None
        except StorageUnavailable:
            unreadable = True
    if conversation is not None:
        persona = _persona_or_default(rt, owner, conversation.persona_id)
        turns = await store.transcript(owner, conversation.id, limit=views.SHOWN_ROWS)
        listed_turns = sum(1 for t in turns if t.role in ("user", "assistant"))
        chat = views.chat_messages(
            turns, render_greeting(persona), hidden=conversation.message_count - listed_turns
        )
        status = await svc.status(owner, conversation.id)
        preview = await svc.preview(owner, conversation.id)
        badge = badge_text(status, rt.model_name)
        title = conversation.title or ""
        retention = conversation.retention_minutes or 0
    else:
        persona = _persona_or_default(rt, owner, persona_id)
        chat = views.chat_messages([], render_greeting(persona))
        badge = views.draft_badge(rt.model_name)
        preview = SimpleNamespace(
            system_prompt=build_system_prompt(persona), summary=None, turns=[], chars=0, budget=0
        )
        title = ""
        retention = 0
        if unreadable:
            chat = _plain_chat(shown) or chat
            badge = badge_text(await svc.status(owner, conversation_id or ""), rt.model_name)
    listed = views.conversation_choices(conversations, avatars)
    selected = conversation_id if any(cid == conversation_id for _, cid in listed) else None
    return ChatView(
        conversation_id=conversation_id,
        conversations=gr.update(choices=listed, value=selected),
        chat=chat,
        persona=gr.update(choices=persona_choices, value=persona.id),
        badge=badge,
        inspector=views.preview_markdown(preview),
        title=gr.update(value=title, interactive=conversation is not None),
        retention=gr.update(value=retention, interactive=conversation is not None),
    )


async def preview_draft(rt: Runtime, owner: str, conversation_id: str | None, draft: str) -> Any:
    """While typing: the inspector, including older turns this message would recall."""
    if not conversation_id:
        return gr.skip()
    try:
        svc = await rt.service()
        preview = await svc.preview(owner, conversation_id, draft=(draft or "").strip() or None)
    except Exception:  # a preview is a nicety; never interrupt typing with an error
        log.warning("inspector preview failed", exc_info=True)
        return gr.skip()
    return views.preview_markdown(preview)


async def open_latest(rt: Runtime, owner: str) -> ChatView:
    """On page load: the most recently active conversation, or a new chat."""
    with user_errors("load your conversations"):
        store = await rt.store()
        conversations = await store.list_conversations(owner, limit=1)
        latest = conversations[0].id if conversations else None
        return await render_chat(rt, owner, latest)


async def new_chat(rt: Runtime, owner: str, persona_id: str | None) -> ChatView:
    """A blank chat with the chosen persona; it is saved when the first message is sent."""
    with user_errors("start a new chat"):
        return await render_chat(rt, owner, None, persona_id)


async def switch_conversation(rt: Runtime, owner: str, conversation_id: str | None) -> ChatView:
    with user_errors("open that conversation"):
        return await render_chat(rt, owner, conversation_id)


async def refresh_chat(
    rt: Runtime, owner: str, conversation_id: str | None, persona_id: str | None = None
) -> ChatView:
    """Re-read the current chat (after a persona edit)."""
    with user_errors("refresh the chat"):
        return await render_chat(rt, owner, conversation_id, persona_id)


async def rename_conversation(
    rt: Runtime, owner: str, conversation_id: str | None, title: str
) -> ChatView:
    with user_errors("rename the conversation"):
        title = (title or "").strip()
        if not conversation_id:
            raise gr.Error("Send a first message before renaming: new chats are saved then.")
        if not title:
            raise gr.Error("Type a new name in the box first.")
        store = await rt.store()
        await store.rename_conversation(owner, conversation_id, title)
        gr.Info(f"Renamed to “{title}”.")
        return await render_chat(rt, owner, conversation_id)


async def set_retention(
    rt: Runtime, owner: str, conversation_id: str | None, minutes: int | None
) -> ChatView:
    """Keep the conversation, or forget it after some idle time."""
    with user_errors("change how long this conversation is kept"):
        if conversation_id:
            store = await rt.store()
            await store.set_retention(owner, conversation_id, int(minutes) if minutes else None)
        return await render_chat(rt, owner, conversation_id)


async def ask_delete(rt: Runtime, owner: str, conversation_id: str | None) -> tuple[Any, str]:
    """Show the confirmation row for deleting the current conversation."""
    with user_errors("delete the conversation"):
        if not conversation_id:
            gr.Info("Nothing to delete: this chat has not been saved yet.")
            return gr.update(visible=False), ""
        store = await rt.store()
        conversation = await store.get_conversation(owner, conversation_id)
        title = conversation.title or "this conversation"
        return (
            gr.update(visible=True),
            f"Delete **{title}**? Its messages and memory are removed for good.",
        )


def cancel_delete() -> Any:
    return gr.update(visible=False)


async def confirm_delete(rt: Runtime, owner: str, conversation_id: str | None) -> tuple[Any, ...]:
    """Delete, then show the most recent remaining conversation (or a new chat)."""
    with user_errors("delete the conversation"):
        if conversation_id:
            store = await rt.store()
            await store.delete_conversation(owner, conversation_id)
            gr.Info("Conversation deleted.")
        view = await open_latest(rt, owner)
        return (*view, gr.update(visible=False))


async def change_persona(
    rt: Runtime, owner: str, conversation_id: str | None, persona_id: str
) -> ChatView:
    """Pick the persona of a new chat, or switch the current conversation to another one."""
    with user_errors("change the persona"):
        if conversation_id and persona_id:
            store = await rt.store()
            conversation = await store.get_conversation(owner, conversation_id)
            if conversation.persona_id != persona_id:
                await store.set_persona(owner, conversation_id, persona_id)
                name = rt.registry.get(owner, persona_id).persona.display_name
                gr.Info(f"{name} answers from your next message.")
        return await render_chat(rt, owner, conversation_id, persona_id)


# ---- sidebar search ----------------------------------------------------------------------


class SearchView(NamedTuple):
    """The sidebar while searching: results in place of the conversation list."""

    results: Any  # gr.update(samples=[[html]], visible=...) of the results Dataset
    hit_ids: list[str]  # the conversation id of each result row, in order
    status: Any  # gr.update(value=..., visible=...) of the line above the results
    conversations: Any  # gr.update(visible=...) of the conversation list


def _search_view(rows: list[tuple[str, str]], status: str | None) -> SearchView:
    searching = status is not None
    return SearchView(
        results=gr.update(samples=[[markup] for markup, _ in rows], visible=bool(rows)),
        hit_ids=[cid for _, cid in rows],
        status=gr.update(value=status or "", visible=searching),
        conversations=gr.update(visible=not searching),
    )


async def search_conversations(rt: Runtime, owner: str, query: str | None) -> SearchView:
    """Search the owner's conversations (titles and messages); an empty box shows the list.

    Runs as the user types, so it never raises: any query, however hostile, shows results or
    "No matches", and a failing store says search is unavailable.
    """
    query = (query or "").strip()[: views.SEARCH_CHARS]
    if not query:
        return _search_view([], None)
    if not views.searchable(query):
        return _search_view([], views.search_status(0, searchable=False))
    try:
        store = await rt.store()
        found = await store.find_conversations(owner, query, limit=views.SEARCH_ROWS)
        hits = await store.search(owner, query, limit=200, mark=views.SEARCH_MARK)
    except Exception:  # a search is a nicety; never interrupt typing with an error
        log.warning("search failed", exc_info=True)
        return _search_view([], views.search_status(0, available=False))
    if not found and store.degraded:  # the store answered [] because it could not look
        return _search_view([], views.search_status(0, available=False))
    by_conversation: dict[str, list[Any]] = {}
    for hit in hits:  # newest first
        by_conversation.setdefault(hit.conversation_id, []).append(hit)
    personas = {v.persona.id: v.persona for v in rt.registry.list(owner)}
    rows = []
    for conversation in found:  # newest activity first
        persona = personas.get(conversation.persona_id)
        markup = views.search_result(
            conversation,
            query,
            by_conversation.get(conversation.id, []),
            avatar=(persona.avatar if persona else None) or "💬",
            assistant_name=persona.display_name if persona else "Assistant",
        )
        rows.append((markup, conversation.id))
    return _search_view(rows, views.search_status(len(rows)))


async def open_search_hit(
    rt: Runtime, owner: str, hit_ids: list[str] | None, index: int | None
) -> ChatView:
    """Clicking a search result opens its conversation, as picking it in the list would."""
    if index is None or not 0 <= index < len(hit_ids or []):
        return ChatView(*_unchanged())
    return await switch_conversation(rt, owner, hit_ids[index])


# ---- sending, streaming, stop, retry, undo, reset ----------------------------------------


def accept_message(text: str, chat: list[dict[str, Any]] | None) -> tuple[Any, Any, str, Any, bool]:
    """Show the user's message at once (queue=False); the reply streams in the next step.

    Returns (input box, chat, pending text, notice under the box, turn done). Empty input does
    nothing; an over-long message stays in the box and the notice says how much to cut.
    """
    text = (text or "").strip()
    if not text:
        return gr.skip(), gr.skip(), "", gr.update(visible=False), True
    if len(text) > MAX_CHARS:
        notice = gr.update(value="⚠️ " + views.too_long_message(len(text)), visible=True)
        return gr.skip(), gr.skip(), "", notice, True
    chat = [*(chat or []), {"role": "user", "content": text}]
    box = gr.update(value="", submit_btn=False, stop_btn=True)
    return box, chat, text, gr.update(visible=False), False


# While a reply streams, the controls that would switch or change the conversation wait
# (Stop first); otherwise the stream's updates would land in whatever is shown instead.
LOCKED_WHILE_ANSWERING = 7


def lock_controls(done: bool) -> tuple[Any, ...]:
    """Disable sidebar and chat-header controls while a reply streams (unless nothing was
    sent)."""
    update = gr.skip() if done else gr.update(interactive=False)
    return tuple(update for _ in range(LOCKED_WHILE_ANSWERING))


def input_ready() -> tuple[Any, ...]:
    """After a reply (or a stop): the send button is back and the controls work again."""
    box = gr.update(submit_btn=True, stop_btn=False, interactive=True)
    return (box, *(gr.update(interactive=True) for _ in range(LOCKED_WHILE_ANSWERING)))


def _unchanged() -> tuple[Any, ...]:
    return tuple(gr.skip() for _ in ChatView._fields)


def _plain_chat(chat: list[Any] | None) -> list[dict[str, Any]]:
    return [
        {"role": m["role"], "content": views.message_text(m.get("content"))}
        for m in (chat or [])
        if isinstance(m, dict) and m.get("role") in ("user", "assistant")
    ]


async def _stream(
    rt: Runtime,
    owner: str,
    conversation_id: str,
    chat: list[dict[str, Any]],
    events: AsyncIterator[Any],
    action: str,
) -> AsyncIterator[tuple[Any, ...]]:
    """Yield (*ChatView, done) as the reply streams in, then the saved state with done=True.

    A failed turn keeps the user's message (the service saved it) and says what went wrong in
    the chat and in a toast; the Retry button under it asks again.
    """
    skip = gr.skip()
    failure: AssistantError | None = None
    cleared = None
    notice = None
    reply = ""
    async with rt.turn(conversation_id):
        try:
            chat = [*chat, {"role": "assistant", "content": ""}]
            async for event in events:
                if isinstance(event, Delta):
                    reply += event.text
                    chat[-1] = {"role": "assistant", "content": reply}
                    streaming = ChatView(conversation_id, skip, chat, *[skip] * 5)
                    yield (*streaming, False)
                elif isinstance(event, Cleared):
                    cleared = event.result
                elif isinstance(event, Done):
                    notice = event.notice
        except AssistantError as exc:
            failure = exc
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()  # type: ignore[attr-defined]
    with user_errors(action):
        view = await render_chat(rt, owner, conversation_id, shown=chat)
    extra = None
    if cleared is not None:
        extra = views.reset_note(cleared)
        gr.Info(extra)
    elif failure is not None:
        extra = f"⚠️ **Not answered.** {failure.message}"
        gr.Warning(failure.message, title="The assistant could not answer")
    elif notice:
        gr.Info(notice)
    if extra:
        view = view._replace(chat=[*view.chat, {"role": "assistant", "content": extra}])
    yield (*view, True)


async def stream_reply(
    rt: Runtime,
    owner: str,
    conversation_id: str | None,
    text: str,
    persona_id: str | None,
    chat: list[Any] | None,
) -> AsyncIterator[tuple[Any, ...]]:
    """Send the pending message and stream the reply. A new chat is saved first."""
    if not text:  # empty or too long: accept_message already said so
        yield (*_unchanged(), True)
        return
    with user_errors("send your message"):
        svc = await rt.service()
        store = await rt.store()
        if not conversation_id:
            persona = _persona_or_default(rt, owner, persona_id)
            conversation = await store.create_conversation(owner, persona_id=persona.id)
            conversation_id = conversation.id
            # Show the new conversation in the sidebar before the reply arrives.
            conversations = await store.list_conversations(owner)
            _, avatars = _persona_choices(rt, owner)
            skip = gr.skip()
            listed = gr.update(
                choices=views.conversation_choices(conversations, avatars), value=conversation_id
            )
            yield (*ChatView(conversation_id, listed, *[skip] * 6), False)
    async for view in _stream(
        rt,
        owner,
        conversation_id,
        _plain_chat(chat),
        svc.send(owner, conversation_id, text),
        "send your message",
    ):
        yield view


def begin_retry(chat: list[Any] | None) -> tuple[Any, Any, bool]:
    """Drop the last reply from view at once; the new one streams in the next step."""
    chat = _plain_chat(chat)
    while chat and chat[-1]["role"] == "assistant":
        chat.pop()
    return chat, gr.update(submit_btn=False, stop_btn=True), False


async def finish_turn(
    rt: Runtime, owner: str, conversation_id: str | None, done: bool
) -> ChatView | tuple[Any, ...]:
    """After a reply: nothing to do if the stream delivered its final state; after Stop it
    did not, so re-read what was saved (the partial reply, marked as stopped)."""
    if done:
        return _unchanged()
    with user_errors("refresh the chat"):
        await rt.settled(conversation_id)
        return await render_chat(rt, owner, conversation_id)


async def stream_retry(
    rt: Runtime, owner: str, conversation_id: str | None, chat: list[Any] | None
) -> AsyncIterator[tuple[Any, ...]]:
    """Regenerate the last reply."""
    if not conversation_id:
        yield (*_unchanged(), True)
        return
    with user_errors("retry"):
        svc = await rt.service()
    async for view in _stream(
        rt, owner, conversation_id, _plain_chat(chat), svc.retry(owner, conversation_id), "retry"
    ):
        yield view


async def undo_last(rt: Runtime, owner: str, conversation_id: str | None) -> tuple[Any, ...]:
    """Forget the last exchange (memory too) and put the message back in the input box."""
    with user_errors("undo"):
        if not conversation_id:
            return (*await render_chat(rt, owner, None), gr.skip())
        svc = await rt.service()
        dropped = await svc.undo(owner, conversation_id)
        text = next((t.content for t in dropped if t.role == "user"), None)
        view = await render_chat(rt, owner, conversation_id)
        return (*view, gr.update(value=text) if text else gr.skip())


async def reset_memory(rt: Runtime, owner: str, conversation_id: str | None) -> ChatView:
    """The Reset button: forget this conversation and say what was cleared."""
    with user_errors("reset the memory"):
        if not conversation_id:
            gr.Info("Nothing to forget yet: this chat is new.")
            return await render_chat(rt, owner, None)
        svc = await rt.service()
        result = await svc.reset(owner, conversation_id)
        note = views.reset_note(result)
        gr.Info(note)
        view = await render_chat(rt, owner, conversation_id)
        return view._replace(chat=[*view.chat, {"role": "assistant", "content": note}])


# ---- the persona editor ------------------------------------------------------------------


class EditorView(NamedTuple):
    picker: Any
    yaml_text: str
    form: tuple[Any, ...]
    versions: Any
    preview: str
    status: str

    def flat(self) -> tuple[Any, ...]:
        return (self.picker, self.yaml_text, *self.form, self.versions, self.preview, self.status)


async def show_editor(rt: Runtime, owner: str, persona_id: str | None) -> tuple[Any, ...]:
    """The persona tab for one persona: YAML, form, versions, live preview."""
    with user_errors("open the persona"):
        choices, _ = _persona_choices(rt, owner)
        try:
            current = rt.registry.get(owner, persona_id or DEFAULT_PERSONA_ID)
        except PersonaNotFound:
            current = rt.registry.get(owner, DEFAULT_PERSONA_ID)
        versions = rt.registry.versions(owner, current.id)
        status = f"Version **v{current.version}** is in use" + (
            " (built-in)." if current.source == "builtin" else "."
        )
        disk_error = rt.registry.last_error(current.id)
        if disk_error:
            status += (
                "\n\n⚠️ The built-in file on disk is broken; the last good version is used:"
                f"\n\n{disk_error}"
            )
        return EditorView(
            picker=gr.update(choices=choices, value=current.id),
            yaml_text=current.yaml_text,
            form=form_values(current.persona),
            versions=gr.update(
                choices=[(v.label, v.version) for v in versions], value=current.version
            ),
            preview=build_system_prompt(current.persona),
            status=status,
        ).flat()


def yaml_edited(yaml_text: str) -> tuple[Any, ...]:
    """Typing in the YAML: refresh the form and the preview, or show the problems."""
    try:
        persona = load_persona_text(yaml_text or "")
    except InvalidPersona as exc:
        return (*(gr.skip() for _ in FORM_FIELDS), gr.skip(), views.problems_markdown(exc.problems))
    return (*form_values(persona), build_system_prompt(persona), "✏️ Valid, not saved yet.")


def form_edited(yaml_text: str, *values: Any) -> tuple[Any, str, str]:
    """Editing the form: merge into the YAML and refresh the preview."""
    edits = dict(zip(FORM_FIELDS, values, strict=True))
    new_text, persona, problems = apply_form(yaml_text or "", edits)
    if persona is None:
        return (
            new_text if new_text != yaml_text else gr.skip(),
            gr.skip(),
            views.problems_markdown(problems),
        )
    return new_text, build_system_prompt(persona), "✏️ Valid, not saved yet."


def validate_persona(yaml_text: str) -> str:
    try:
        persona = load_persona_text(yaml_text or "")
    except InvalidPersona as exc:
        return views.problems_markdown(exc.problems)
    return f"✅ Valid: **{persona.display_name}** (`{persona.id}`). Save to use it."


async def save_persona(rt: Runtime, owner: str, yaml_text: str) -> tuple[Any, ...]:
    """Save a new version; a bad document changes nothing and says where it is wrong."""
    try:
        saved = rt.registry.save(owner, yaml_text or "")
    except InvalidPersona as exc:
        gr.Warning("The persona was not saved: fix the problems listed under the editor.")
        n = 2 + len(FORM_FIELDS) + 2
        return (*(gr.skip() for _ in range(n)), views.problems_markdown(exc.problems, saved=False))
    with user_errors("save the persona"):
        gr.Info(f"Saved {saved.persona.display_name} v{saved.version}: used from the next message.")
        view = await show_editor(rt, owner, saved.id)
        return (*view[:-1], f"✅ Saved as **v{saved.version}**; used from the next message.")


async def rollback_persona(
    rt: Runtime, owner: str, persona_id: str, version: int | None
) -> tuple[Any, ...]:
    with user_errors("roll back the persona"):
        if version is None:
            raise gr.Error("Pick a version in the list first.")
        restored = rt.registry.rollback(owner, persona_id, int(version))
        gr.Info(f"{restored.persona.display_name} is back to v{restored.version}.")
        return await show_editor(rt, owner, persona_id)


async def revert_persona(rt: Runtime, owner: str, persona_id: str) -> tuple[Any, ...]:
    with user_errors("revert the persona"):
        if not rt.registry.is_builtin(persona_id):
            raise gr.Error(
                "This persona is your own, so it has no built-in version. "
                "Pick an earlier version in the list and use that instead.",
                title="Nothing to revert to",
            )
        restored = rt.registry.revert_to_builtin(owner, persona_id)
        gr.Info(f"{restored.persona.display_name} is back to its built-in version.")
        return await show_editor(rt, owner, persona_id)


# ---- layout ------------------------------------------------------------------------------

CSS = (HERE / "ui" / "app.css").read_text(encoding="utf-8")
THEME = gr.themes.Soft(primary_hue="indigo", secondary_hue="blue", neutral_hue="slate")


def build_demo(rt: Runtime | None = None) -> gr.Blocks:
    """The Mnemo app. Creates components and wires events; nothing else."""
    rt = rt or Runtime()
    # Sign-in exists only on a Space whose README asks for it (hf_oauth: true sets these).
    with_login = bool(os.environ.get("SPACE_ID") and os.environ.get("OAUTH_CLIENT_ID"))

    # No progress overlays: replies stream visibly, other events are quick, and with
    # show_progress="hidden" a gr.Error shows as a toast without blanking its outputs.
    # The events are the UI's own, not an API: keep them out of the API and its docs.
    quiet = {"show_progress": "hidden", "api_visibility": "private"}

    with gr.Blocks(title="Mnemo — a chat assistant that remembers") as demo:
        browser_id = gr.BrowserState(
            None, storage_key="mnemo-owner", secret=browser_secret(rt.data_dir, config.secret())
        )
        owner = gr.State("")
        conversation_id = gr.State(None)
        pending = gr.State("")
        turn_done = gr.State(True)

        with gr.Sidebar(elem_id="sidebar", width=300):
            gr.Markdown("## 🧠 Mnemo\nA chat assistant that remembers.", elem_id="brand")
            if with_login:
                gr.LoginButton(elem_id="login")
            new_btn = gr.Button("➕ New chat", variant="primary", elem_id="new-chat")
            search_box = gr.Textbox(
                show_label=False,
                placeholder="🔍 Search conversations",
                max_lines=1,
                max_length=views.SEARCH_CHARS,
                container=False,
                elem_id="search-box",
            )
            search_status = gr.Markdown(visible=False, elem_id="search-status")
            search_results = gr.Dataset(
                components=["html"],  # rows are HTML that views.search_result escaped
                samples=[],
                type="index",
                layout="gallery",
                samples_per_page=views.SEARCH_ROWS,
                show_label=False,
                container=False,
                visible=False,
                elem_id="search-results",
            )
            hit_ids = gr.State([])
            conversations = gr.Radio(
                choices=[], label="Conversations", elem_id="conversations", container=False
            )
            with gr.Accordion("Rename · memory · delete", open=False, elem_id="manage"):
                title_box = gr.Textbox(
                    label="Name", placeholder="A new name", max_lines=1, elem_id="rename-box"
                )
                with gr.Row():
                    rename_btn = gr.Button("Rename", size="sm", elem_id="rename-btn")
                    delete_btn = gr.Button(
                        "🗑️ Delete", size="sm", variant="stop", elem_id="delete-btn"
                    )
                retention = gr.Dropdown(
                    choices=views.RETENTION_CHOICES,
                    value=0,
                    label="Memory",
                    elem_id="retention",
                )
                with gr.Group(visible=False, elem_id="delete-confirm") as confirm_row:
                    confirm_text = gr.Markdown(elem_id="delete-confirm-text")
                    with gr.Row():
                        confirm_yes = gr.Button(
                            "Delete for good", size="sm", variant="stop", elem_id="delete-yes"
                        )
                        confirm_no = gr.Button("Cancel", size="sm", elem_id="delete-no")
            gr.Markdown(
                views.model_note(rt.model_name, offline=isinstance(rt.model, LocalModel)),
                elem_id="model-name",
                elem_classes="muted",
            )

        # What the assistant remembers stays in view on every tab.
        with gr.Row(elem_id="chat-header", equal_height=True):
            badge = gr.Markdown(elem_id="memory-badge")
            reset_btn = gr.Button(
                "🧹 Reset memory", size="sm", scale=0, min_width=140, elem_id="reset-btn"
            )
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("💬 Chat", id="chat-tab", elem_id="chat-tab"):
                chat = gr.Chatbot(
                    elem_id="chat",
                    show_label=False,
                    height="calc(100vh - 310px)",
                    min_height=360,
                    buttons=["copy", "copy_all"],
                    layout="bubble",
                    group_consecutive_messages=False,  # a reset note is not the greeting
                    placeholder="Say something to start a conversation.",
                )
                input_notice = gr.Markdown(visible=False, elem_id="input-notice")
                with gr.Row(elem_id="composer", equal_height=True):
                    chat_persona = gr.Dropdown(
                        choices=[],
                        label="Persona",
                        show_label=False,
                        scale=0,
                        min_width=250,
                        elem_id="chat-persona",
                    )
                    chat_input = gr.Textbox(
                        show_label=False,
                        placeholder="Type a message — Enter to send, Shift+Enter for a new line",
                        lines=1,
                        max_lines=8,
                        submit_btn=True,
                        stop_btn=False,
                        autofocus=True,
                        scale=1,
                        elem_id="chat-input",
                    )
                with gr.Accordion(
                    "🔍 What the model receives next", open=False, elem_id="inspector"
                ):
                    inspector = gr.Markdown(elem_id="inspector-body")

            with gr.Tab("🎭 Personas", id="persona-tab", elem_id="persona-tab"):
                with gr.Row(elem_id="persona-bar"):
                    persona_picker = gr.Dropdown(
                        choices=[], label="Persona", elem_id="persona-picker", scale=2
                    )
                    versions = gr.Dropdown(
                        choices=[], label="Versions", elem_id="persona-versions", scale=2
                    )
                    with gr.Column(scale=1, min_width=180, elem_id="version-actions"):
                        rollback_btn = gr.Button(
                            "↩️ Use this version", size="sm", elem_id="rollback-btn"
                        )
                        revert_btn = gr.Button(
                            "Revert to built-in", size="sm", elem_id="revert-btn"
                        )
                with gr.Row():
                    with gr.Column(scale=3):
                        persona_yaml = gr.Code(
                            language="yaml",
                            label="YAML",
                            lines=22,
                            max_lines=40,
                            wrap_lines=True,
                            elem_id="persona-yaml",
                        )
                        persona_status = gr.Markdown(elem_id="persona-status")
                        with gr.Row():
                            validate_btn = gr.Button("Validate", elem_id="validate-btn")
                            save_btn = gr.Button(
                                "💾 Save as new version", variant="primary", elem_id="save-btn"
                            )
                    with gr.Column(scale=2):
                        form = [
                            gr.Textbox(label="Display name", max_lines=1, elem_id="f-display_name"),
                            gr.Textbox(label="Avatar", max_lines=1, elem_id="f-avatar"),
                            gr.Textbox(label="Role", lines=3, elem_id="f-role_description"),
                            gr.Textbox(label="Language", max_lines=1, elem_id="f-language"),
                            gr.Textbox(label="Personality", lines=2, elem_id="f-personality"),
                            gr.Textbox(
                                label="Focus areas (one per line)",
                                lines=3,
                                elem_id="f-focus_areas",
                            ),
                            gr.Textbox(
                                label="Rules (one per line)", lines=3, elem_id="f-special_rules"
                            ),
                            gr.Number(
                                label="Temperature (0–2; empty = model default)",
                                minimum=0,
                                maximum=2,
                                step=0.1,
                                elem_id="f-temperature",
                            ),
                            gr.Code(
                                language="yaml",
                                label="Parameters (name: value, one per line)",
                                lines=2,
                                elem_id="f-parameters",
                            ),
                        ]
                with gr.Accordion(
                    "Composed system prompt (live preview)", open=True, elem_id="preview"
                ):
                    persona_preview = gr.Textbox(
                        show_label=False,
                        interactive=False,
                        lines=8,
                        max_lines=30,
                        buttons=["copy"],
                        elem_id="persona-preview",
                    )

        # -- wiring --------------------------------------------------------------------
        chat_view = [
            conversation_id,
            conversations,
            chat,
            chat_persona,
            badge,
            inspector,
            title_box,
            retention,
        ]
        editor = [persona_picker, persona_yaml, *form, versions, persona_preview, persona_status]
        refresh = partial(refresh_chat, rt)

        demo.load(identify, [browser_id], [owner, browser_id], queue=False, **quiet).then(
            partial(open_latest, rt), [owner], chat_view, **quiet
        ).then(partial(show_editor, rt), [owner, persona_picker], editor, **quiet)

        # Sidebar.
        new_btn.click(partial(new_chat, rt), [owner, chat_persona], chat_view, **quiet)
        conversations.input(
            partial(switch_conversation, rt), [owner, conversations], chat_view, **quiet
        )
        # Search on Enter and as the text changes; "always_last" keeps at most one search
        # waiting behind the running one (the latest text), however fast the keys come.
        search = partial(search_conversations, rt)
        search_view = [search_results, hit_ids, search_status, conversations]
        search_box.submit(search, [owner, search_box], search_view, **quiet)
        search_box.change(
            search, [owner, search_box], search_view, trigger_mode="always_last", **quiet
        )
        search_results.click(
            partial(open_search_hit, rt), [owner, hit_ids, search_results], chat_view, **quiet
        )
        rename = partial(rename_conversation, rt)
        rename_btn.click(rename, [owner, conversation_id, title_box], chat_view, **quiet)
        title_box.submit(rename, [owner, conversation_id, title_box], chat_view, **quiet)
        retention.input(
            partial(set_retention, rt), [owner, conversation_id, retention], chat_view, **quiet
        )
        delete_btn.click(
            partial(ask_delete, rt), [owner, conversation_id], [confirm_row, confirm_text], **quiet
        )
        confirm_no.click(cancel_delete, None, confirm_row, queue=False, **quiet)
        confirm_yes.click(
            partial(confirm_delete, rt),
            [owner, conversation_id],
            [*chat_view, confirm_row],
            **quiet,
        )

        # Chat: show the message at once, then stream; afterwards re-read what was saved
        # (this also runs after Stop, when the stream's own last update never arrives).
        chat_persona.input(
            partial(change_persona, rt), [owner, conversation_id, chat_persona], chat_view, **quiet
        )
        turn = [*chat_view, turn_done]
        finish = partial(finish_turn, rt)
        locked = [
            new_btn,
            conversations,
            search_box,
            chat_persona,
            reset_btn,
            rename_btn,
            delete_btn,
        ]
        sent = chat_input.submit(
            accept_message,
            [chat_input, chat],
            [chat_input, chat, pending, input_notice, turn_done],
            queue=False,
            **quiet,
        ).then(lock_controls, [turn_done], locked, queue=False, **quiet)
        reply = sent.then(
            partial(stream_reply, rt),
            [owner, conversation_id, pending, chat_persona, chat],
            turn,
            **quiet,
        )
        reply.then(finish, [owner, conversation_id, turn_done], chat_view, **quiet).then(
            input_ready, None, [chat_input, *locked], queue=False, **quiet
        )
        retried = (
            chat.retry(begin_retry, [chat], [chat, chat_input, turn_done], queue=False, **quiet)
            .then(lock_controls, [turn_done], locked, queue=False, **quiet)
            .then(partial(stream_retry, rt), [owner, conversation_id, chat], turn, **quiet)
        )
        retried.then(finish, [owner, conversation_id, turn_done], chat_view, **quiet).then(
            input_ready, None, [chat_input, *locked], queue=False, **quiet
        )
        chat_input.stop(None, None, None, cancels=[reply, retried], api_visibility="private")
        chat_input.input(
            partial(preview_draft, rt),
            [owner, conversation_id, chat_input],
            [inspector],
            trigger_mode="always_last",
            **quiet,
        )
        chat.undo(
            partial(undo_last, rt), [owner, conversation_id], [*chat_view, chat_input], **quiet
        )
        reset_btn.click(partial(reset_memory, rt), [owner, conversation_id], chat_view, **quiet)

        # Persona editor: YAML and form follow each other on user input only (`.input`), so
        # one side's update never echoes back.
        persona_picker.input(partial(show_editor, rt), [owner, persona_picker], editor, **quiet)
        persona_yaml.input(
            yaml_edited,
            [persona_yaml],
            [*form, persona_preview, persona_status],
            trigger_mode="always_last",
            **quiet,
        )
        for field in form:
            field.input(
                form_edited,
                [persona_yaml, *form],
                [persona_yaml, persona_preview, persona_status],
                trigger_mode="always_last",
                **quiet,
            )
        validate_btn.click(validate_persona, [persona_yaml], [persona_status], **quiet)
        persona_changed = [
            save_btn.click(partial(save_persona, rt), [owner, persona_yaml], editor, **quiet),
            rollback_btn.click(
                partial(rollback_persona, rt), [owner, persona_picker, versions], editor, **quiet
            ),
            revert_btn.click(partial(revert_persona, rt), [owner, persona_picker], editor, **quiet),
        ]
        for event in persona_changed:
            event.then(refresh, [owner, conversation_id, chat_persona], chat_view, **quiet)
    return demo


def main() -> int:
    """`python app.py`: serve until interrupted. Returns an exit status."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpx2", "google_genai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        rt = Runtime(app_data_dir())
        host, port = server_host(), config.port()
    except AssistantError as exc:  # e.g. MNEMO_MODEL=gemini without a key
        print(f"Mnemo cannot start: {exc.message}", file=sys.stderr)
        return 2
    demo = build_demo(rt)
    try:
        demo.queue(default_concurrency_limit=8).launch(
            server_name=host,
            server_port=port,
            theme=THEME,
            css=CSS,
            footer_links=[],
            show_error=False,
            quiet=True,
            prevent_thread_lock=True,
        )
    except OSError as exc:
        log.debug("launch failed", exc_info=exc)
        print(
            f"Mnemo cannot listen on {host}:{port}: the port is busy or not allowed. "
            f"Set MNEMO_PORT to a free port, e.g. MNEMO_PORT={port + 1} python app.py",
            file=sys.stderr,
        )
        return 1
    shown = "127.0.0.1" if host == "0.0.0.0" else host
    print(f"Mnemo is running on http://{shown}:{port}", flush=True)
    print(f"  model: {rt.model_name} · data: {rt.data_dir.resolve()}", flush=True)
    demo.block_thread()
    return 0


if __name__ == "__main__":
    sys.exit(main())
