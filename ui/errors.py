"""The UI's error boundary: lower layers raise their own errors; `user_errors()` turns them into
`gr.Error` messages a person can act on, and nothing else reaches the browser."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import gradio as gr

from assistant.errors import AssistantError
from memory import ConversationNotFound, MemoryStoreError, StorageUnavailable
from personas import InvalidPersona, PersonaError, PersonaNotFound

log = logging.getLogger("mnemo.app")


@contextlib.contextmanager
def user_errors(action: str) -> Iterator[None]:
    """Turn an exception from a lower layer into a gr.Error saying what to do next."""
    try:
        yield
    except gr.Error:
        raise
    except AssistantError as exc:
        raise gr.Error(exc.message, title="The assistant could not answer") from exc
    except InvalidPersona as exc:
        raise gr.Error(str(exc), title="Persona not saved") from exc
    except PersonaNotFound as exc:
        raise gr.Error(
            f"{exc} Pick another persona, or revert this one to its built-in version.",
            title="Persona not found",
        ) from exc
    except PersonaError as exc:
        raise gr.Error(str(exc), title=f"Could not {action}") from exc
    except ConversationNotFound as exc:
        raise gr.Error(
            "This conversation no longer exists (deleted in another tab?). "
            "Pick another one in the sidebar or start a new chat.",
            title="Conversation not found",
        ) from exc
    except StorageUnavailable as exc:
        raise gr.Error(
            f"The conversation database is unavailable, so I could not {action}. "
            "Check that the data directory is writable and has free space, then try again.",
            title="Storage unavailable",
        ) from exc
    except MemoryStoreError as exc:
        raise gr.Error(str(exc), title=f"Could not {action}") from exc
    except Exception as exc:
        log.exception("unexpected error while trying to %s", action)
        raise gr.Error(
            f"Something unexpected went wrong while trying to {action}. Try again; if it "
            "keeps happening, the server log has the details.",
            title="Unexpected error",
        ) from exc
