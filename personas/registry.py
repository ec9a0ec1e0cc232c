"""Built-in personas plus each owner's saved versions, with hot reload.

Saved versions live in a `VersionStore` (personas/storage.py): files under
`data_dir/personas/` by default, or PostgreSQL tables (personas/postgres.py) when several
replicas share them. Owners are stored by a hash, never by the raw owner string. Within the
process, one lock per (owner, id) orders saves, rollbacks and reverts; across processes the
store itself never hands out one version number twice.

Built-in files (`builtin_dir/*.yaml`, file name = id) are never written. Each use checks their
mtime; an edit on disk is loaded on next use, and a broken edit keeps the last good version in
use while `last_error(id)` says what is wrong.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import PersonaError, PersonaLimitReached, PersonaNotFound, PersonaStoreUnavailable
from .loader import load_persona_text
from .model import DEFAULT_PERSONA_ID, ID_RE, Persona
from .storage import FileVersions, VersionStore

log = logging.getLogger(__name__)

BUILTIN_DIR = Path(__file__).resolve().parent
MAX_VERSIONS_PER_PERSONA = 500
MAX_PERSONAS_PER_OWNER = 100


@dataclass(frozen=True)
class PersonaVersion:
    """One version of a persona as an owner sees it."""

    persona: Persona
    version: int  # 0 = the built-in file; 1, 2, ... = the owner's saved versions
    yaml_text: str
    source: Literal["builtin", "saved"]
    saved_at: float | None  # epoch seconds (the file's mtime for a built-in)

    @property
    def id(self) -> str:
        return self.persona.id

    @property
    def label(self) -> str:
        """Short text for a versions list, e.g. 'v3 · saved 2026-11-30 06:12 UTC'."""
        if self.source == "builtin":
            return "v0 · built-in"
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.saved_at or 0))
        return f"v{self.version} · saved {when}"


@dataclass
class _Builtin:
    mtime_ns: int
    size: int
    current: PersonaVersion | None  # last good version; None if never loaded cleanly
    error: str | None


def _owner_key(owner: str) -> str:
    if not isinstance(owner, str) or not owner:
        raise PersonaError("An owner id is required to read or save personas.")
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]


def _check_id(persona_id: str) -> str:
    if not isinstance(persona_id, str) or not ID_RE.fullmatch(persona_id):
        raise PersonaNotFound(
            f"No persona {persona_id!r}: ids are 1-40 characters of a-z, 0-9, '_' or '-'."
        )
    return persona_id


class PersonaRegistry:
    """Personas for every owner: built-ins shared read-only, edits saved per owner."""

    folder = "personas"  # under data_dir; a subclass keeps another kind of document apart
    default_id = DEFAULT_PERSONA_ID  # listed first

    @staticmethod
    def load_text(text: str | bytes) -> Persona:
        """Parse and validate one document (a subclass reads another kind)."""
        return load_persona_text(text)

    def __init__(
        self,
        builtin_dir: str | os.PathLike[str] | None = None,
        *,
        data_dir: str | os.PathLike[str],
        versions: VersionStore | None = None,
    ):
        self.builtin_dir = Path(builtin_dir) if builtin_dir is not None else BUILTIN_DIR
        if not self.builtin_dir.is_dir():
            raise PersonaError(
                f"No built-in persona folder at {self.builtin_dir}: pass the folder holding "
                "the persona *.yaml files (the personas package folder by default)."
            )
        self.data_dir = Path(data_dir)  # resolved by the caller (assistant.config.data_dir)
        self.root = self.data_dir / self.folder
        # Where saved versions live: files under root by default; a shared database when
        # several replicas serve the same users (personas/postgres.py).
        self.version_store: VersionStore = (
            versions if versions is not None else FileVersions(self.root)
        )
        self._builtins: dict[str, _Builtin] = {}
        self._builtin_lock = threading.Lock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._saved_cache: dict[tuple[str, str, int], tuple[str, PersonaVersion]] = {}
        self._refresh_builtins()

    # ---- built-ins -------------------------------------------------------------------------

    def _refresh_builtins(self) -> dict[str, PersonaVersion]:
        """Reload changed built-in files; return the good version of each built-in id."""
        with self._builtin_lock:
            found: set[str] = set()
            for path in sorted(self.builtin_dir.glob("*.yaml")):
                persona_id = path.stem
                if not ID_RE.fullmatch(persona_id):
                    continue
                found.add(persona_id)
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue  # removed between glob and stat: keep what we have
                entry = self._builtins.get(persona_id)
                if entry and (entry.mtime_ns, entry.size) == (st.st_mtime_ns, st.st_size):
                    continue
                self._builtins[persona_id] = self._load_builtin(path, st, entry)
            for persona_id, entry in self._builtins.items():
                if persona_id not in found and entry.mtime_ns != -1:
                    entry.mtime_ns = -1  # so the file is reloaded whenever it comes back
                    entry.error = f"{persona_id}.yaml is missing from {self.builtin_dir}"
                    log.warning("built-in persona file %s.yaml disappeared; keeping it", persona_id)
            return {pid: e.current for pid, e in self._builtins.items() if e.current is not None}

    def _load_builtin(self, path: Path, st: os.stat_result, previous: _Builtin | None) -> _Builtin:
        keep = previous.current if previous else None
        try:
            text = path.read_text(encoding="utf-8")
            persona = self.load_text(text)
            if persona.id != path.stem:
                raise PersonaError(
                    f"id {persona.id!r} does not match the file name {path.name} — "
                    f"set `id: {path.stem}` or rename the file"
                )
        except (OSError, UnicodeDecodeError, PersonaError) as exc:
            error = f"{path.name}: {exc}"
            log.warning("built-in persona %s is broken, keeping the last good one: %s", path, exc)
            return _Builtin(st.st_mtime_ns, st.st_size, keep, error)
        version = PersonaVersion(persona, 0, text, "builtin", st.st_mtime)
        return _Builtin(st.st_mtime_ns, st.st_size, version, None)

    def refresh_builtins(self) -> dict[str, str | None]:
        """Re-read the built-in files now: each built-in id and why its file is not in use
        (None when it is)."""
        self._refresh_builtins()
        with self._builtin_lock:
            return {pid: self._builtins[pid].error for pid in sorted(self._builtins)}

    def last_error(self, persona_id: str) -> str | None:
        """Why the built-in file of `persona_id` on disk is not in use, or None if it is."""
        self._refresh_builtins()
        entry = self._builtins.get(persona_id)
        return entry.error if entry else None

    def builtin(self, persona_id: str) -> PersonaVersion:
        """The built-in version of a persona (the last good one if the file is broken)."""
        builtins = self._refresh_builtins()
        if persona_id not in builtins:
            raise PersonaNotFound(f"{persona_id!r} is not a built-in persona.")
        return builtins[persona_id]

    # ---- owner storage ---------------------------------------------------------------------

    def _lock(self, owner_key: str, persona_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault((owner_key, persona_id), threading.Lock())

    def _read_saved(self, owner_key: str, persona_id: str, version: int) -> PersonaVersion:
        text, saved_at = self.version_store.read(owner_key, persona_id, version)
        cache_key = (owner_key, persona_id, version)
        cached = self._saved_cache.get(cache_key)
        if cached and cached[0] == text:
            return cached[1]
        persona = self.load_text(text)  # versions are validated on save; this guards tampering
        result = PersonaVersion(persona, version, text, "saved", saved_at)
        if len(self._saved_cache) > 4096:  # versions are small, but owners are unbounded
            self._saved_cache.clear()
        self._saved_cache[cache_key] = (text, result)
        return result

    def _resolve(self, owner_key: str, persona_id: str) -> PersonaVersion:
        builtins = self._refresh_builtins()
        builtin = builtins.get(persona_id)
        try:
            numbers = self.version_store.numbers(owner_key, persona_id)
            current = self.version_store.current(owner_key, persona_id)
        except PersonaStoreUnavailable:
            if builtin is None:
                raise
            # Reading fails open: the built-in answers until the saved versions are back.
            log.warning("saved personas unavailable; serving built-in %s", persona_id)
            return builtin
        if current is None:
            current = numbers[-1] if numbers else 0
        # Try the version in use, then fall back newest-first: a damaged file never leaves the
        # owner without a persona when another good version exists.
        candidates = [current] + [n for n in reversed(numbers) if n != current]
        for number in candidates:
            if number == 0:
                if builtin is not None:
                    return builtin
                continue
            if number not in numbers:
                continue
            try:
                return self._read_saved(owner_key, persona_id, number)
            except (PersonaError, OSError, UnicodeDecodeError) as exc:
                log.warning("saved persona %s v%s is unreadable: %s", persona_id, number, exc)
        if builtin is not None:
            return builtin
        raise PersonaNotFound(
            f"No persona {persona_id!r}. Pick one of: {', '.join(self._ids(owner_key))}."
        )

    def _ids(self, owner_key: str) -> list[str]:
        builtin_ids = set(self._refresh_builtins())
        try:
            saved = self.version_store.persona_ids(owner_key)
        except PersonaStoreUnavailable:
            log.warning("saved personas unavailable; listing the built-ins only")
            saved = set()
        saved_ids = {i for i in saved if ID_RE.fullmatch(i)}
        ordered_builtins = sorted(builtin_ids, key=lambda i: (i != self.default_id, i))
        return ordered_builtins + sorted(saved_ids - builtin_ids)

    # ---- public API ------------------------------------------------------------------------

    def list(self, owner: str) -> list[PersonaVersion]:
        """One entry per persona id, the version this owner uses; the default comes first."""
        key = _owner_key(owner)
        result = []
        for persona_id in self._ids(key):
            try:
                result.append(self._resolve(key, persona_id))
            except PersonaNotFound:
                continue
        return result

    def get(self, owner: str, persona_id: str, version: int | None = None) -> PersonaVersion:
        """The version of `persona_id` this owner uses (or a given version number)."""
        key = _owner_key(owner)
        _check_id(persona_id)
        if version is None:
            return self._resolve(key, persona_id)
        if version == 0:
            return self.builtin(persona_id)
        return self._read_saved(key, persona_id, version)

    def save(self, owner: str, yaml_text: str) -> PersonaVersion:
        """Validate and store a new version for this owner; it is used from the next call.

        Raises InvalidPersona (nothing is stored; the version in use stays). Saving text
        identical to the version in use returns that version without adding one.
        """
        key = _owner_key(owner)
        persona = self.load_text(yaml_text)
        if isinstance(yaml_text, bytes):
            yaml_text = yaml_text.decode("utf-8")
        with self._lock(key, persona.id):
            numbers = self.version_store.numbers(key, persona.id)
            if numbers or persona.id in self._refresh_builtins():
                try:
                    in_use = self._resolve(key, persona.id)
                    if in_use.yaml_text == yaml_text:
                        return in_use
                except PersonaNotFound:
                    pass
            elif len(self._ids(key)) - len(self._refresh_builtins()) >= MAX_PERSONAS_PER_OWNER:
                raise PersonaLimitReached(
                    f"You have {MAX_PERSONAS_PER_OWNER} personas of your own; "
                    "edit an existing one instead of adding more."
                )
            if len(numbers) >= MAX_VERSIONS_PER_PERSONA:
                raise PersonaLimitReached(
                    f"{persona.id!r} already has {MAX_VERSIONS_PER_PERSONA} saved versions; "
                    "roll back to one of them instead of saving more."
                )
            number, saved_at = self.version_store.create(key, persona.id, yaml_text)
            saved = PersonaVersion(persona, number, yaml_text, "saved", saved_at)
            self._saved_cache[(key, persona.id, number)] = (yaml_text, saved)
            return saved

    def versions(self, owner: str, persona_id: str) -> list[PersonaVersion]:
        """Every version of `persona_id` for this owner, newest first; the built-in is v0."""
        key = _owner_key(owner)
        _check_id(persona_id)
        result: list[PersonaVersion] = []
        for number in reversed(self.version_store.numbers(key, persona_id)):
            try:
                result.append(self._read_saved(key, persona_id, number))
            except (PersonaError, OSError, UnicodeDecodeError) as exc:
                log.warning("skipping unreadable saved persona %s v%s: %s", persona_id, number, exc)
        builtin = self._refresh_builtins().get(persona_id)
        if builtin is not None:
            result.append(builtin)
        if not result:
            raise PersonaNotFound(f"No persona {persona_id!r} to list versions of.")
        return result

    def rollback(self, owner: str, persona_id: str, version: int) -> PersonaVersion:
        """Use an earlier version (0 = the built-in) from the next call; history is kept."""
        key = _owner_key(owner)
        _check_id(persona_id)
        with self._lock(key, persona_id):
            target = self.get(owner, persona_id, version)  # raises if it does not exist
            self.version_store.set_current(key, persona_id, version)
            return target

    def revert_to_builtin(self, owner: str, persona_id: str) -> PersonaVersion:
        """Use the built-in version again; saved versions stay available for rollback."""
        _check_id(persona_id)
        if persona_id not in self._refresh_builtins():
            raise PersonaNotFound(
                f"{persona_id!r} is your own persona, not a built-in: roll back to one of "
                "its versions instead."
            )
        return self.rollback(owner, persona_id, 0)

    def forget_owner(self, owner: str) -> int:
        """Delete every version this owner saved (their "delete all my data"); built-ins
        stay. Returns how many versions went."""
        key = _owner_key(owner)
        removed = self.version_store.forget(key)
        with self._locks_guard:
            self._saved_cache = {k: v for k, v in self._saved_cache.items() if k[0] != key}
        return removed

    def is_builtin(self, persona_id: str) -> bool:
        """Whether `persona_id` ships as a built-in file."""
        return persona_id in self._refresh_builtins()
