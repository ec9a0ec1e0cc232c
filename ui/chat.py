"""The chat pane: the transcript, the persona of this chat, and the message box.

Sending shows the user's message at once (`queue=False`), locks the controls that would switch
the conversation, then streams the reply (`.then()`); Stop, Retry and Undo act on that turn.
Handlers are module-level functions over plain values; each takes the `Runtime` first.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from assistant.chat import Cleared, Delta, Done, ToolUsed
from assistant.conversations import Conversations
from assistant.errors import InvalidMessage, UserError
from assistant.roundtable import Speaking, Spoke
from assistant.runtime import Runtime
from ui import board_views, notices, views
from ui.errors import message_of, require_owner, shown, user_errors
from ui.i18n import current_language, t
from ui.page import (
    QUIET,
    ChatView,
    Page,
    extended,
    outputs,
    persona_choices,
    plain_chat,
    render_chat,
    skipped,
)
from ui.texts import known, tr

# A streaming turn fills the ChatView and says whether its final state has arrived.
TurnView = extended(ChatView, "TurnView", turn_done=bool)
# Undo also puts the dropped message back in the input box.
UndoneView = extended(ChatView, "UndoneView", chat_input=Any)


class Sending(NamedTuple):
    """Where a message goes, fixed when Enter is pressed: the conversation the page showed
    ("" or None = a new chat) and the chat with the message under it."""

    conversation_id: str | None
    chat: list[dict[str, Any]]


class Accepted(NamedTuple):
    """What the browser shows the moment a message is sent."""

    chat_input: Any
    chat: Any
    pending: str  # the text the next step sends ("" = nothing to send)
    input_notice: Any
    turn_done: bool
    busy: Any  # True from here until the turn's last step (input_ready)
    sending: Any  # a Sending for the next step (stream_sent)


def accept_message(
    text: str, chat: list[dict[str, Any]] | None, busy: bool = False, shown: str | None = None
) -> Accepted:
    """Show the user's message at once (queue=False); the reply streams in the next step.

    Empty input does nothing; an over-long message stays in the box and the notice says how
    much to cut. While a turn is still running (`busy`: Enter pressed as a reply streams or
    finishes) the message stays in the box and the notice says to send it afterwards: Gradio
    would not start a second reply beside the first, and the message was lost. `shown` is the
    conversation beside `chat` in the browser: the message goes there (`sending`), whatever a
    New chat clicked just before or after does to the server's `conversation_id` meanwhile.
    """
    text = (text or "").strip()
    if not text:
        return Accepted(
            gr.skip(), gr.skip(), "", gr.update(visible=False), True, gr.skip(), gr.skip()
        )
    if busy:
        notice = gr.update(value="⏳ " + tr("reply_still_coming"), visible=True)
        return Accepted(gr.skip(), gr.skip(), "", notice, gr.skip(), gr.skip(), gr.skip())
    try:
        Conversations.check_message(text)  # memory's check, and its wording
    except InvalidMessage as exc:
        notice = gr.update(value="⚠️ " + message_of(exc), visible=True)
        return Accepted(gr.skip(), gr.skip(), "", notice, True, gr.skip(), gr.skip())
    chat = [*(chat or []), {"role": "user", "content": views.message_markdown(text)}]
    box = gr.update(value="", submit_btn=False, stop_btn=True)
    sending = Sending(shown or None, chat)
    return Accepted(box, chat, text, gr.update(visible=False), False, True, sending)


class Locked(NamedTuple):
    """While a reply streams, the controls that would switch or change the conversation wait
    (Stop first); otherwise the stream's updates would land in whatever is shown instead.
    That includes a Reset or Delete question left open before the message was sent, the
    search results, and Retry / Undo under the streaming reply (hidden by the chat's
    `turn-running` class, ui/app.css)."""

    new_chat: Any
    conversations: Any
    search: Any
    persona: Any
    reset: Any
    rename: Any
    delete: Any
    reset_yes: Any
    delete_yes: Any
    search_results: Any
    chat: Any


# After a reply: the send button is back, and the locked controls with it; the turn is over.
# The notice under the box goes: while a turn runs it can only say that a reply is still
# coming (accept_message), which is no longer true.
Unlocked = extended(Locked, "Unlocked", chat_input=Any, busy=bool, input_notice=Any)

RUNNING = "turn-running"  # the chat's and the search results' class while a turn runs


def _locking(locked: bool) -> Locked:
    buttons = gr.update(interactive=not locked)
    marked = gr.update(elem_classes=[RUNNING] if locked else [])
    return Locked._make(
        marked if name in ("search_results", "chat") else buttons for name in Locked._fields
    )


def lock_controls(done: bool) -> Locked:
    """Disable sidebar and chat-header controls while a reply streams (unless nothing was
    sent)."""
    return skipped(Locked) if done else _locking(True)


def ready() -> Any:
    """The last step of the page's load: the message box takes messages from now on. Its
    being enabled is the page's "loaded" state (the browser tests wait for it)."""
    return gr.update(interactive=True)


