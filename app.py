"""Mnemo: a chat assistant that remembers. `python app.py` launches the Gradio app.

This page is the entry point: the settings it reads, the runtime (store, personas, model),
`build_demo()` composing the UI panels, and `main()`. Each panel lives in `ui/` and builds its
own components and wires its own events to module-level handlers over plain values:

    ui/sidebar.py       new chat, search, the conversation list, rename / memory / delete
    ui/chat.py          the transcript, the chat's persona, send / stream / stop / retry / undo
    ui/memory_badge.py  the memory badge and Reset (every tab), the "what the model receives"
                        inspector
    ui/memory_panel.py  the memory panel: summary, pinned facts, about me, recall for the
                        draft, plots, export / import / delete all
    ui/personas_tab.py  the persona editor: YAML and form, versions, preview
    ui/page.py          what panels share: the `Page` record of components and the `ChatView`

Lower layers raise their own errors; `ui.errors.user_errors()` turns them into `gr.Error`
messages a person can act on, and nothing else reaches the browser.
"""

from __future__ import annotations

import logging
import sys
from functools import partial
from pathlib import Path

import gradio as gr
from fastapi import FastAPI

from api import create_web_app
from api.server import WebServer
from assistant import config
from assistant.errors import AssistantError
from assistant.runtime import Runtime
from ui import chat, memory_badge, memory_panel, personas_tab, roundtables_tab, sidebar
from ui.event_stream import KeepEventStreamsOpen
from ui.i18n import I18N, LANG_HEAD, REPORT_LANG, t
from ui.page import QUIET, ChatView, Page, open_latest, outputs, relabel
from ui.sessions import browser_secret, owner_for

log = logging.getLogger("mnemo.app")

HERE = Path(__file__).parent
CSS = (HERE / "ui" / "app.css").read_text(encoding="utf-8")
THEME = gr.themes.Soft(primary_hue="indigo", secondary_hue="blue", neutral_hue="slate")


def identify(browser_id: str | None, profile: gr.OAuthProfile | None = None) -> tuple[str, str]:
    """(owner, browser id to keep) for this page load."""
    username = getattr(profile, "username", None) if profile is not None else None
    return owner_for(browser_id, username)


def build_demo(rt: Runtime | None = None) -> gr.Blocks:
    """The Mnemo app: the panels, built in page order, then wired to each other."""
    rt = rt or Runtime()
    with gr.Blocks(title="Mnemo — a chat assistant that remembers") as demo:
        # Every browser gets its own owner id, signed with a secret that survives restarts.
        browser_id = gr.BrowserState(
            None,
            storage_key="mnemo-owner",
            secret=browser_secret(rt.data_dir, config.secret(), shared=rt.database_url is not None),
        )
        owner = gr.State("")
        conversation_id = gr.State(None)
        shown_conversation = gr.Textbox(visible=False, elem_id="shown-conversation")
        # Clicked by LANG_HEAD's script when the language switch changes the page's language.
        lang_changed = gr.Button(visible="hidden", elem_id="lang-changed")
        lang = gr.Textbox(visible=False)  # filled by REPORT_LANG in the browser

        side = sidebar.render(rt)
        header = memory_badge.render_badge()
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab(t("tab_chat"), id="chat-tab", elem_id="chat-tab"):
                pane = chat.render()
                inspector = memory_badge.render_inspector()
                memory = memory_panel.render()
            with gr.Tab(t("tab_personas"), id="persona-tab", elem_id="persona-tab"):
                editor = personas_tab.render()
                boards = roundtables_tab.render()

        page = Page(
            owner=owner,
            conversation_id=conversation_id,
            shown_conversation=shown_conversation,
            conversations=side.conversations,
            title=side.title,
            retention=side.retention,
            new_chat=side.new_chat,
            search=side.search,
            rename=side.rename,
            delete=side.delete,
            chat=pane.chat,
            chat_input=pane.chat_input,
            persona=pane.persona,
            badge=header.badge,
            reset=header.reset,
            reset_yes=header.reset_yes,
            delete_yes=side.confirm_yes,
            search_results=side.search_results,
            inspector=inspector,
            busy=pane.busy,
            reset_text=header.reset_text,
        )
        # On load, one step after another: who this is, their latest conversation, the memory
        # panel, the persona and roundtable editors; then the message box opens (chat.ready).
        # A message sent earlier had no owner yet, or was overwritten by the latest chat.
        loaded = demo.load(identify, [browser_id], [owner, browser_id], queue=False, **QUIET).then(
            partial(open_latest, rt), [owner], outputs(ChatView, page), **QUIET
        )
        demo.load(None, js=sidebar.CLOSE_ON_NARROW_SCREENS, **QUIET)
        lang_changed.click(
            partial(relabel, rt),
            [owner, conversation_id, lang],
            outputs(ChatView, page),
            js=REPORT_LANG,
            **QUIET,
        )
        sidebar.wire(rt, page, side)
        chat.wire(rt, page, pane)
        memory_badge.wire(rt, page, header)
        loaded = memory_panel.wire(rt, page, memory, loaded)
        loaded = personas_tab.wire(rt, page, editor, loaded)
        loaded = roundtables_tab.wire(rt, page, boards, loaded)
        loaded.then(chat.ready, None, [pane.chat_input], queue=False, **QUIET)
    return demo


