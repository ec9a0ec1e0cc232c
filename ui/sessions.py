"""Who is talking: an owner id per browser, or the signed-in Hugging Face user.

Each browser keeps a random owner id in `gr.BrowserState` (localStorage). The id is a bearer
token: whoever presents it owns its chats, and its only protection is that 144 random bits cannot
be guessed. Gradio encrypts the stored value, but with a key it sends to every page in the app's
config, so nothing here may rely on the secret being secret: it only has to stay the same between
restarts (or every browser would lose its id), so it comes from MNEMO_SECRET or is generated once
and kept in the data dir. A browser id can never name a signed-in user (those are `hf:<name>`,
set only from Hugging Face's sign-in), and it is never logged.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from pathlib import Path

SECRET_FILE = "browser-secret"
_BROWSER_ID = re.compile(r"^b-[A-Za-z0-9_-]{16,64}$")


def browser_secret(data_dir: str | Path, secret: str | None = None) -> str:
    """The BrowserState secret: argument > MNEMO_SECRET > <data_dir>/browser-secret (created
    once, readable by this user only)."""
    if secret:
        return secret
    env = os.environ.get("MNEMO_SECRET", "").strip()
    if env:
        return env
    path = Path(data_dir) / SECRET_FILE
    try:
        existing = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    # Write then rename, so two processes starting at once never read a half-written file;
    # if another process won the race, use its secret.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secret-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(value)
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return path.read_text(encoding="utf-8").strip()
    finally:
        os.unlink(tmp)
    return value


def new_browser_id() -> str:
    return "b-" + secrets.token_urlsafe(18)


def is_browser_id(value: object) -> bool:
    return isinstance(value, str) and bool(_BROWSER_ID.match(value))


def owner_for(browser_id: str | None, hf_username: str | None) -> tuple[str, str]:
    """(owner, browser_id to keep). A signed-in HF user owns their chats by username, so they
    follow them across browsers; anyone else gets this browser's id (a new one if missing or
    tampered with)."""
    kept = browser_id if is_browser_id(browser_id) else new_browser_id()
    if hf_username:
        return f"hf:{hf_username}", kept
    return kept, kept