def input_ready() -> Any:
    """After a reply (or a stop): the send button is back and the controls work again; the
    "reply still coming" notice, if Enter was pressed meanwhile, is gone (the message it
    kept waits in the box)."""
    box = gr.update(submit_btn=True, stop_btn=False, interactive=True)
    notice = gr.update(visible=False)
    return Unlocked(*_locking(False), chat_input=box, busy=False, input_notice=notice)


def _streaming(conversation_id: str, chat: list[dict[str, Any]]) -> Any:
    """A TurnView while the reply streams: the chat only, the rest left as it is."""
    return skipped(TurnView)._replace(
        conversation_id=conversation_id,
        shown_conversation=conversation_id,
        chat=chat,
        turn_done=False,
    )


async def _stream(
    rt: Runtime,
    owner: str,
    conversation_id: str,
    chat: list[dict[str, Any]],
    events: AsyncIterator[Any],
    action: str,
) -> AsyncIterator[Any]:
    """Yield TurnViews as the reply streams in, then the saved state with done=True.

    A failed turn keeps the user's message (the service saved it) and says what went wrong in
    the chat and in a toast; the Retry button under it asks again.
    """
    failure: UserError | None = None
    cleared = None
    notice = None
    reply = ""
    # The facade's stream holds the conversation's turn lock until it is closed, so a refresh
    # after Stop (finish_turn) sees the saved partial reply.
    header = ""  # a roundtable speaker's avatar and name, above its reply
    speakers: dict[str, Any] = {}  # this turn's, by persona id (a veto line names the vetoer)
    try:
        chat = [*chat, {"role": "assistant", "content": ""}]
        async for event in events:
            if isinstance(event, Speaking):
                # Each speaker gets its own bubble; the first one takes the empty placeholder.
                header = views.speaker_header(event.speaker.avatar, views.shown(event.speaker))
                speakers[event.speaker.persona_id] = event.speaker
                reply = ""
                bubble = {"role": "assistant", "content": header}
                if views.message_text(chat[-1].get("content")):
                    chat = [*chat, bubble]
                else:
                    chat[-1] = bubble
                if event.veto is not None and event.speaker.role != "chair":
                    notices.info(
                        board_views.veto_note(event.veto, views.shown(event.speaker)),
                        title=tr("t_veto"),
                    )
                yield _streaming(conversation_id, chat)
            elif isinstance(event, Delta):
                reply += event.text
                content = views.message_markdown(reply)
                chat[-1] = {
                    "role": "assistant",
                    "content": f"{header}\n\n{content}" if header else content,
                }
                yield _streaming(conversation_id, chat)
            elif isinstance(event, ToolUsed):
                # Shown collapsed above the reply; stored as a note on the user's side.
                chat.insert(len(chat) - 1, views.tool_message(event.note))
                yield _streaming(conversation_id, chat)
            elif isinstance(event, Cleared):
                cleared = event.result
            elif isinstance(event, Done | Spoke):
                notice = (event.done if isinstance(event, Spoke) else event).notice or notice
                if isinstance(event, Spoke) and event.veto_line is not None:
                    # What the store now holds with the reply, shown before the next speaker.
                    line = views.system_line(event.veto_line, speakers)
                    chat[-1] = {**chat[-1], "content": f"{chat[-1]['content']}\n\n{line}"}
                    yield _streaming(conversation_id, chat)
    except UserError as exc:
        failure = exc
    finally:
        with contextlib.suppress(Exception):
            await events.aclose()  # type: ignore[attr-defined]
    with user_errors(action):
        view = await render_chat(rt, owner, conversation_id, shown=chat)
    extra = None
    if cleared is not None:
        extra = views.reset_note(cleared)
        notices.info(extra, title=tr("t_memory_cleared"))
    elif failure is not None:
        title, message = shown(failure)
        extra = views.unanswered_note("failed", message)
        notices.warning(message, title=title or tr("t_not_answered"))
    elif notice:
        notices.info(known(notice), title=tr("t_incomplete"))
    # A failure stored with the turn is in the transcript already: shown once.
    if extra and not (view.chat and view.chat[-1]["content"] == extra):
        view = view._replace(chat=[*view.chat, {"role": "assistant", "content": extra}])
    yield TurnView(*view, turn_done=True)


