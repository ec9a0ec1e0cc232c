"""Where an owner's saved persona versions live: files in the data dir, or a shared database.

`PersonaRegistry` (registry.py) keeps the rules (validation, limits, fallbacks, built-ins) and
asks a `VersionStore` for five things: which version numbers exist, a version's text, a new
version (the next free number, made current), the current number, and which ids an owner has;
and to forget an owner (their "delete all my data").
Owners arrive as a hash (`owner_key`), never as the raw owner string.

`FileVersions` (the default, one machine) keeps the layout below; `PostgresVersions`
(personas/postgres.py) keeps the same in two tables, so several replicas share them.

    <owner key>/<persona id>/v0001.yaml   the exact YAML text of each saved version
                            /v0002.yaml
                            /current      the version in use ("0" = the built-in)

Version files are immutable: each is written to a temp file, flushed, then hard-linked to its
final name, which fails if the name is taken, so two writers can never claim the same number and
a reader never sees half a file. `current` is replaced atomically (temp file + `os.replace`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol

from .errors import PersonaNotFound
from .model import ID_RE

_VERSION_WIDTH = 4


class VersionStore(Protocol):
    """An owner's saved persona versions; numbers start at 1 (0 names the built-in)."""

    def numbers(self, owner_key: str, persona_id: str) -> list[int]:
        """The saved version numbers, ascending."""
        ...

    def read(self, owner_key: str, persona_id: str, version: int) -> tuple[str, float]:
        """(YAML text, saved at) of one version; PersonaNotFound when there is none."""
        ...

    def create(self, owner_key: str, persona_id: str, text: str) -> tuple[int, float]:
        """Store `text` as the next free version and make it current: (number, saved at)."""
        ...

    def current(self, owner_key: str, persona_id: str) -> int | None:
        """The version in use (0 = the built-in), or None when never set."""
        ...

    def set_current(self, owner_key: str, persona_id: str, version: int) -> None: ...

    def persona_ids(self, owner_key: str) -> set[str]:
        """The ids this owner has at least one saved version of."""
        ...

    def forget(self, owner_key: str) -> int:
        """Delete every saved version of this owner (and which one is current): how many."""
        ...


def _version_name(version: int) -> str:
    return f"v{version:0{_VERSION_WIDTH}d}.yaml"


def _parse_version_name(name: str) -> int | None:
    stem, _, ext = name.partition(".")
    if ext != "yaml" or not stem.startswith("v") or not stem[1:].isdigit():
        return None
    return int(stem[1:])


def write_atomic(path: Path, text: str, *, exclusive: bool) -> None:
    """Write `text` to `path` via a flushed temp file; with exclusive, fail if `path` exists."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if not exclusive:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # atomic, and raises FileExistsError instead of replacing
        except FileExistsError:
            raise
        except OSError:
            # Some mounted volumes refuse hard links: claim the name with O_EXCL, then move the
            # finished file over it. A reader may briefly see it empty and falls back meanwhile.
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class FileVersions:
    """Saved versions as files under `root` (data_dir/personas)."""

    def __init__(self, root: Path):
        self.root = root

    def _dir(self, owner_key: str, persona_id: str) -> Path:
        return self.root / owner_key / persona_id

    def numbers(self, owner_key: str, persona_id: str) -> list[int]:
        try:
            names = os.listdir(self._dir(owner_key, persona_id))
        except FileNotFoundError:
            return []
        return sorted(n for n in map(_parse_version_name, names) if n is not None)

    def read(self, owner_key: str, persona_id: str, version: int) -> tuple[str, float]:
        path = self._dir(owner_key, persona_id) / _version_name(version)
        try:
            return path.read_text(encoding="utf-8"), path.stat().st_mtime
        except FileNotFoundError as exc:
            raise PersonaNotFound(f"Version {version} of {persona_id!r} does not exist.") from exc

    def create(self, owner_key: str, persona_id: str, text: str) -> tuple[int, float]:
        folder = self._dir(owner_key, persona_id)
        folder.mkdir(parents=True, exist_ok=True)
        numbers = self.numbers(owner_key, persona_id)
        number = (numbers[-1] if numbers else 0) + 1
        while True:
            try:
                write_atomic(folder / _version_name(number), text, exclusive=True)
                break
            except FileExistsError:
                number += 1  # another writer (another process) took it
        self.set_current(owner_key, persona_id, number)
        return number, (folder / _version_name(number)).stat().st_mtime

    def current(self, owner_key: str, persona_id: str) -> int | None:
        try:
            path = self._dir(owner_key, persona_id) / "current"
            return int(path.read_text(encoding="ascii").strip())
        except (FileNotFoundError, ValueError):
            return None

    def set_current(self, owner_key: str, persona_id: str, version: int) -> None:
        folder = self._dir(owner_key, persona_id)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "current", f"{version}\n", exclusive=False)

    def persona_ids(self, owner_key: str) -> set[str]:
        try:
            return {
                p.name
                for p in (self.root / owner_key).iterdir()
                if p.is_dir() and ID_RE.fullmatch(p.name) and self.numbers(owner_key, p.name)
            }
        except FileNotFoundError:
            return set()

    def forget(self, owner_key: str) -> int:
        folder = self.root / owner_key
        if not folder.is_dir():
            return 0
        removed = sum(1 for p in folder.rglob("*.yaml") if _parse_version_name(p.name) is not None)
        shutil.rmtree(folder)
        return removed
