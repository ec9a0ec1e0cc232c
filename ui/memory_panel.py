"""The memory panel, under the inspector: see and steer what the assistant remembers.

Per conversation: the summary as text to edit or clear (the edit is what the model gets from
then on), the pinned facts (type one, or click a message to fill the box; delete them one by
one), "about me" facts for every conversation (opt-in), the turns recall would bring back for
the draft being typed, plots of what each reply was sent, and export / import / delete all.
Every handler calls the `Conversations` facade only.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from assistant.runtime import Runtime
from ui import notices, views
from ui.errors import require_owner, user_errors
from ui.i18n import t
from ui.page import QUIET, ChatView, Page, confirmation, extended, outputs, render_chat
from ui.texts import count, tr

log = logging.getLogger("mnemo.app")

# The panel is a pure function of the facade's MemoryPanel record.


class PanelView(NamedTuple):
    """Everything the memory panel shows."""

    summary_note: str
    summary_text: Any
    summary_id: int | None  # the summary the box shows, so a refresh keeps an edit in progress
    pins_note: str
    pinned_facts: Any  # CheckboxGroup update: (fact, id) choices
    about_me_toggle: Any
    about_me_facts: Any
    # The fact ids each list shows: a refresh that finds the same leaves the list (and the
    # user's ticks) alone, so a reply finishing cannot untick a fact about to be deleted.
    pins_shown: Any
    about_me_shown: Any
    recall_preview: str
    plots_note: str  # before the first reply: why the plots are not shown yet
    plot_parts: Any
    plot_tokens: Any
    plot_latency: Any


# Each plot's title, y axis and legend (None: one line, no legend), in the order of
# `views.plot_frames()`: characters by part, tokens, seconds.
PLOT_TEXTS = (
    ("plot_parts", "plot_chars", "plot_part_legend"),
    ("plot_tokens", "plot_tokens_axis", "plot_kind_legend"),
    ("plot_latency", "plot_seconds", None),
)


# The x axis runs to turn 4 at least: with the axis format "d" (see `_plot`) Vega-Lite spaces
# ticks at least 1 apart, but over a span of 1 or 2 turns it still steps by 0.5 (1, 1.5, 2 drawn
# as "1", "2", "2"); over 3 or more its steps are whole.
MIN_LAST_TURN = 4


def _plot_update(frame: Any, turns: int, title: str, y_title: str, legend: str | None) -> Any:
    texts = {"title": tr(title), "x_title": tr("plot_turn"), "y_title": tr(y_title)}
    if legend:
        texts["color_title"] = tr(legend)
    # A line needs two points: before the first reply the plots were empty axes, after it a
    # lone point Vega's line mark does not draw (gr.LinePlot has no point marks); both looked
    # broken, so the plots show from the second reply and the note says what is there.
    return gr.update(value=frame, x_lim=[1, max(turns, MIN_LAST_TURN)], visible=turns > 1, **texts)


def plots(rows: Any) -> tuple[str, Any, Any, Any]:
    """The note above the plots (what they will show while there is nothing to draw, and the
    first reply's figures while there is one), and the three plots' data, titles and axes in
    the page's language (the titles are props the frontend does not translate, so the server
    writes them with the data)."""
    frames = views.plot_frames(rows)
    turns = len(rows or [])
    parts, tokens, latency = (
        _plot_update(frame, turns, *texts) for frame, texts in zip(frames, PLOT_TEXTS, strict=True)
    )
    note = "" if turns > 1 else first_reply_note(rows[0].metrics) if turns else tr("mp_plots_none")
    return note, parts, tokens, latency


def first_reply_note(m: Any) -> str:
    """What the plots would show of one reply, in words: the characters it was sent by part
    (those that sent any), its tokens and seconds, as far as they were measured."""
    sent = [(part, getattr(m, f"{part}_chars")) for part in views.PLOT_PARTS]
    sent = [(part, n) for part, n in sent if n]
    figures = []
    if sent:  # (a call recorded before the parts were measured has none)
        figures.append(
            tr(
                "mp_plots_one_chars",
                n=f"{sum(n for _, n in sent):,}",
                parts=tr("mp_parts_sep").join(f"{tr(f'part_{part}')} {n:,}" for part, n in sent),
            )
        )
    if m.input_tokens is not None and m.output_tokens is not None:
        figures.append(
            tr("mp_plots_one_tokens", input=f"{m.input_tokens:,}", output=f"{m.output_tokens:,}")
        )
    if m.latency_ms is not None:
        figures.append(tr("mp_plots_one_seconds", s=f"{m.latency_ms / 1000:.1f}"))
    if not figures:
        return tr("mp_plots_one_unmeasured")
    return tr("mp_plots_one", figures=tr("mp_figures_sep").join(figures))


def empty_panel() -> PanelView:
    note, parts, tokens, latency = plots([])
    return PanelView(
        summary_note=tr("mp_no_conversation"),
        summary_text=gr.update(value="", interactive=False),
        summary_id=None,
        pins_note=tr("mp_pins_empty"),
        pinned_facts=gr.update(choices=[], value=[]),
        about_me_toggle=gr.skip(),
        about_me_facts=gr.skip(),
        pins_shown=(),
        about_me_shown=gr.skip(),
        recall_preview=views.recall_markdown([], None),
        plots_note=note,
        plot_parts=parts,
        plot_tokens=tokens,
        plot_latency=latency,
    )


async def panel_view(
    rt: Runtime, owner: str, conversation_id: str | None, draft: str | None = None
) -> PanelView:
    """The panel for a conversation (or the empty panel of a new chat)."""
    if not owner:  # before the page load says who this is
        return empty_panel()
    facade = await rt.conversations()
    panel = await facade.memory(owner, conversation_id or None, draft)
    if not conversation_id:
        return empty_panel()._replace(
            about_me_toggle=gr.update(value=panel.about_me_on),
            about_me_facts=gr.update(choices=views.fact_choices(panel.about_me), value=[]),
            about_me_shown=_ids(panel.about_me),
        )
    note, parts, tokens, latency = plots(panel.metrics)
    return PanelView(
        summary_note=views.summary_note(panel.summary),
        summary_text=gr.update(
            value=panel.summary.content if panel.summary else "", interactive=True
        ),
        summary_id=panel.summary.id if panel.summary else None,
        pins_note=views.pins_note(panel.pinned, panel.about_me, panel.about_me_on, panel),
        pinned_facts=gr.update(choices=views.fact_choices(panel.pinned), value=[]),
        about_me_toggle=gr.update(value=panel.about_me_on),
        about_me_facts=gr.update(choices=views.fact_choices(panel.about_me), value=[]),
        pins_shown=_ids(panel.pinned),
        about_me_shown=_ids(panel.about_me),
        # Only the draft handler fills it: a refresh after a turn must not wipe it.
        recall_preview=views.recall_markdown(panel.recalled, draft) if draft else gr.skip(),
        plots_note=note,
        plot_parts=parts,
        plot_tokens=tokens,
        plot_latency=latency,
    )


def _ids(facts: Any) -> tuple[int, ...]:
    return tuple(f.id for f in facts)


async def refresh_panel(
    rt: Runtime,
    owner: str,
    conversation_id: str | None,
    pins_shown: tuple[int, ...] | None = None,
    about_me_shown: tuple[int, ...] | None = None,
    shown_summary: int | None = None,
) -> PanelView:
    """After a turn, a switch or a reset. The summary box keeps what the user is typing
    unless the summary itself changed (a new one was written, or it went); a list of facts
    that has not changed is left as it is, with the user's ticks."""
    with user_errors("show the memory panel"):
        view = await panel_view(rt, owner, conversation_id)
        if shown_summary is not None and view.summary_id == shown_summary:
            view = view._replace(summary_text=gr.skip())
        if pins_shown is not None and view.pins_shown == tuple(pins_shown):
            view = view._replace(pinned_facts=gr.skip())
        if about_me_shown is not None and view.about_me_shown == tuple(about_me_shown):
            view = view._replace(about_me_facts=gr.skip())
        return view


