"""The memory badge (what the assistant remembers, on every tab), its Reset button with a
confirmation that says what will go, and the inspector (what the model receives next,
refreshed as the user types)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from assistant.errors import UserError
from assistant.runtime import Runtime
from ui import notices, views
from ui.errors import require_owner, user_errors
from ui.i18n import current_language, t
from ui.page import QUIET, ChatView, Page, confirmation, extended, outputs, render_chat
from ui.texts import tr

log = logging.getLogger("mnemo.app")


async def preview_draft(rt: Runtime, owner: str, conversation_id: str | None, draft: str) -> Any:
    """While typing: the inspector, including older turns this message would recall."""
    if not conversation_id or not owner:
        return gr.skip()
    try:
        facade = await rt.conversations()
        preview = await facade.preview(
            owner, conversation_id, draft=draft, language=current_language()
        )
    except UserError:  # e.g. the conversation was deleted in another tab: nothing to show
        return gr.skip()
    except Exception:  # a preview is a nicety; never interrupt typing with an error
        log.warning("inspector preview failed", exc_info=True)
        return gr.skip()
    return views.preview_markdown(preview)


class ResetConfirm(NamedTuple):
    """The confirmation under the header: what a reset will forget."""

    reset_confirm: Any  # gr.update(visible=...)
    reset_text: str


async def ask_reset(rt: Runtime, owner: str, conversation_id: str | None) -> ResetConfirm:
    """The Reset button: say what will go, and wait for "Forget it"."""
    with user_errors("reset the memory"):
        require_owner(owner)
        if not conversation_id:
            notices.info(tr("nothing_to_forget"), title=tr("t_nothing_to_forget"))
            return ResetConfirm(gr.update(visible=False), "")
        facade = await rt.conversations()
        status = await facade.status(owner, conversation_id)
        conversation = await facade.get(owner, conversation_id)
        return ResetConfirm(
            gr.update(visible=True), views.reset_question(status, conversation.title)
        )


def cancel_reset() -> Any:
    return gr.update(visible=False)


async def reset_memory(rt: Runtime, owner: str, conversation_id: str | None) -> ChatView:
    """The Reset button: forget this conversation and say what was cleared."""
    with user_errors("reset the memory"):
        require_owner(owner)
        if not conversation_id:
            notices.info(tr("nothing_to_forget"), title=tr("t_nothing_to_forget"))
            return await render_chat(rt, owner, None)
        result = await (await rt.conversations()).reset(owner, conversation_id)
        note = views.reset_note(result)
        notices.info(note, title=tr("t_memory_cleared"))
        view = await render_chat(rt, owner, conversation_id)
        return view._replace(chat=[*view.chat, {"role": "assistant", "content": note}])


# ---- layout and wiring -------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryBadge:
    badge: gr.Markdown
    reset: gr.Button
    reset_confirm: gr.Column
    reset_text: gr.Markdown
    reset_yes: gr.Button
    reset_no: gr.Button


def render_badge() -> MemoryBadge:
    """The header row; what the assistant remembers stays in view on every tab."""
    with gr.Row(elem_id="chat-header", equal_height=True):
        badge = gr.Markdown(elem_id="memory-badge")
        reset_btn = gr.Button(t("reset"), size="sm", scale=0, min_width=140, elem_id="reset-btn")
    with confirmation("reset-confirm") as confirm:
        text = gr.Markdown(elem_id="reset-confirm-text")
        with gr.Row():
            yes = gr.Button(t("forget_it"), size="sm", variant="stop", elem_id="reset-yes")
            no = gr.Button(t("cancel"), size="sm", elem_id="reset-no")
    return MemoryBadge(badge, reset_btn, confirm, text, yes, no)


# The inspector sits under the message box, so it opened below the fold: bring its top into
# view, just under the sticky header (whose height it reads), once the accordion has opened.
SCROLL_INSPECTOR_INTO_VIEW = """() => setTimeout(() => {
  const el = document.getElementById("inspector");
  const header = document.getElementById("chat-header");
  if (!el) return;
  const top = el.getBoundingClientRect().top + window.scrollY - (header ? header.offsetHeight : 0);
  window.scrollTo({ top: Math.max(0, top - 8), behavior: "smooth" });
}, 60)"""


def render_inspector() -> gr.Markdown:
    """The inspector under the chat: the exact text the model receives next."""
    with gr.Accordion(t("inspector"), open=False, elem_id="inspector") as accordion:
        body = gr.Markdown(elem_id="inspector-body")
    accordion.expand(None, js=SCROLL_INSPECTOR_INTO_VIEW, **QUIET)
    return body


ResetView = extended(ChatView, "ResetView", reset_confirm=Any)


async def confirmed_reset(rt: Runtime, owner: str, conversation_id: str | None) -> Any:
    return ResetView(*await reset_memory(rt, owner, conversation_id), gr.update(visible=False))


def wire(rt: Runtime, page: Page, header: MemoryBadge) -> None:
    owner, conversation_id = page.owner, page.conversation_id
    page.chat_input.input(
        partial(preview_draft, rt),
        [owner, conversation_id, page.chat_input],
        [page.inspector],
        trigger_mode="always_last",
        **QUIET,
    )
    page.reset.click(
        partial(ask_reset, rt), [owner, conversation_id], outputs(ResetConfirm, header), **QUIET
    )
    header.reset_no.click(cancel_reset, None, [header.reset_confirm], queue=False, **QUIET)
    header.reset_yes.click(
        partial(confirmed_reset, rt),
        [owner, conversation_id],
        outputs(ResetView, page, header),
        **QUIET,
    )
