"""The personas tab: pick a persona and a version, edit it as YAML or as a form kept in sync,
validate, save a new version, roll back or revert, and preview the composed system prompt.

YAML and form follow each other on user input only (`.input`), so one side's update never
echoes back. Handlers are module-level functions over plain values; each takes the `Runtime`
first when it needs one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import gradio as gr

from assistant.conversations import FORM_FIELDS, Conversations
from assistant.errors import InvalidPersonaYaml
from assistant.roundtable import roundtable_id_of
from assistant.runtime import Runtime
from ui import notices, views
from ui.errors import require_owner, user_errors
from ui.i18n import t
from ui.page import QUIET, ChatView, Page, outputs, persona_choices, refresh_chat, skipped
from ui.texts import tr, version_label

_FORM = [(name, Any) for name in FORM_FIELDS]
# The whole tab for one persona; the form's fields are named as in FORM_FIELDS.
EditorView = NamedTuple(
    "EditorView",
    [
        ("picker", Any),
        ("yaml_text", str),
        *_FORM,
        ("versions", Any),
        ("preview", str),
        ("status", str),
    ],
)
# After a YAML edit: the form, the preview and the status line.
FormView = NamedTuple("FormView", [*_FORM, ("preview", Any), ("status", str)])


class YamlView(NamedTuple):
    """After a form edit: the merged YAML, the preview and the status line."""

    yaml_text: Any
    preview: Any
    status: str


async def show_editor(rt: Runtime, owner: str, persona_id: str | None) -> Any:
    """The persona tab for one persona: YAML, form, versions, live preview."""
    with user_errors("open the persona"):
        require_owner(owner)
        choices, _ = await persona_choices(rt, owner)
        # Roundtables have their own editor (ui/roundtables_tab.py).
        choices = [(label, pid) for label, pid in choices if roundtable_id_of(pid) is None]
        doc = await (await rt.conversations()).persona(owner, persona_id)
        current = doc.info
        builtin = current.source == "builtin"
        status = tr("builtin_in_use" if builtin else "version_in_use", version=current.version)
        if doc.disk_error:
            status += f"\n\n{tr('disk_broken')}\n\n{views.plain_markdown(doc.disk_error)}"
        return EditorView(
            picker=gr.update(choices=choices, value=current.id),
            yaml_text=doc.yaml_text,
            **doc.form,
            versions=gr.update(
                choices=[(version_label(v.version, v.saved_at), v.version) for v in doc.versions],
                value=current.version,
            ),
            preview=doc.system_prompt,
            status=status,
        )


def yaml_edited(yaml_text: str) -> Any:
    """Typing in the YAML: refresh the form and the preview, or show the problems."""
    try:
        draft = Conversations.validate_persona(yaml_text)
    except InvalidPersonaYaml as exc:
        return skipped(FormView)._replace(status=views.problems_markdown(exc.problems))
    form = [draft.form[name] for name in FORM_FIELDS]
    return FormView(*form, draft.system_prompt, tr("valid_unsaved"))


def form_edited(yaml_text: str, *values: Any) -> YamlView:
    """Editing the form: merge into the YAML and refresh the preview."""
    edits = dict(zip(FORM_FIELDS, values, strict=True))
    merged = Conversations.apply_persona_form(yaml_text, edits)
    if merged.system_prompt is None:
        return YamlView(
            yaml_text=merged.yaml_text if merged.yaml_text != yaml_text else gr.skip(),
            preview=gr.skip(),
            status=views.problems_markdown(merged.problems),
        )
    return YamlView(merged.yaml_text, merged.system_prompt, tr("valid_unsaved"))


def validate_persona(yaml_text: str) -> str:
    try:
        draft = Conversations.validate_persona(yaml_text)
    except InvalidPersonaYaml as exc:
        return views.problems_markdown(exc.problems)
    name = views.plain_markdown(draft.display_name)
    return tr("valid", name=name, id=draft.id)


async def save_persona(rt: Runtime, owner: str, yaml_text: str) -> Any:
    """Save a new version; a bad document changes nothing and says where it is wrong."""
    with user_errors("save the persona"):
        require_owner(owner)
        facade = await rt.conversations()
        try:
            saved = await facade.save_persona(owner, yaml_text)
        except InvalidPersonaYaml as exc:
            notices.warning(tr("fix_problems"), title=tr("t_persona_not_saved"))
            problems = views.problems_markdown(exc.problems, saved=False)
            return skipped(EditorView)._replace(status=problems)
        notices.info(
            tr("persona_saved", name=views.shown(saved), version=saved.version),
            title=tr("t_persona_saved"),
        )
        view = await show_editor(rt, owner, saved.id)
        return view._replace(status=tr("saved_as", version=saved.version))


async def rollback_persona(rt: Runtime, owner: str, persona_id: str, version: int | None) -> Any:
    with user_errors("roll back the persona"):
        require_owner(owner)
        if version is None:
            raise notices.error(tr("pick_version"), title=tr("t_no_version"))
        facade = await rt.conversations()
        restored = await facade.rollback_persona(owner, persona_id, int(version))
        notices.info(
            tr("back_to_version", name=views.shown(restored), version=restored.version),
            title=tr("t_version_restored"),
        )
        return await show_editor(rt, owner, persona_id)


async def revert_persona(rt: Runtime, owner: str, persona_id: str) -> Any:
    with user_errors("revert the persona"):
        require_owner(owner)
        restored = await (await rt.conversations()).revert_persona(owner, persona_id)
        notices.info(
            tr("back_to_builtin", name=views.shown(restored)), title=tr("t_builtin_restored")
        )
        return await show_editor(rt, owner, persona_id)


# ---- layout and wiring -------------------------------------------------------------------


@dataclass(frozen=True)
class PersonasTab:
    """The tab's components; `form` maps each of FORM_FIELDS to its widget."""

    picker: gr.Dropdown
    versions: gr.Dropdown
    rollback: gr.Button
    revert: gr.Button
    yaml_text: gr.Code
    status: gr.Markdown
    validate: gr.Button
    save: gr.Button
    form: dict[str, Any]
    preview: gr.Textbox


