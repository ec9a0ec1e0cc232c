"""The sidebar: new chat, search, the conversation list, and rename / memory / delete.

`render()` builds the components, `wire()` connects their events to the module-level handlers
below, which take the `Runtime` first (bound with `functools.partial`) and plain values.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from assistant.conversations import SEARCH_CHARS
from assistant.local import LocalModel
from assistant.runtime import Runtime
from ui import notices, tokens, views
from ui.errors import require_owner, user_errors
from ui.i18n import t
from ui.page import (
    QUIET,
    ChatView,
    Page,
    confirmation,
    extended,
    open_latest,
    outputs,
    render_chat,
    skipped,
)
from ui.texts import tr

log = logging.getLogger("mnemo.app")


# ---- conversations -----------------------------------------------------------------------


async def new_chat(rt: Runtime, owner: str, persona_id: str | None, busy: bool = False) -> ChatView:
    """A blank chat with the chosen persona; it is saved when the first message is sent.

    Refused while a message is being answered (`busy`: New chat clicked just after Enter,
    before the button was locked): the reply streams into the conversation shown, so a blank
    chat shown meanwhile would be replaced by it at once."""
    with user_errors("start a new chat"):
        require_owner(owner)
        if busy:
            notices.info(tr("new_chat_after_reply"), title=tr("t_reply_still_coming"))
            return skipped(ChatView)
        return await render_chat(rt, owner, None, persona_id)


async def switch_conversation(rt: Runtime, owner: str, conversation_id: str | None) -> ChatView:
    with user_errors("open that conversation"):
        require_owner(owner)
        return await render_chat(rt, owner, conversation_id)


async def rename_conversation(
    rt: Runtime, owner: str, conversation_id: str | None, title: str
) -> ChatView:
    with user_errors("rename the conversation"):
        require_owner(owner)
        title = (title or "").strip()
        if not conversation_id:
            raise notices.error(tr("save_before_rename"), title=tr("t_nothing_to_rename"))
        if not title:
            raise notices.error(tr("type_a_name"), title=tr("t_no_name"))
        await (await rt.conversations()).rename(owner, conversation_id, title)
        notices.info(tr("renamed", title=title), title=tr("t_renamed"))
        return await render_chat(rt, owner, conversation_id)


async def set_retention(
    rt: Runtime, owner: str, conversation_id: str | None, minutes: int | None
) -> ChatView:
    """Keep the conversation, or forget it after some idle time."""
    with user_errors("change how long this conversation is kept"):
        require_owner(owner)
        if conversation_id:
            facade = await rt.conversations()
            await facade.set_retention(owner, conversation_id, int(minutes) if minutes else None)
        return await render_chat(rt, owner, conversation_id)


class DeleteConfirm(NamedTuple):
    """The confirmation row under "Delete" and its question."""

    confirm_row: Any  # gr.update(visible=...)
    confirm_text: str


# After a delete: the conversation shown next, with the confirmation row hidden.
DeletedView = extended(ChatView, "DeletedView", confirm_row=Any)


async def ask_delete(rt: Runtime, owner: str, conversation_id: str | None) -> DeleteConfirm:
    """Show the confirmation row for deleting the current conversation."""
    with user_errors("delete the conversation"):
        require_owner(owner)
        if not conversation_id:
            notices.info(tr("nothing_to_delete"), title=tr("t_nothing_deleted"))
            return DeleteConfirm(confirm_row=gr.update(visible=False), confirm_text="")
        conversation = await (await rt.conversations()).get(owner, conversation_id)
        title = conversation.title or tr("this_conversation")
        return DeleteConfirm(
            confirm_row=gr.update(visible=True),
            confirm_text=tr("delete_question", title=views.plain_markdown(title)),
        )


def cancel_delete() -> Any:
    return gr.update(visible=False)


async def confirm_delete(rt: Runtime, owner: str, conversation_id: str | None) -> Any:
    """Delete, then show the most recent remaining conversation (or a new chat)."""
    with user_errors("delete the conversation"):
        require_owner(owner)
        if conversation_id:
            await (await rt.conversations()).delete(owner, conversation_id)
            notices.info(tr("deleted"), title=tr("t_deleted"))
        view = await open_latest(rt, owner)
        return DeletedView(*view, confirm_row=gr.update(visible=False))


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
    query = (query or "").strip()[:SEARCH_CHARS]
    if not query:
        return _search_view([], None)
    if not owner:  # the page has not identified itself yet (only a script gets here)
        return _search_view([], views.search_status(0, available=False))
    try:
        facade = await rt.conversations()
        found = await facade.search(owner, query, limit=views.SEARCH_ROWS, mark=views.SEARCH_MARK)
    except Exception:  # a search is a nicety; never interrupt typing with an error
        log.warning("search failed", exc_info=True)
        return _search_view([], views.search_status(0, available=False))
    if not found.searchable or not found.available:
        status = views.search_status(0, searchable=found.searchable, available=found.available)
        return _search_view([], status)
    rows = [(views.search_result(result), result.conversation.id) for result in found.results]
    return _search_view(rows, views.search_status(len(rows)))


async def open_search_hit(
    rt: Runtime, owner: str, hit_ids: list[str] | None, index: int | None
) -> ChatView:
    """Clicking a search result opens its conversation, as picking it in the list would."""
    if index is None or not 0 <= index < len(hit_ids or []):
        return skipped(ChatView)
    return await switch_conversation(rt, owner, hit_ids[index])


# ---- layout and wiring -------------------------------------------------------------------


@dataclass(frozen=True)
class Sidebar:
    """The sidebar's components; `Page` shares the ones other panels fill or lock."""

    new_chat: gr.Button
    search: gr.Textbox
    search_status: gr.Markdown
    search_results: gr.Dataset
    hit_ids: gr.State
    conversations: gr.Radio
    title: gr.Textbox
    rename: gr.Button
    delete: gr.Button
    retention: gr.Dropdown
    confirm_row: gr.Column
    confirm_text: gr.Markdown
    confirm_yes: gr.Button
    confirm_no: gr.Button
    tokens: tokens.TokenPanel


