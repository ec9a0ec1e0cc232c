"""The roundtable editor, under the persona editor: pick a roundtable, edit its YAML (members,
chair, rounds, rules, the veto rule, the metrics table), validate with every problem located,
save a new version for this owner (used from the next message), or use an earlier one again.

The persona editor is the model: the same YAML box, status line, versions and toasts; a saved
id that is new makes a roundtable of the user's own. Handlers are module-level functions over
plain values; each takes the `Runtime` first when it needs one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from assistant.conversations import Conversations
from assistant.errors import InvalidPersonaYaml
from assistant.roundtable import roundtable_id_of
from assistant.runtime import Runtime
from ui import board_views, notices, views
from ui.errors import require_owner, user_errors
from ui.i18n import t
from ui.page import QUIET, ChatView, Page, outputs, refresh_chat, skipped
from ui.texts import tr, version_label


class BoardView(NamedTuple):
    """The editor for one roundtable."""

    board_picker: Any
    board_yaml: str
    board_versions: Any
    board_status: str


def _in_use(doc: Any) -> str:
    info = doc.info
    key = "board_builtin_in_use" if info.version == 0 else "board_version_in_use"
    status = tr(key, version=info.version)
    if info.problem:
        status += f"\n\n⚠️ {views.plain_markdown(info.problem)}"
    if doc.disk_error:
        status += f"\n\n{tr('disk_broken')}\n\n{views.plain_markdown(doc.disk_error)}"
    return status


async def show_board(rt: Runtime, owner: str, board: str | None) -> BoardView:
    """The editor for `board` (an id or a picker's `roundtable:<id>`; None: the first one)."""
    with user_errors("open the roundtable"):
        require_owner(owner)
        facade = await rt.conversations()
        boards = await facade.roundtables(owner)
        if not boards:
            return skipped(BoardView)
        wanted = roundtable_id_of(board) or board
        chosen = next((b for b in boards if b.id == wanted), boards[0])
        doc = await facade.roundtable(owner, chosen.id)
        return BoardView(
            board_picker=gr.update(
                choices=[(board_views.roundtable_label(b), b.id) for b in boards], value=chosen.id
            ),
            board_yaml=doc.yaml_text,
            board_versions=gr.update(
                choices=[(version_label(v.version, v.saved_at), v.version) for v in doc.versions],
                value=doc.info.version,
            ),
            board_status=_in_use(doc),
        )


def validate_board(yaml_text: str) -> str:
    """Validate: the roundtable's name and speakers, or every problem with line and column."""
    try:
        draft = Conversations.validate_roundtable(yaml_text)
    except InvalidPersonaYaml as exc:
        return views.problems_markdown(exc.problems)
    return tr(
        "board_valid",
        name=views.plain_markdown(draft.display_name),
        id=draft.id,
        speakers=views.plain_markdown(" → ".join(draft.speakers)),
    )


async def save_board(rt: Runtime, owner: str, yaml_text: str) -> BoardView:
    """Save a new version; a bad document changes nothing and says where it is wrong."""
    with user_errors("save the roundtable"):
        require_owner(owner)
        facade = await rt.conversations()
        try:
            saved = await facade.save_roundtable(owner, yaml_text)
        except InvalidPersonaYaml as exc:
            notices.warning(tr("board_fix_problems"), title=tr("t_board_not_saved"))
            problems = views.problems_markdown(exc.problems, saved=False)
            return skipped(BoardView)._replace(board_status=problems)
        notices.info(
            tr("persona_saved", name=views.shown(saved), version=saved.version),
            title=tr("t_board_saved"),
        )
        view = await show_board(rt, owner, saved.id)
        return view._replace(board_status=tr("saved_as", version=saved.version))


async def use_board_version(
    rt: Runtime, owner: str, board: str | None, version: int | None
) -> BoardView:
    """Use an earlier version (v0: the built-in) from the next message."""
    with user_errors("roll back the roundtable"):
        require_owner(owner)
        if version is None or not board:
            raise notices.error(tr("pick_version"), title=tr("t_no_version"))
        facade = await rt.conversations()
        restored = await facade.rollback_roundtable(owner, board, int(version))
        notices.info(
            tr("back_to_version", name=views.shown(restored), version=restored.version),
            title=tr("t_version_restored"),
        )
        return await show_board(rt, owner, board)


# ---- layout and wiring -------------------------------------------------------------------


@dataclass(frozen=True)
class RoundtablesEditor:
    board_picker: gr.Dropdown
    board_versions: gr.Dropdown
    board_rollback: gr.Button
    board_yaml: gr.Code
    board_status: gr.Markdown
    board_validate: gr.Button
    board_save: gr.Button


def render() -> RoundtablesEditor:
    """Build the editor, a closed accordion (inside the personas tab)."""
    with gr.Accordion(t("roundtables"), open=False, elem_id="roundtables"):
        with gr.Row():
            picker = gr.Dropdown(choices=[], label=t("roundtable"), elem_id="board-picker", scale=2)
            versions = gr.Dropdown(
                choices=[], label=t("versions"), elem_id="board-versions", scale=2
            )
            rollback = gr.Button(
                t("use_version"), size="sm", scale=1, min_width=160, elem_id="board-rollback"
            )
        yaml_text = gr.Code(
            language="yaml",
            label="YAML",
            lines=18,
            max_lines=40,
            wrap_lines=True,
            elem_id="board-yaml",
        )
        status = gr.Markdown(elem_id="board-status")
        with gr.Row():
            validate = gr.Button(t("validate"), elem_id="board-validate")
            save = gr.Button(t("save"), variant="primary", elem_id="board-save")
    return RoundtablesEditor(picker, versions, rollback, yaml_text, status, validate, save)


def wire(rt: Runtime, page: Page, editor: RoundtablesEditor, loaded: Any) -> Any:
    """Connect the editor's events; it opens after the page-load step `loaded`. Returns that
    opening step, after which the page's next one runs."""
    owner = page.owner
    view = outputs(BoardView, editor)
    opened = loaded.then(partial(show_board, rt), [owner, editor.board_picker], view, **QUIET)
    editor.board_picker.input(partial(show_board, rt), [owner, editor.board_picker], view, **QUIET)
    editor.board_validate.click(validate_board, [editor.board_yaml], [editor.board_status], **QUIET)
    changed = [
        editor.board_save.click(partial(save_board, rt), [owner, editor.board_yaml], view, **QUIET),
        editor.board_rollback.click(
            partial(use_board_version, rt),
            [owner, editor.board_picker, editor.board_versions],
            view,
            **QUIET,
        ),
    ]
    # The chat's picker, badge and greeting show the change at once.
    for event in changed:
        event.then(
            partial(refresh_chat, rt),
            [owner, page.conversation_id, page.persona],
            outputs(ChatView, page),
            **QUIET,
        )
    return opened
