"""What every panel shares: the components more than one panel reads or fills (`Page`), and
the `ChatView` of one conversation that the sidebar, the chat and the memory badge all show.

Handlers return NamedTuples; `outputs()` lists the components a NamedTuple fills by its field
names, so no event counts tuple positions. Each panel module builds its own components
(`render()`) and wires its own events (`wire()`); `app.build_demo()` composes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from assistant.local import LocalModel
from assistant.runtime import Runtime
from ui import board_views, notices, views
from ui.badge import badge_text
from ui.errors import require_owner, user_errors
from ui.i18n import remember_language
from ui.texts import default_persona, tr

# No progress overlays: replies stream visibly, other events are quick, and with
# show_progress="hidden" a gr.Error shows as a toast without blanking its outputs.
# The events are the UI's own, not an API: keep them out of the API and its docs.
QUIET: dict[str, Any] = {"show_progress": "hidden", "api_visibility": "private"}


@contextlib.contextmanager
def confirmation(elem_id: str) -> Iterator[gr.Column]:
    """A hidden box for a question before something is forgotten ("Forget it" / "Cancel"),
    shown with gr.update(visible=True). A gr.Group puts its elem_id on two nested divs
    (Gradio 6.31), so the id goes on a Column around the group: one element to find."""
    with gr.Column(visible=False, elem_id=elem_id) as box, gr.Group():
        yield box


@dataclass(frozen=True)
class Page:
    """The components that more than one panel reads or fills. Attribute names are the field
    names of the handlers' NamedTuples (`ChatView`, `Locked`, ...), which is how `outputs()`
    finds them."""

    owner: gr.State
    conversation_id: gr.State
    # The conversation the chat shows, as the browser has it (a hidden Textbox, not a State):
    # a message goes where the page showed it when Enter was pressed, even if a New chat or
    # another conversation had already changed `conversation_id` on the server.
    shown_conversation: gr.Textbox
    conversations: gr.Radio  # sidebar
    title: gr.Textbox  # sidebar: the rename box
    retention: gr.Dropdown  # sidebar: "forget after"
    new_chat: gr.Button  # sidebar
    search: gr.Textbox  # sidebar
    rename: gr.Button  # sidebar
    delete: gr.Button  # sidebar
    chat: gr.Chatbot  # chat
    chat_input: gr.Textbox  # chat
    persona: gr.Dropdown  # chat: the persona of this conversation
    badge: gr.Markdown  # memory badge
    reset: gr.Button  # memory badge
    reset_yes: gr.Button  # memory badge: "Forget it" under the Reset question
    delete_yes: gr.Button  # sidebar: "Delete for good" under the Delete question
    search_results: gr.Dataset  # sidebar
    inspector: gr.Markdown  # memory inspector
    reset_text: gr.Markdown  # memory badge: the Reset question
    busy: gr.State  # chat: True from a message's sending to its turn's last step


def outputs(shape: type, *sources: Any) -> list[Any]:
    """The components a handler returning the NamedTuple `shape` fills, in its field order:
    each field is looked up by name in the first source (a record or a mapping) that has it."""
    found = []
    for name in shape._fields:
        for source in sources:
            if isinstance(source, dict) and name in source:
                found.append(source[name])
                break
            if not isinstance(source, dict) and hasattr(source, name):
                found.append(getattr(source, name))
                break
        else:
            raise AttributeError(f"{shape.__name__}.{name}: no component of that name to fill")
    return found


def extended(base: type, name: str, **fields: Any) -> Any:
    """A NamedTuple with `base`'s fields followed by `fields` (name=type), e.g. a ChatView and
    whether the turn is done."""
    return NamedTuple(name, [*base.__annotations__.items(), *fields.items()])


def skipped(shape: Any) -> Any:
    """`shape` with every field left as it is on screen."""
    return shape._make(gr.skip() for _ in shape._fields)


# ---- the chat pane and sidebar for one conversation --------------------------------------


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
    shown_conversation: Any  # the id beside the chat in the browser ("" = a new chat)
    reset_text: Any  # Reset's question, in step with the badge (it may be left open)


async def persona_choices(rt: Runtime, owner: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The persona picker's (label, id) choices, the roundtables after the personas, and each
    one's avatar by id."""
    facade = await rt.conversations()
    personas = await facade.personas(owner)
    boards = await facade.roundtables(owner)
    choices = [(views.persona_label(p), p.id) for p in personas]
    choices += [(board_views.roundtable_label(b), b.ref) for b in boards]
    avatars = {p.id: p.avatar or "💬" for p in personas}
    avatars |= {b.ref: views.ROUNDTABLE_AVATAR for b in boards}
    return choices, avatars


