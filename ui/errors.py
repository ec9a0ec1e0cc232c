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