# On a phone the open sidebar covers the whole chat, so it starts closed there (as if its own
# toggle had been pressed); wider screens keep it open.
CLOSE_ON_NARROW_SCREENS = """() => {
  if (!window.matchMedia("(max-width: 768px)").matches) return;
  const sidebar = document.getElementById("sidebar");
  if (sidebar && sidebar.classList.contains("open")) {
    sidebar.querySelector(".toggle-button")?.click();
  }
}"""


def render(rt: Runtime) -> Sidebar:
    """Build the sidebar (inside the app's Blocks)."""
    # Sign-in exists only on a Space whose README asks for it (hf_oauth: true sets these).
    with_login = bool(os.environ.get("SPACE_ID") and os.environ.get("OAUTH_CLIENT_ID"))
    with gr.Sidebar(elem_id="sidebar", width=300):
        gr.Markdown(t("brand"), elem_id="brand")
        if with_login:
            gr.LoginButton(elem_id="login")
        new_btn = gr.Button(t("new_chat"), variant="primary", elem_id="new-chat")
        search_box = gr.Textbox(
            show_label=False,
            placeholder=t("search"),
            max_lines=1,
            max_length=SEARCH_CHARS,
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
            choices=[], label=t("conversations"), elem_id="conversations", container=False
        )
        with gr.Accordion(t("manage"), open=False, elem_id="manage"):
            title_box = gr.Textbox(
                label=t("name"),
                placeholder=t("name_placeholder"),
                max_lines=1,
                elem_id="rename-box",
            )
            with gr.Row():
                rename_btn = gr.Button(t("rename"), size="sm", elem_id="rename-btn")
                delete_btn = gr.Button(t("delete"), size="sm", variant="stop", elem_id="delete-btn")
            retention = gr.Dropdown(
                choices=views.retention_choices(),
                value=0,
                label=t("memory"),
                elem_id="retention",
            )
            with confirmation("delete-confirm") as confirm_row:
                confirm_text = gr.Markdown(elem_id="delete-confirm-text")
                with gr.Row():
                    confirm_yes = gr.Button(
                        t("delete_for_good"), size="sm", variant="stop", elem_id="delete-yes"
                    )
                    confirm_no = gr.Button(t("cancel"), size="sm", elem_id="delete-no")
        token_panel = tokens.render()
        if isinstance(rt.model, LocalModel):  # its name reads in the page's language
            gr.Markdown(t("answering_local"), elem_id="model-name", elem_classes="muted")
            gr.Markdown(t("offline_note"), elem_id="offline-note", elem_classes="muted")
        else:
            note = views.model_note(rt.model_name, lead=t("answering"))
            gr.Markdown(note, elem_id="model-name", elem_classes="muted")
    return Sidebar(
        new_chat=new_btn,
        search=search_box,
        search_status=search_status,
        search_results=search_results,
        hit_ids=hit_ids,
        conversations=conversations,
        title=title_box,
        rename=rename_btn,
        delete=delete_btn,
        retention=retention,
        confirm_row=confirm_row,
        confirm_text=confirm_text,
        confirm_yes=confirm_yes,
        confirm_no=confirm_no,
        tokens=token_panel,
    )


def wire(rt: Runtime, page: Page, side: Sidebar) -> None:
    """Connect the sidebar's events (inside the app's Blocks, after every panel is built)."""
    owner, conversation_id = page.owner, page.conversation_id
    chat_view = outputs(ChatView, page)
    tokens.wire(rt, page, side.tokens)
    side.new_chat.click(partial(new_chat, rt), [owner, page.persona, page.busy], chat_view, **QUIET)
    side.conversations.input(
        partial(switch_conversation, rt), [owner, side.conversations], chat_view, **QUIET
    )
    # Search on Enter and as the text changes; "always_last" keeps at most one search
    # waiting behind the running one (the latest text), however fast the keys come.
    search = partial(search_conversations, rt)
    found = {"results": side.search_results, "hit_ids": side.hit_ids, "status": side.search_status}
    search_view = outputs(SearchView, found, side)
    side.search.submit(search, [owner, side.search], search_view, **QUIET)
    side.search.change(
        search, [owner, side.search], search_view, trigger_mode="always_last", **QUIET
    )
    side.search_results.click(
        partial(open_search_hit, rt), [owner, side.hit_ids, side.search_results], chat_view, **QUIET
    )
    rename = partial(rename_conversation, rt)
    side.rename.click(rename, [owner, conversation_id, side.title], chat_view, **QUIET)
    side.title.submit(rename, [owner, conversation_id, side.title], chat_view, **QUIET)
    side.retention.input(
        partial(set_retention, rt), [owner, conversation_id, side.retention], chat_view, **QUIET
    )
    side.delete.click(
        partial(ask_delete, rt), [owner, conversation_id], outputs(DeleteConfirm, side), **QUIET
    )
    side.confirm_no.click(cancel_delete, None, side.confirm_row, queue=False, **QUIET)
    side.confirm_yes.click(
        partial(confirm_delete, rt),
        [owner, conversation_id],
        outputs(DeletedView, page, side),
        **QUIET,
    )