async def recall_for_draft(rt: Runtime, owner: str, conversation_id: str | None, draft: str) -> Any:
    """While typing: the older turns this message would bring back."""
    if not conversation_id:
        return gr.skip()
    try:
        panel = await (await rt.conversations()).memory(owner, conversation_id, draft)
    except Exception:  # a preview is a nicety; never interrupt typing with an error
        log.warning("recall preview failed", exc_info=True)
        return gr.skip()
    return views.recall_markdown(panel.recalled, draft)


# A change in the panel also changes the badge and the inspector, so it re-renders both.
SteeredView = extended(ChatView, "SteeredView", **PanelView.__annotations__)


async def _steered(rt: Runtime, owner: str, conversation_id: str | None) -> Any:
    view = await render_chat(rt, owner, conversation_id)
    return SteeredView(*view, *await panel_view(rt, owner, view.conversation_id))


async def save_summary(rt: Runtime, owner: str, conversation_id: str | None, text: str) -> Any:
    """Save the user's summary: what the model gets from the next message on."""
    with user_errors("change the summary"):
        require_owner(owner)
        if not conversation_id:
            raise notices.error(tr("no_summary_yet"), title=tr("t_no_summary_yet"))
        facade = await rt.conversations()
        written = await facade.write_summary(owner, conversation_id, text)
        notices.info(tr("summary_saved" if written else "summary_cleared"), title=tr("t_summary"))
        return await _steered(rt, owner, conversation_id)