def _render_form() -> dict[str, Any]:
    return {
        "display_name": gr.Textbox(
            label=t("f_display_name"), max_lines=1, elem_id="f-display_name"
        ),
        "avatar": gr.Textbox(label=t("f_avatar"), max_lines=1, elem_id="f-avatar"),
        "role_description": gr.Textbox(label=t("f_role"), lines=3, elem_id="f-role_description"),
        "language": gr.Textbox(label=t("f_language"), max_lines=1, elem_id="f-language"),
        "personality": gr.Textbox(label=t("f_personality"), lines=2, elem_id="f-personality"),
        "focus_areas": gr.Textbox(label=t("f_focus"), lines=3, elem_id="f-focus_areas"),
        "special_rules": gr.Textbox(label=t("f_rules"), lines=3, elem_id="f-special_rules"),
        "temperature": gr.Number(
            label=t("f_temperature"),
            minimum=0,
            maximum=2,
            step=0.1,
            elem_id="f-temperature",
        ),
        "parameters": gr.Code(
            language="yaml",
            label=t("f_parameters"),
            lines=2,
            elem_id="f-parameters",
        ),
    }


def render() -> PersonasTab:
    """Build the tab's contents (inside its gr.Tab)."""
    with gr.Row(elem_id="persona-bar"):
        picker = gr.Dropdown(choices=[], label=t("persona"), elem_id="persona-picker", scale=2)
        versions = gr.Dropdown(choices=[], label=t("versions"), elem_id="persona-versions", scale=2)
        with gr.Column(scale=1, min_width=180, elem_id="version-actions"):
            rollback_btn = gr.Button(t("use_version"), size="sm", elem_id="rollback-btn")
            revert_btn = gr.Button(t("revert"), size="sm", elem_id="revert-btn")
    with gr.Row():
        with gr.Column(scale=3):
            # Known flaw, left as is: an apostrophe ("user's", "won't") colours the rest of its
            # line as a string. gr.Code highlights YAML with CodeMirror's legacy yaml mode, which
            # opens a string at any quote character, and Gradio 6.31 cannot be told otherwise:
            # `language` is a fixed list and there is no grammar, mode or extension parameter.
            # Plain text (language=None) would lose key, comment and list colouring for all.
            # tests/test_app_views.py fails when Gradio changes this; then look again.
            yaml_text = gr.Code(
                language="yaml",
                label="YAML",
                lines=22,
                max_lines=40,
                wrap_lines=True,
                elem_id="persona-yaml",
            )
            status = gr.Markdown(elem_id="persona-status")
            with gr.Row():
                validate_btn = gr.Button(t("validate"), elem_id="validate-btn")
                save_btn = gr.Button(t("save"), variant="primary", elem_id="save-btn")
        with gr.Column(scale=2):
            form = _render_form()
    with gr.Accordion(t("prompt_preview"), open=True, elem_id="preview"):
        preview = gr.Textbox(
            show_label=False,
            interactive=False,
            lines=8,
            max_lines=30,
            buttons=["copy"],
            elem_id="persona-preview",
        )
    return PersonasTab(
        picker=picker,
        versions=versions,
        rollback=rollback_btn,
        revert=revert_btn,
        yaml_text=yaml_text,
        status=status,
        validate=validate_btn,
        save=save_btn,
        form=form,
        preview=preview,
    )


def wire(rt: Runtime, page: Page, tab: PersonasTab, loaded: Any) -> Any:
    """Connect the tab's events; `loaded` is the page-load step after which the editor opens.
    Returns that opening step, after which the page's next one runs."""
    owner = page.owner
    editor = outputs(EditorView, tab.form, tab)
    form = [tab.form[name] for name in FORM_FIELDS]  # form_edited's arguments, in order
    opened = loaded.then(partial(show_editor, rt), [owner, tab.picker], editor, **QUIET)
    tab.picker.input(partial(show_editor, rt), [owner, tab.picker], editor, **QUIET)
    tab.yaml_text.input(
        yaml_edited,
        [tab.yaml_text],
        outputs(FormView, tab.form, tab),
        trigger_mode="always_last",
        **QUIET,
    )
    for field in form:
        field.input(
            form_edited,
            [tab.yaml_text, *form],
            outputs(YamlView, tab),
            trigger_mode="always_last",
            **QUIET,
        )
    tab.validate.click(validate_persona, [tab.yaml_text], [tab.status], **QUIET)
    changed = [
        tab.save.click(partial(save_persona, rt), [owner, tab.yaml_text], editor, **QUIET),
        tab.rollback.click(
            partial(rollback_persona, rt), [owner, tab.picker, tab.versions], editor, **QUIET
        ),
        tab.revert.click(partial(revert_persona, rt), [owner, tab.picker], editor, **QUIET),
    ]
    # A saved, rolled back or reverted persona shows in the chat at once (name, greeting).
    chat_view = outputs(ChatView, page)
    for event in changed:
        event.then(
            partial(refresh_chat, rt),
            [owner, page.conversation_id, page.persona],
            chat_view,
            **QUIET,
        )
    return opened