QUEUE_CONCURRENCY = 8  # UI events run at once (Gradio's queue)
QUEUE_POLL_S = 0.01  # how often an idle Gradio queue looks for a new event


def queued(demo: gr.Blocks) -> gr.Blocks:
    """`demo` with the app's Gradio queue. Gradio's queue polls for events on the server's one
    event loop, every 1 ms on Linux even when idle: with nothing to do, the process spent 8%
    of a core waking for it (bench api_server, two pages), and under load each poll took the
    loop between an API message's steps. Every 10 ms, a UI event waits at most 9 ms more
    before it starts (it then makes several round trips of its own), and the loop wakes
    a tenth as often."""
    demo.queue(default_concurrency_limit=QUEUE_CONCURRENCY)
    demo._queue.sleep_when_free = max(demo._queue.sleep_when_free, QUEUE_POLL_S)
    return demo


def web_app(rt: Runtime, demo: gr.Blocks | None = None) -> FastAPI:
    """One ASGI app: the HTTP API at /api/v1 and the Gradio UI at "/" (see api/server.py)."""
    web = create_web_app(rt, config.admin_token(), config.sse_heartbeat_s())
    demo = demo if demo is not None else build_demo(rt)
    # A page keeps one Gradio event stream while it is open (ui/event_stream.py): a stream
    # Gradio closed as a new event joined left that event no way to report.
    web.add_middleware(KeepEventStreamsOpen)
    return gr.mount_gradio_app(
        web,
        queued(demo),
        path="/",
        theme=THEME,
        css=CSS,
        footer_links=["settings"],  # Gradio's Settings: the language switch
        i18n=I18N,
        head=LANG_HEAD,  # tells the server when the language switch changes the page's
        show_error=False,
    )


def main() -> int:
    """`python app.py`: serve until interrupted. Returns an exit status."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpx2", "google_genai"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        rt = Runtime(config.data_dir())
        host, port = config.host(), config.port()
        grace_s = config.shutdown_grace_s()
    except AssistantError as exc:  # e.g. MNEMO_MODEL=gemini without a key
        print(f"Mnemo cannot start: {exc.message}", file=sys.stderr)
        return 2
    try:
        server = WebServer(web_app(rt), host, port, on_stop=partial(rt.drain, grace_s))
    except OSError as exc:
        log.debug("bind failed", exc_info=exc)
        print(
            f"Mnemo cannot listen on {host}:{port}: the port is busy or not allowed. "
            f"Set MNEMO_PORT to a free port, e.g. MNEMO_PORT={port + 1} python app.py",
            file=sys.stderr,
        )
        return 1
    print(f"Mnemo is running on {server.url} (HTTP API: {server.url}/api/v1/docs)", flush=True)
    print(f"  model: {rt.model_name} · data: {rt.data_dir.resolve()}", flush=True)
    drained = server.run()
    if drained is not None:
        replies = "reply" if drained.finished == 1 else "replies"
        print(
            f"Mnemo stopped: {drained.finished} streaming {replies} finished, "
            f"{drained.stopped} saved as incomplete; database closed.",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