async def clear_summary(rt: Runtime, owner: str, conversation_id: str | None) -> Any:
    return await save_summary(rt, owner, conversation_id, "")


async def pin_fact(
    rt: Runtime, owner: str, conversation_id: str | None, text: str, about_me: bool
) -> Any:
    """Pin the typed fact (or the clicked message) here, or to "about me"."""
    with user_errors("pin the fact"):
        require_owner(owner)
        facade = await rt.conversations()
        fact = await facade.pin(owner, conversation_id, text, about_me=bool(about_me))
        pinned = tr("pinned_about_me" if fact.about_me else "pinned_here")
        notices.info(pinned, title=tr("t_pinned"))
        # The box and the "about me" tick start over: the next fact goes here unless ticked
        # again (a tick left on sent the next one to every conversation unasked).
        view = await _steered(rt, owner, conversation_id)
        return PinnedView(*view, new_fact="", pin_about_me=False)


PinnedView = extended(SteeredView, "PinnedView", new_fact=Any, pin_about_me=Any)


async def unpin_facts(
    rt: Runtime, owner: str, conversation_id: str | None, fact_ids: list[Any] | None
) -> Any:
    """Delete the checked pinned facts, one by one."""
    with user_errors("delete the pinned fact"):
        require_owner(owner)
        if not fact_ids:
            raise notices.error(tr("tick_first"), title=tr("t_nothing_ticked"))
        facade = await rt.conversations()
        for fact_id in fact_ids:
            await facade.unpin(owner, int(fact_id))
        notices.info(count("unpinned", len(fact_ids)), title=tr("t_unpinned"))
        return await _steered(rt, owner, conversation_id)


async def toggle_about_me(
    rt: Runtime, owner: str, conversation_id: str | None, enabled: bool
) -> Any:
    with user_errors("change “about me”"):
        require_owner(owner)
        facade = await rt.conversations()
        on = await facade.set_about_me(owner, bool(enabled))
        notices.info(tr("about_me_on" if on else "about_me_off"), title=tr("t_about_me"))
        return await _steered(rt, owner, conversation_id)


def message_to_fact(event: gr.SelectData) -> Any:
    """Clicking a message puts its text in the "new fact" box, to pin (or shorten first)."""
    text = views.message_text(
        event.value.get("content") if isinstance(event.value, dict) else event.value
    )
    return gr.update(value=" ".join(text.split())[:500])


