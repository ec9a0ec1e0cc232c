"""The UI's error boundary: lower layers raise `assistant.errors.UserError`s carrying a message a
person can act on; `user_errors()` turns them into `gr.Error`s, in one place, and nothing else
reaches the browser."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import gradio as gr

from assistant.errors import UserError
from ui import notices

log = logging.getLogger("mnemo.app")


NO_SESSION = (
    "This page has not identified itself yet, so there is nothing of yours to show or change. "
    "Reload the page and try again."
)


def require_owner(owner: str | None) -> None:
    """Every handler's first check: a request from a page that never ran its load event (only
    a script can send one) has no owner; it gets a clear error, not a 500 and a traceback."""
    if not owner:
        raise notices.error(NO_SESSION, title="Reload the page")


@contextlib.contextmanager
def user_errors(action: str) -> Iterator[None]:
    """Turn an exception from a lower layer into a gr.Error saying what to do next; `action`
    completes "Could not ..." when the error has no title of its own."""
    try:
        yield
    except gr.Error:
        raise
    except UserError as exc:
        raise notices.error(exc.message, title=exc.title or f"Could not {action}") from exc
    except Exception as exc:
        log.exception("unexpected error while trying to %s", action)
        raise notices.error(
            f"Something unexpected went wrong while trying to {action}. Try again; if it "
            "keeps happening, the server log has the details.",
            title="Unexpected error",
        ) from exc