async def stream_reply(
    rt: Runtime,
    owner: str,
    conversation_id: str | None,
    text: str,
    persona_id: str | None,
    chat: list[Any] | None,
) -> AsyncIterator[Any]:
    """Send the pending message and stream the reply. A new chat is saved first."""
    if not text:  # empty or too long: accept_message already said so
        yield skipped(TurnView)._replace(turn_done=True)
        return
    with user_errors("send your message"):
        require_owner(owner)
        rt.accept_turn()  # refused while the app shuts down, before a new chat is saved
        facade = await rt.conversations()
        if not conversation_id:
            conversation = await facade.create(owner, persona_id=persona_id)
            conversation_id = conversation.id
            # Show the new conversation in the sidebar before the reply arrives.
            conversations = await facade.list(owner)
            _, avatars = await persona_choices(rt, owner)
            listed = gr.update(
                choices=views.conversation_choices(conversations, avatars), value=conversation_id
            )
            yield skipped(TurnView)._replace(
                conversation_id=conversation_id,
                shown_conversation=conversation_id,
                conversations=listed,
                turn_done=False,
            )
    async for view in _stream(
        rt,
        owner,
        conversation_id,
        plain_chat(chat),
        facade.send(owner, conversation_id, text, language=current_language()),
        "send your message",
    ):
        yield view


async def stream_sent(
    rt: Runtime, owner: str, sending: Sending | None, text: str, persona_id: str | None
) -> AsyncIterator[Any]:
    """stream_reply into the conversation fixed when Enter was pressed (accept_message)."""
    sending = sending or Sending(None, [])
    async for view in stream_reply(
        rt, owner, sending.conversation_id, text, persona_id, sending.chat
    ):
        yield view


class RetryBegun(NamedTuple):
    chat: Any
    chat_input: Any
    turn_done: bool
    busy: bool


def begin_retry(chat: list[Any] | None) -> RetryBegun:
    """Drop the last reply from view at once; the new one streams in the next step."""
    chat = plain_chat(chat)
    while chat and chat[-1]["role"] == "assistant":
        chat.pop()
    return RetryBegun(chat, gr.update(submit_btn=False, stop_btn=True), False, True)


async def finish_turn(rt: Runtime, owner: str, conversation_id: str | None, done: bool) -> ChatView:
    """After a reply: nothing to do if the stream delivered its final state; after Stop it
    did not, so re-read what was saved (the partial reply, marked as stopped)."""
    if done:
        return skipped(ChatView)
    with user_errors("refresh the chat"):
        require_owner(owner)
        await (await rt.conversations()).settled(conversation_id)
        return await render_chat(rt, owner, conversation_id)


async def stream_retry(
    rt: Runtime, owner: str, conversation_id: str | None, chat: list[Any] | None
) -> AsyncIterator[Any]:
    """Regenerate the last reply."""
    if not conversation_id:
        yield skipped(TurnView)._replace(turn_done=True)
        return
    with user_errors("retry"):
        require_owner(owner)
        rt.accept_turn()
        facade = await rt.conversations()
    async for view in _stream(
        rt,
        owner,
        conversation_id,
        plain_chat(chat),
        facade.retry(owner, conversation_id, language=current_language()),
        "retry",
    ):
        yield view


async def undo_last(rt: Runtime, owner: str, conversation_id: str | None) -> Any:
    """Forget the last exchange (memory too) and put the message back in the input box."""
    with user_errors("undo"):
        require_owner(owner)
        if not conversation_id:
            return UndoneView(*await render_chat(rt, owner, None), chat_input=gr.skip())
        dropped = await (await rt.conversations()).undo(owner, conversation_id)
        text = next((t.content for t in dropped if t.role == "user"), None)
        view = await render_chat(rt, owner, conversation_id)
        return UndoneView(*view, chat_input=gr.update(value=text) if text else gr.skip())