async def remember_time_zone(rt: Runtime, owner: str, zone: str | None) -> None:
    """On load: the browser's time zone, for the `today` tool."""
    if owner and zone:
        try:
            await (await rt.conversations()).set_time_zone(owner, zone)
        except Exception:  # the tool falls back to UTC
            log.warning("time zone not saved", exc_info=True)


# ---- export, import, delete everything ---------------------------------------------------


async def export_file(
    rt: Runtime, owner: str, conversation_id: str | None, everything: bool
) -> Any:
    """Write the export to a file the browser downloads."""
    with user_errors("export"):
        require_owner(owner)
        if not everything and not conversation_id:
            raise notices.error(tr("export_unsaved"), title=tr("t_nothing_to_export"))
        facade = await rt.conversations()
        text = await facade.export(owner, None if everything else conversation_id)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        name = f"mnemo-{'all' if everything else 'conversation'}-{stamp}.json"
        path = await asyncio.to_thread(_write_export, name, text)
        return gr.update(value=str(path), visible=True)


def _write_export(name: str, text: str) -> Path:
    # A fresh folder per export: Gradio serves the file from there to this browser only.
    path = Path(tempfile.mkdtemp(prefix="mnemo-export-")) / name
    path.write_text(text, encoding="utf-8")
    return path


async def import_file(rt: Runtime, owner: str, upload: Any) -> Any:
    """Import an export file as new conversations and open the first one."""
    with user_errors("import the file"):
        require_owner(owner)
        if upload is None:
            raise notices.error(tr("pick_export"), title=tr("t_no_file"))
        path = Path(upload if isinstance(upload, str) else upload.name)
        facade = await rt.conversations()
        imported = await facade.import_file(owner, await asyncio.to_thread(path.read_bytes))
        notices.info(count("imported", len(imported.conversations)), title=tr("t_imported"))
        for note in imported.notes:
            notices.warning(note, title=tr("t_persona_differs"))
        first = imported.conversations[0].id if imported.conversations else None
        return await _steered(rt, owner, first)


class DeleteAllConfirm(NamedTuple):
    delete_all_confirm: Any
    delete_all_text: str


async def ask_delete_all(rt: Runtime, owner: str) -> DeleteAllConfirm:
    with user_errors("delete your data"):
        require_owner(owner)
        listed = len(await (await rt.conversations()).list(owner, limit=10_000))
        return DeleteAllConfirm(gr.update(visible=True), count("delete_all", listed))


def cancel_delete_all() -> Any:
    return gr.update(visible=False)


async def confirm_delete_all(rt: Runtime, owner: str) -> Any:
    with user_errors("delete your data"):
        require_owner(owner)
        removed = await (await rt.conversations()).delete_everything(owner)
        notices.info(tr("deleted_all", n=f"{removed:,}"), title=tr("t_data_deleted"))
        view = await _steered(rt, owner, None)
        return DeletedAllView(*view, delete_all_confirm=gr.update(visible=False))


DeletedAllView = extended(SteeredView, "DeletedAllView", delete_all_confirm=Any)


# ---- layout and wiring -------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryPanel:
    summary_note: gr.Markdown
    summary_text: gr.Textbox
    summary_id: gr.State
    summary_save: gr.Button
    summary_clear: gr.Button
    recall_preview: gr.Markdown
    pins_note: gr.Markdown
    pinned_facts: gr.CheckboxGroup
    unpin: gr.Button
    new_fact: gr.Textbox
    pin_about_me: gr.Checkbox
    pin: gr.Button
    about_me_toggle: gr.Checkbox
    about_me_facts: gr.CheckboxGroup
    unpin_about_me: gr.Button
    plots_note: gr.Markdown
    plot_parts: gr.LinePlot
    plot_tokens: gr.LinePlot
    plot_latency: gr.LinePlot
    export_one: gr.Button
    export_all: gr.Button
    export_file: gr.File
    import_file: gr.UploadButton
    delete_all: gr.Button
    delete_all_confirm: gr.Column
    delete_all_text: gr.Markdown
    delete_all_yes: gr.Button
    delete_all_no: gr.Button
    time_zone: gr.Textbox
    pins_shown: gr.State
    about_me_shown: gr.State