def plain_chat(chat: list[Any] | None) -> list[dict[str, Any]]:
    return [
        {"role": m["role"], "content": views.message_text(m.get("content"))}
        for m in (chat or [])
        if isinstance(m, dict) and m.get("role") in ("user", "assistant")
    ]


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
    facade = await rt.conversations()
    conversations = await facade.list(owner)
    choices, avatars = await persona_choices(rt, owner)
    if not conversation_id and not persona_id:  # a new chat greets in the page's language
        persona_id = default_persona()
    opened = await facade.open(owner, conversation_id, persona_id=persona_id)
    if opened.state == "missing":
        notices.warning(tr("conversation_gone"), title=tr("t_conversation_gone"))
        conversation_id = None
    conversation = opened.conversation
    board = opened.roundtable
    greeting = views.shown(opened.persona, "greeting")
    if board is not None:
        greeting = board_views.roundtable_greeting(board, offline=isinstance(rt.model, LocalModel))
    if conversation is not None:
        page = opened.transcript
        chat = views.chat_messages(
            page.turns, greeting, hidden=page.earlier or 0, speakers=opened.speakers
        )
        badge = badge_text(opened.status, opened.model)
        title = conversation.title or ""
        retention = conversation.retention_minutes or 0
    else:
        chat = views.chat_messages([], greeting)
        badge = views.draft_badge(opened.model)
        title = ""
        retention = 0
        if opened.state == "unreadable":
            chat = plain_chat(shown) or chat
            badge = badge_text(opened.status, opened.model)
    if board is not None:
        badge = board_views.roundtable_badge(badge, board)
    listed = views.conversation_choices(conversations, avatars)
    selected = conversation_id if any(cid == conversation_id for _, cid in listed) else None
    return ChatView(
        conversation_id=conversation_id,
        conversations=gr.update(choices=listed, value=selected),
        chat=chat,
        persona=gr.update(choices=choices, value=board.ref if board else opened.persona.id),
        badge=badge,
        inspector=views.preview_markdown(opened.preview),
        title=gr.update(value=title, interactive=conversation is not None),
        retention=gr.update(
            choices=views.retention_choices(),
            value=retention,
            interactive=conversation is not None,
        ),
        shown_conversation=conversation_id or "",
        reset_text=views.reset_question(opened.status, title) if conversation else gr.skip(),
    )


async def open_latest(rt: Runtime, owner: str) -> ChatView:
    """On page load: the most recently active conversation, or a new chat."""
    with user_errors("load your conversations"):
        require_owner(owner)
        latest = await (await rt.conversations()).latest(owner)
        return await render_chat(rt, owner, latest)


async def relabel(rt: Runtime, owner: str, conversation_id: str | None, lang: str) -> ChatView:
    """After the language switch (`lang`: the page's new language): the chat again, its
    server-written text in that language. Before the page has identified itself there is
    nothing to rewrite."""
    remember_language(lang)
    if not owner:
        return skipped(ChatView)
    view = await refresh_chat(rt, owner, conversation_id)
    # What the user may be typing or choosing stays as it is.
    return view._replace(conversation_id=gr.skip(), title=gr.skip(), shown_conversation=gr.skip())


async def refresh_chat(
    rt: Runtime, owner: str, conversation_id: str | None, persona_id: str | None = None
) -> ChatView:
    """Re-read the current chat (after a persona edit)."""
    with user_errors("refresh the chat"):
        require_owner(owner)
        return await render_chat(rt, owner, conversation_id, persona_id)