async def change_persona(
    rt: Runtime, owner: str, conversation_id: str | None, persona_id: str
) -> ChatView:
    """Pick the persona of a new chat, or switch the current conversation to another one."""
    with user_errors("change the persona"):
        require_owner(owner)
        if conversation_id and persona_id:
            facade = await rt.conversations()
            change = await facade.set_persona(owner, conversation_id, persona_id)
            if change.changed:
                notices.info(
                    tr("persona_changed", name=views.shown(change.persona)),
                    title=tr("t_persona_changed"),
                )
        return await render_chat(rt, owner, conversation_id, persona_id)


# ---- layout and wiring -------------------------------------------------------------------


@dataclass(frozen=True)
class ChatPane:
    """The chat tab's components; `Page` shares the chat, the input and the persona picker."""

    chat: gr.Chatbot
    input_notice: gr.Markdown
    persona: gr.Dropdown
    chat_input: gr.Textbox
    pending: gr.State  # the message being answered
    turn_done: gr.State  # False while a reply streams
    busy: gr.State  # True from a message's sending to its turn's last step
    sending: gr.State  # where that message goes (a Sending)


def render() -> ChatPane:
    """Build the chat pane (inside the chat tab)."""
    pending = gr.State("")
    sending = gr.State(None)
    turn_done = gr.State(True)
    busy = gr.State(False)
    chat = gr.Chatbot(
        elem_id="chat",
        show_label=False,
        height="calc(100vh - 310px)",
        min_height=360,
        buttons=["copy", "copy_all"],
        layout="bubble",
        group_consecutive_messages=False,  # a reset note is not the greeting
        placeholder=t("chat_placeholder"),
    )
    input_notice = gr.Markdown(visible=False, elem_id="input-notice")
    with gr.Row(elem_id="composer", equal_height=True):
        persona = gr.Dropdown(
            choices=[],
            label=t("persona"),
            show_label=False,
            scale=0,
            min_width=250,
            elem_id="chat-persona",
        )
        chat_input = gr.Textbox(
            show_label=False,
            placeholder=t("input_placeholder"),
            lines=1,
            max_lines=8,
            submit_btn=True,
            stop_btn=False,
            interactive=False,  # until the page has loaded (ready)
            autofocus=True,
            scale=1,
            elem_id="chat-input",
        )
    return ChatPane(chat, input_notice, persona, chat_input, pending, turn_done, busy, sending)


def wire(rt: Runtime, page: Page, pane: ChatPane) -> None:
    """Show the message at once, then stream; afterwards re-read what was saved (this also
    runs after Stop, when the stream's own last update never arrives)."""
    owner, conversation_id = page.owner, page.conversation_id
    chat_view = outputs(ChatView, page)
    turn = outputs(TurnView, page, pane)
    locked = outputs(Locked, page)
    unlocked = outputs(Unlocked, page, pane)
    pane.persona.input(
        partial(change_persona, rt), [owner, conversation_id, pane.persona], chat_view, **QUIET
    )
    finish = partial(finish_turn, rt)
    sent = pane.chat_input.submit(
        accept_message,
        [pane.chat_input, pane.chat, pane.busy, page.shown_conversation],
        outputs(Accepted, pane),
        queue=False,
        **QUIET,
    ).then(lock_controls, [pane.turn_done], locked, queue=False, **QUIET)
    reply = sent.then(
        partial(stream_sent, rt),
        [owner, pane.sending, pane.pending, pane.persona],
        turn,
        **QUIET,
    )
    reply.then(finish, [owner, conversation_id, pane.turn_done], chat_view, **QUIET).then(
        input_ready, None, unlocked, queue=False, **QUIET
    )
    retried = (
        pane.chat.retry(begin_retry, [pane.chat], outputs(RetryBegun, pane), queue=False, **QUIET)
        .then(lock_controls, [pane.turn_done], locked, queue=False, **QUIET)
        .then(partial(stream_retry, rt), [owner, conversation_id, pane.chat], turn, **QUIET)
    )
    retried.then(finish, [owner, conversation_id, pane.turn_done], chat_view, **QUIET).then(
        input_ready, None, unlocked, queue=False, **QUIET
    )
    pane.chat_input.stop(None, None, None, cancels=[reply, retried], api_visibility="private")
    pane.chat.undo(
        partial(undo_last, rt), [owner, conversation_id], outputs(UndoneView, page), **QUIET
    )