def _render_summary() -> dict[str, Any]:
    gr.Markdown(t("mp_summary"))
    built: dict[str, Any] = {"summary_note": gr.Markdown(elem_id="summary-note")}
    built["summary_text"] = gr.Textbox(
        show_label=False,
        lines=4,
        max_lines=12,
        elem_id="summary-text",
        placeholder=t("mp_summary_placeholder"),
    )
    with gr.Row():
        built["summary_save"] = gr.Button(t("mp_summary_save"), size="sm", elem_id="summary-save")
        built["summary_clear"] = gr.Button(
            t("mp_summary_clear"), size="sm", elem_id="summary-clear"
        )
    gr.Markdown(t("mp_recall"))
    built["recall_preview"] = gr.Markdown(views.recall_markdown([], None), elem_id="recall-preview")
    return built


def _render_pins() -> dict[str, Any]:
    gr.Markdown(t("mp_pins"))
    built: dict[str, Any] = {"pins_note": gr.Markdown(elem_id="pins-note")}
    built["pinned_facts"] = gr.CheckboxGroup(show_label=False, elem_id="pinned-facts")
    built["unpin"] = gr.Button(t("mp_unpin"), size="sm", elem_id="unpin")
    built["new_fact"] = gr.Textbox(
        show_label=False, max_lines=3, elem_id="new-fact", placeholder=t("mp_new_fact")
    )
    with gr.Row():
        built["pin_about_me"] = gr.Checkbox(
            label=t("mp_pin_about_me"), value=False, elem_id="pin-about-me"
        )
        built["pin"] = gr.Button(t("mp_pin"), size="sm", variant="primary", elem_id="pin-fact")
    gr.Markdown(t("mp_about_me"))
    built["about_me_toggle"] = gr.Checkbox(
        label=t("mp_about_me_toggle"), value=False, elem_id="about-me-toggle"
    )
    built["about_me_facts"] = gr.CheckboxGroup(show_label=False, elem_id="about-me-facts")
    built["unpin_about_me"] = gr.Button(t("mp_unpin"), size="sm", elem_id="unpin-about-me")
    return built


def _plot(y: str, elem_id: str, color: str | None = None) -> Any:
    # Titles and axes come with the data (`plots()`), in the page's language. The x axis
    # counts turns: format "d" also makes Vega-Lite space its ticks at least 1 apart (its
    # tickMinStep); `plots()` gives it a span where that means whole steps.
    return gr.LinePlot(
        x="turn", y=y, color=color, elem_id=elem_id, height=260, x_axis_format="d", visible=False
    )


def _render_plots() -> dict[str, Any]:
    gr.Markdown(t("mp_sent"))
    # Lines, not stacked bars: the budget is a line of its own to compare against. The parts
    # plot has the row to itself: a third of it cut its title and its six-line legend.
    built = {"plots_note": gr.Markdown(elem_id="plots-note")}
    built["plot_parts"] = _plot("chars", "plot-parts", color="part")
    with gr.Row():
        built["plot_tokens"] = _plot("tokens", "plot-tokens", color="kind")
        built["plot_latency"] = _plot("seconds", "plot-latency")
    return built


def _render_take() -> dict[str, Any]:
    gr.Markdown(t("mp_take"))
    built: dict[str, Any] = {}
    with gr.Row():
        built["export_one"] = gr.Button(t("mp_export_one"), size="sm", elem_id="export-one")
        built["export_all"] = gr.Button(t("mp_export_all"), size="sm", elem_id="export-all")
        built["import_file"] = gr.UploadButton(
            t("mp_import"), file_types=[".json"], size="sm", elem_id="import-file"
        )
        built["delete_all"] = gr.Button(
            t("mp_delete_all"), size="sm", variant="stop", elem_id="delete-all"
        )
    built["export_file"] = gr.File(
        visible=False, interactive=False, elem_id="export-file", label=t("mp_export_file")
    )
    with confirmation("delete-all-confirm") as built["delete_all_confirm"]:
        built["delete_all_text"] = gr.Markdown(elem_id="delete-all-text")
        with gr.Row():
            built["delete_all_yes"] = gr.Button(
                t("mp_delete_everything"), size="sm", variant="stop", elem_id="delete-all-yes"
            )
            built["delete_all_no"] = gr.Button(t("cancel"), size="sm", elem_id="delete-all-no")
    return built


