"""Toasts: titled by the app, short-lived, and showing user text exactly as typed.

Gradio renders a toast's message as HTML, so a conversation named `<b>x</b>` came out bold;
every message is escaped here. Gradio 6.31 heads every toast with its level ("Info",
"Warning") and ignores `title=`, so the app's title ("Renamed", "Persona saved") opens the
message itself and app.css heads the toast "Mnemo". Toasts close by themselves after a few
seconds, and app.css shows only the newest, clear of the header's Reset button.
"""

from __future__ import annotations

import html

import gradio as gr

INFO_S = 4.0
WARNING_S = 8.0
ERROR_S = 12.0


def toast_html(message: str, title: str) -> str:
    """The toast's body: the title in bold on its own line, then the message, both escaped."""
    return (
        f'<strong class="notice-title">{html.escape(title, quote=False)}</strong><br>'
        f"{html.escape(message, quote=False)}"
    )


def info(message: str, title: str) -> None:
    """Something the user did worked; `message` may hold user text."""
    gr.Info(toast_html(message, title), title=title, duration=INFO_S)


def warning(message: str, title: str) -> None:
    """Something did not happen, and why; `message` may hold user text."""
    gr.Warning(toast_html(message, title), title=title, duration=WARNING_S)


def error(message: str, title: str) -> gr.Error:
    """A gr.Error to raise: the action failed; `message` may hold user text. An error the user
    can act on is no fault of the server: no traceback in its log (ui.errors logs the
    unexpected ones)."""
    return gr.Error(
        toast_html(message, title), title=title, duration=ERROR_S, print_exception=False
    )
