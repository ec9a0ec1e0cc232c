"""The sidebar's "API tokens" panel: create a token for the HTTP API (shown once), see your
tokens and when they were last used, revoke one.

`render()` builds the components (inside the sidebar), `wire()` connects them; the handlers are
module-level functions over plain values (the runtime, the owner, text), so tests call them
directly. Everything goes through the `Conversations` facade.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from assistant.errors import UserError
from assistant.runtime import Runtime
from ui import i18n

from . import notices, views
from .errors import error_for, require_owner
from .page import QUIET, Page
from .texts import tr
from .views import relative_time

NO_TOKENS = "_No tokens yet._"  # tr("no_tokens") in English


class TokenPanel(NamedTuple):
    accordion: Any
    name: Any
    create: Any
    secret: Any
    listing: Any
    choice: Any
    revoke: Any


def tokens_markdown(tokens: list[Any], now: float | None = None) -> str:
    """The owner's tokens as a small table, newest first; revoked ones say so."""
    if not tokens:
        return tr("no_tokens")
    rows = [tr("tokens_head"), "|---|---|---|---|"]
    for t in tokens:
        name = views.plain_markdown(t.name)  # escapes "|" too: the table stays a table
        if not t.active:
            name = f"~~{name}~~ {tr('token_revoked_mark')}"
        used = relative_time(t.last_used_at, now) if t.last_used_at else tr("never")
        rows.append(f"| {name} | `…{t.hint}` | {relative_time(t.created_at, now)} | {used} |")
    return "\n".join(rows)


def revoke_choices(tokens: list[Any]) -> list[tuple[str, str]]:
    return [(f"{t.name} (…{t.hint})", t.id) for t in tokens if t.active]


async def _listing(rt: Runtime, owner: str) -> tuple[str, Any]:
    tokens = await (await rt.conversations()).list_tokens(owner)
    return tokens_markdown(tokens), gr.update(choices=revoke_choices(tokens), value=None)


def _refused(exc: UserError, action: str) -> gr.Error:
    return error_for(exc, action)


async def show_tokens(rt: Runtime, owner: str) -> tuple[str, Any]:
    """The list and the revoke picker, when the panel opens."""
    require_owner(owner)
    try:
        return await _listing(rt, owner)
    except UserError as exc:
        raise _refused(exc, "list your API tokens") from exc


async def create_token(rt: Runtime, owner: str, name: str) -> tuple[Any, str, Any, Any]:
    """Make a token and show its secret once. Returns (secret box, list, picker, name box)."""
    require_owner(owner)
    try:
        issued = await (await rt.conversations()).issue_token(owner, name or "")
        listing, choices = await _listing(rt, owner)
    except UserError as exc:
        raise _refused(exc, "create the API token") from exc
    secret = gr.update(value=issued.secret, visible=True)
    return secret, listing, choices, gr.update(value="")


async def revoke_token(rt: Runtime, owner: str, token_id: str | None) -> tuple[Any, str, Any]:
    """Revoke the picked token at once. Returns (secret box, list, picker)."""
    require_owner(owner)
    if not token_id:
        raise notices.error(tr("pick_token"), title=tr("t_nothing_revoked"))
    try:
        revoked = await (await rt.conversations()).revoke_token(owner, token_id)
        listing, choices = await _listing(rt, owner)
    except UserError as exc:
        raise _refused(exc, "revoke the API token") from exc
    notices.info(tr("token_revoked", name=revoked.name), title=tr("t_token_revoked"))
    return hide_secret(), listing, choices


def hide_secret() -> Any:
    return gr.update(value="", visible=False)


def render() -> TokenPanel:
    """Build the panel, a closed accordion (inside the sidebar)."""
    with gr.Accordion(i18n.t("tokens"), open=False, elem_id="api-tokens") as accordion:
        gr.Markdown(i18n.t("tokens_intro"), elem_classes="muted")
        name = gr.Textbox(
            label=i18n.t("token_name"),
            placeholder=i18n.t("token_placeholder"),
            max_lines=1,
            elem_id="token-name",
        )
        create = gr.Button(i18n.t("create_token"), size="sm", elem_id="token-create")
        secret = gr.Textbox(
            label=i18n.t("shown_once"),
            visible=False,
            interactive=False,
            buttons=["copy"],
            elem_id="token-secret",
        )
        listing = gr.Markdown(i18n.t("no_tokens"), elem_id="token-list")
        choice = gr.Dropdown(choices=[], label=i18n.t("revoke_token"), elem_id="token-choice")
        revoke = gr.Button(i18n.t("revoke"), size="sm", variant="stop", elem_id="token-revoke")
    return TokenPanel(accordion, name, create, secret, listing, choice, revoke)


def wire(rt: Runtime, page: Page, panel: TokenPanel) -> None:
    """Connect the panel's events (after every panel is built)."""
    owner = page.owner
    panel.accordion.expand(
        partial(show_tokens, rt), [owner], [panel.listing, panel.choice], **QUIET
    )
    # Shown once: closing the panel clears the new token from the page.
    panel.accordion.collapse(hide_secret, None, [panel.secret], queue=False, **QUIET)
    made = [panel.secret, panel.listing, panel.choice, panel.name]
    panel.create.click(partial(create_token, rt), [owner, panel.name], made, **QUIET)
    panel.name.submit(partial(create_token, rt), [owner, panel.name], made, **QUIET)
    panel.revoke.click(
        partial(revoke_token, rt),
        [owner, panel.choice],
        [panel.secret, panel.listing, panel.choice],
        **QUIET,
    )