def render() -> MemoryPanel:
    """Build the panel (in the chat tab, under the inspector)."""
    with gr.Accordion(t("mp_panel"), open=False, elem_id="memory-panel"):
        with gr.Row():
            with gr.Column():
                built = _render_summary()
            with gr.Column():
                built |= _render_pins()
        built |= _render_plots()
        built |= _render_take()
        built["time_zone"] = gr.Textbox(visible=False, elem_id="time-zone")
    # What the client shows, kept on the server (see PanelView).
    shown = {name: gr.State(None) for name in ("summary_id", "pins_shown", "about_me_shown")}
    return MemoryPanel(**built, **shown)


def wire(rt: Runtime, page: Page, panel: MemoryPanel, loaded: Any) -> Any:
    """Connect the panel's events; it opens after the page-load step `loaded`. Returns its
    last on-load step, after which the page's next one runs."""
    owner, conv = page.owner, page.conversation_id
    panel_out = outputs(PanelView, panel)
    steered = outputs(SteeredView, page, panel)
    refresh = partial(refresh_panel, rt)
    # Whenever the conversation shown changes (open, switch, send, reset, ...), so does the panel.
    # The badge changes once per turn (not per streamed chunk), and with a reset or an edit.
    shown = [panel.pins_shown, panel.about_me_shown]
    conv.change(refresh, [owner, conv, *shown], panel_out, **QUIET)
    page.badge.change(
        refresh,
        [owner, conv, *shown, panel.summary_id],
        panel_out,
        trigger_mode="always_last",
        **QUIET,
    )
    opened = loaded.then(refresh, [owner, conv], panel_out, **QUIET).then(
        partial(remember_time_zone, rt),
        [owner, panel.time_zone],
        None,
        js="(owner, zone) => [owner, Intl.DateTimeFormat().resolvedOptions().timeZone]",
        **QUIET,
    )
    page.chat_input.input(
        partial(recall_for_draft, rt),
        [owner, conv, page.chat_input],
        [panel.recall_preview],
        trigger_mode="always_last",
        **QUIET,
    )
    page.chat.select(message_to_fact, None, [panel.new_fact], queue=False, **QUIET)
    panel.summary_save.click(
        partial(save_summary, rt), [owner, conv, panel.summary_text], steered, **QUIET
    )
    panel.summary_clear.click(partial(clear_summary, rt), [owner, conv], steered, **QUIET)
    panel.pin.click(
        partial(pin_fact, rt),
        [owner, conv, panel.new_fact, panel.pin_about_me],
        outputs(PinnedView, page, panel),
        **QUIET,
    )
    for facts, button in (
        (panel.pinned_facts, panel.unpin),
        (panel.about_me_facts, panel.unpin_about_me),
    ):
        button.click(partial(unpin_facts, rt), [owner, conv, facts], steered, **QUIET)
    panel.about_me_toggle.input(
        partial(toggle_about_me, rt), [owner, conv, panel.about_me_toggle], steered, **QUIET
    )
    for button, everything in ((panel.export_one, False), (panel.export_all, True)):
        button.click(
            partial(export_file, rt, everything=everything),
            [owner, conv],
            [panel.export_file],
            **QUIET,
        )
    panel.import_file.upload(partial(import_file, rt), [owner, panel.import_file], steered, **QUIET)
    panel.delete_all.click(
        partial(ask_delete_all, rt), [owner], outputs(DeleteAllConfirm, panel), **QUIET
    )
    panel.delete_all_no.click(
        cancel_delete_all, None, [panel.delete_all_confirm], queue=False, **QUIET
    )
    panel.delete_all_yes.click(
        partial(confirm_delete_all, rt), [owner], outputs(DeletedAllView, page, panel), **QUIET
    )
    return opened
