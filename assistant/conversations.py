"""`Conversations`: the one way into the domain for the UI and the HTTP API.

    conversations = await runtime.conversations()
    opened = await conversations.open(owner, conv_id)      # an OpenConversation record
    async for event in conversations.send(owner, conv_id, "Hello"):
        ...                                                # Delta, then Done (or Cleared)

Every operation takes the owner first; another owner's conversation behaves exactly like one that
does not exist. Errors a user can act on come out as `assistant.errors.UserError` subclasses (the
table in `_ERRORS` translates memory's and personas' errors, once, here); anything else is a bug.
Persona registry calls read and write files, so they run in a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from memory import (
    Conversation,
    ConversationNotFound,
    MemoryStatus,
    MemoryStoreError,
    ResetResult,
    StorageUnavailable,
    TokenNotFound,
    Turn,
)
from memory import InvalidInput as MemoryInvalidInput
from memory.recall import lone_cjk, query_terms, snippet, term_pattern
from personas import (
    DEFAULT_PERSONA_ID,
    InvalidPersona,
    PersonaError,
    PersonaNotFound,
    PersonaVersion,
    RoundtableRegistry,
    build_system_prompt,
    load_persona_text,
)
from personas import form as persona_form
from personas.loader import dump_persona_mapping

from .chat import ChatEvent, ChatService, Preview, check_message
from .edits import ConversationEdits
from .errors import (
    SHUTTING_DOWN,
    InvalidInput,
    InvalidPersonaYaml,
    NotFound,
    PersonaRefused,
    PersonaUnavailable,
    ReplyStreaming,
    ShuttingDown,
    StorageError,
    UserError,
    condition_of,
)
from .records import (
    FormResult,
    OpenConversation,
    PersonaChange,
    PersonaDocument,
    PersonaDraft,
    PersonaInfo,
    SearchResult,
    SearchResults,
    TranscriptPage,
)
from .roundtable import RoundtableRunner
from .roundtables import RoundtableOps
from .steering import MemoryControls
from .tokens import TokenOps

log = logging.getLogger(__name__)

T = TypeVar("T")
FORM_FIELDS = persona_form.FORM_FIELDS
PAGE_ROWS = 400  # transcript rows a chat shows; older ones stay stored (and summarized)
SEARCH_HITS = 200  # matching messages a search groups into conversations
SEARCH_SCAN = 1_000  # newest conversations whose titles a search looks at
SEARCH_CHARS = 200  # a search query; anything longer is a paste, not a search

NOT_FOUND = (
    "This conversation no longer exists (deleted in another tab?). "
    "Pick another one in the sidebar or start a new chat."
)
STORAGE_DOWN = (
    "The conversation database is unavailable, so I could not {action}. "
    "Check that the data directory is writable and has free space, then try again."
)

# Which lower-layer error becomes which user error: the first matching row wins.
_ERRORS: list[tuple[type[Exception], Callable[[Any, str], UserError]]] = [
    (ConversationNotFound, lambda exc, action: NotFound(NOT_FOUND)),
    (
        TokenNotFound,
        lambda exc, action: NotFound(str(exc), title="API token not found", code="token_not_found"),
    ),
    (
        StorageUnavailable,
        lambda exc, action: StorageError(
            STORAGE_DOWN.format(action=action), title="Storage unavailable"
        ),
    ),
    (MemoryInvalidInput, lambda exc, action: InvalidInput(str(exc), **condition_of(exc))),
    (MemoryStoreError, lambda exc, action: UserError(str(exc))),
    (
        InvalidPersona,
        lambda exc, action: InvalidPersonaYaml(
            str(exc), list(exc.problems), [_located(p) for p in exc.details]
        ),
    ),
    (
        PersonaNotFound,
        lambda exc, action: PersonaUnavailable(
            f"{exc} Pick another persona, or revert this one to its built-in version."
        ),
    ),
    (PersonaError, lambda exc, action: PersonaRefused(str(exc))),
]


def _located(problem: Any) -> dict[str, Any]:
    return {
        "field": problem.field,
        "message": problem.message,
        "line": problem.line,
        "column": problem.column,
    }


@contextlib.contextmanager
def user_errors(action: str) -> Iterator[None]:
    """Re-raise memory's and personas' errors as UserErrors; `action` completes "could not ..."."""
    try:
        yield
    except UserError:
        raise
    except Exception as exc:
        for kind, make in _ERRORS:
            if isinstance(exc, kind):
                raise make(exc, action) from exc
        raise


def _draft_preview(persona: PersonaVersion, model: str) -> Preview:
    prompt = build_system_prompt(persona.persona)
    # No system_instruction yet: a new chat has no memory note, only the persona's prompt.
    return Preview(
        system_prompt=prompt,
        summary=None,
        turns=[],
        chars=0,
        budget=0,
        system_instruction="",
        model=model,
        persona_id=persona.id,
        persona_version=persona.version,
    )


class Conversations(ConversationEdits, MemoryControls, RoundtableOps, TokenOps):
    """Conversations, edits, their memory, the chat turn, personas, for one app."""

    def __init__(self, service: ChatService, roundtables: RoundtableRegistry | None = None) -> None:
        self.service = service
        self.store = service.store  # fail-open (assistant.failopen)
        self.registry = service.personas
        roundtables = roundtables or RoundtableRegistry(data_dir=service.personas.data_dir)
        self.roundtable_registry = roundtables
        self.roundtable_runner = RoundtableRunner(service, roundtables)
        self._turn_locks: dict[str, asyncio.Lock] = {}
        # For a graceful shutdown (Runtime.drain): the tasks streaming a reply now, and
        # whether new replies may still start.
        self.replies: set[asyncio.Task[Any]] = set()
        self.draining = False
        service.search_memory = self.search_for_tools  # the tool searches as the sidebar does

    _errors = staticmethod(user_errors)  # RoundtableOps maps errors the same way

    @property
    def model_name(self) -> str:
        return self.service.model.name

    async def _personas(self, call: Callable[..., T], *args: Any) -> T:
        """A registry call, in a thread: it reads and writes persona files."""
        return await asyncio.to_thread(call, *args)

    # -- conversations -------------------------------------------------------------------

    async def list(self, owner: str, limit: int = 100) -> list[Conversation]:
        """The owner's conversations, newest activity first ([] while storage is down)."""
        with user_errors("load your conversations"):
            return await self.store.list_conversations(owner, limit)

    async def latest(self, owner: str) -> str | None:
        """The id of the most recently active conversation, or None."""
        found = await self.list(owner, limit=1)
        return found[0].id if found else None

    async def get(self, owner: str, conv_id: str) -> Conversation:
        with user_errors("open that conversation"):
            return await self.store.get_conversation(owner, conv_id)

    async def create(
        self,
        owner: str,
        *,
        title: str | None = None,
        persona_id: str | None = None,
        retention_minutes: int | None = None,
    ) -> Conversation:
        """A new conversation with the persona (the default one when None); while storage is
        down an unsaved one to chat in."""
        with user_errors("start a new chat"):
            chosen, _ = await self._choice(owner, persona_id or DEFAULT_PERSONA_ID)
            return await self.store.create_conversation(
                owner, title, chosen, None, retention_minutes
            )

    async def rename(self, owner: str, conv_id: str, title: str) -> Conversation:
        with user_errors("rename the conversation"):
            return await self.store.rename_conversation(owner, conv_id, title)

    async def delete(self, owner: str, conv_id: str) -> None:
        with user_errors("delete the conversation"):
            await self.store.delete_conversation(owner, conv_id)

    async def set_retention(self, owner: str, conv_id: str, minutes: int | None) -> Conversation:
        """Keep the conversation (None), or forget it after `minutes` idle."""
        with user_errors("change how long this conversation is kept"):
            return await self.store.set_retention(owner, conv_id, minutes)

    async def set_persona(self, owner: str, conv_id: str, persona_id: str) -> PersonaChange:
        """Answer with another persona (or roundtable: `roundtable:<id>`) from the next message."""
        with user_errors("change the persona"):
            chosen, info = await self._choice(owner, persona_id)
            conversation = await self.store.get_conversation(owner, conv_id)
            changed = conversation.persona_id != chosen
            if changed:
                conversation = await self.store.set_persona(owner, conv_id, chosen)
            return PersonaChange(conversation, info, changed)

    async def messages(
        self, owner: str, conv_id: str, *, limit: int = PAGE_ROWS, before_id: int | None = None
    ) -> TranscriptPage:
        """A page of the transcript, oldest first: the newest `limit` turns before `before_id`."""
        with user_errors("load the messages"):
            conversation = await self.store.get_conversation(owner, conv_id)
            turns = await self.store.transcript(owner, conv_id, limit, before_id=before_id)
        return self._page(conversation, turns, limit, before_id)

    def _page(
        self, conversation: Conversation, turns: list[Turn], limit: int, before_id: int | None
    ) -> TranscriptPage:
        earlier = None
        if before_id is None:  # the newest page: every message it leaves out is older
            listed = sum(1 for t in turns if t.role in ("user", "assistant"))
            earlier = max(conversation.message_count - listed, 0)
        more = len(turns) >= limit and bool(turns) and turns[0].id is not None
        return TranscriptPage(turns, earlier, turns[0].id if more else None)

    async def open(
        self, owner: str, conv_id: str | None, *, persona_id: str | None = None
    ) -> OpenConversation:
        """The chat pane for a conversation, or for a new chat with `persona_id`.

        Never raises for a missing conversation or a storage failure: `state` says "missing"
        (gone, or another owner's) or "unreadable" (storage down; the status says degraded).
        """
        model = self.model_name
        conversation = None
        state = "new"
        if conv_id:
            try:
                conversation = await self.store.get_conversation(owner, conv_id)
                state = "open"
            except ConversationNotFound:
                state = "missing"
            except StorageUnavailable:
                state = "unreadable"
        with user_errors("open that conversation"):
            wanted = conversation.persona_id if conversation else persona_id
            board, wanted = await self._board_of(owner, wanted)
            persona = await self._persona_or_default(owner, wanted)
            info = PersonaInfo.of(persona)
            if conversation is None:
                status = None
                if state == "unreadable":
                    status = await self.service.status(owner, conv_id or "")
                return OpenConversation(
                    state=state,  # type: ignore[arg-type]
                    conversation=None,
                    persona=info,
                    transcript=TranscriptPage([], 0, None),
                    status=status,
                    preview=_draft_preview(persona, model),
                    model=model,
                    roundtable=board,
                )
            turns = await self.store.transcript(owner, conversation.id, limit=PAGE_ROWS)
            return OpenConversation(
                state="open",
                conversation=conversation,
                persona=info,
                transcript=self._page(conversation, turns, PAGE_ROWS, None),
                status=await self.service.status(owner, conversation.id),
                preview=await self.preview(owner, conversation.id),
                model=model,
                roundtable=board,
                speakers=await self._speakers(owner, turns),
            )

    async def _persona_or_default(self, owner: str, persona_id: str | None) -> PersonaVersion:
        try:
            return await self._personas(self.registry.get, owner, persona_id or DEFAULT_PERSONA_ID)
        except PersonaNotFound:
            return await self._personas(self.registry.get, owner, DEFAULT_PERSONA_ID)

    # -- memory --------------------------------------------------------------------------

    async def status(self, owner: str, conv_id: str) -> MemoryStatus:
        """What the memory badge shows (degraded instead of an error when storage fails)."""
        with user_errors("read the memory status"):
            return await self.service.status(owner, conv_id)

    async def preview(
        self, owner: str, conv_id: str, draft: str | None = None, *, language: str | None = None
    ) -> Preview:
        """What the model receives with the next message; with `draft`, the older turns that
        message would recall too (`language`: the page's, for a roundtable's veto label)."""
        draft = (draft or "").strip() or None
        with user_errors("show what the model receives"):
            preview = await self.service.preview(owner, conv_id, draft=draft)
            return await self._with_members(owner, conv_id, preview, draft, language)

    async def reset(self, owner: str, conv_id: str) -> ResetResult:
        """Forget the conversation's messages and summaries; the conversation stays.
        ReplyStreaming while a reply streams into it."""
        await self._not_streaming(owner, conv_id, "reset it")
        with user_errors("reset the memory"):
            return await self.service.reset(owner, conv_id)

    async def undo(self, owner: str, conv_id: str) -> list[Turn]:
        """Drop the last user message and what followed; returns what went ([] if nothing).
        ReplyStreaming while a reply streams into the conversation."""
        await self._not_streaming(owner, conv_id, "undo")
        with user_errors("undo"):
            return await self.service.undo(owner, conv_id)

    async def _not_streaming(self, owner: str, conv_id: str, then: str) -> None:
        # A reply saved after its question was forgotten stood alone in the conversation (its
        # first save appends it; only later ones find it gone).
        lock = self._turn_locks.get(conv_id)  # not setdefault: any id may be asked for
        if lock is not None and lock.locked():
            await self.get(owner, conv_id)  # someone else's conversation: NotFound, as ever
            raise ReplyStreaming(
                f"A reply is still streaming into this conversation: stop it or let it "
                f"finish, then {then}."
            )

    # -- search --------------------------------------------------------------------------

    async def search(
        self,
        owner: str,
        query: str | None,
        *,
        limit: int = 20,
        mark: tuple[str, str] = ("**", "**"),
    ) -> SearchResults:
        """The owner's conversations whose title or messages match `query`, newest activity
        first, each with its matching messages (snippets wrapped in `mark`). Never raises: a
        query without words is not searchable, a failing store makes results unavailable.

        One full-text query for the messages, one indexed read of the newest conversations for
        their titles (titles are not in the full-text index), grouped here.
        """
        query = (query or "").strip()[:SEARCH_CHARS]
        terms = [*query_terms(query), *lone_cjk(query)]  # 高 alone is a search too
        if not query or not terms:
            return SearchResults(query, searchable=not query or bool(terms))
        try:
            hits = await self.store.search(owner, query, SEARCH_HITS, mark)
            conversations = await self.store.list_conversations(owner, SEARCH_SCAN)
            personas = await self._personas(self.registry.list, owner)
        except Exception:  # searching is a nicety: never interrupt typing with an error
            log.warning("search failed", exc_info=True)
            return SearchResults(query, available=False)
        by_conversation: dict[str, list[Any]] = {}
        for hit in hits:  # newest first
            by_conversation.setdefault(hit.conversation_id, []).append(hit)
        pattern = term_pattern(terms)
        infos = {p.id: PersonaInfo.of(p) for p in personas}
        results = []
        for conversation in conversations:  # newest activity first
            title = " ".join((conversation.title or "").split())
            matched = bool(title and pattern and pattern.search(title))
            if conversation.id not in by_conversation and not matched:
                continue
            # Wide enough that the title is shown from its start, not cut around the match.
            marked = snippet(title, terms, mark, width=3 * len(title) + 3) if title else ""
            found = by_conversation.get(conversation.id, [])
            spoke = {h.speaker for h in found if h.speaker and h.speaker in infos}
            results.append(
                SearchResult(
                    conversation,
                    marked,
                    found,
                    infos.get(conversation.persona_id),
                    {pid: infos[pid] for pid in spoke},
                )
            )
            if len(results) >= limit:
                break
        if not results and self.store.degraded:  # the store answered [] because it could not
            return SearchResults(query, available=False)
        return SearchResults(query, results)

    # -- the chat turn -------------------------------------------------------------------

    @staticmethod
    def check_message(text: str) -> None:
        """Raise InvalidMessage, with memory's wording, unless `text` can be sent."""
        check_message(text)

    async def send(
        self, owner: str, conv_id: str, text: str, *, language: str | None = None
    ) -> AsyncIterator[ChatEvent]:
        """Answer `text`, streaming Delta events, then Done (or Cleared for `/reset`). In a
        roundtable conversation: Speaking, Delta..., Spoke per speaker, then RoundtableDone.
        `language` is the asker's page's ("zh-TW"): a roundtable's veto label follows it."""
        # aclosing at every level: Stop closes this generator, and the speaker's partial reply
        # must be saved before aclose() returns, not when the garbage collector gets to it.
        events = self._streamed(conv_id, "send your message", self._send, owner, text, language)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def retry(
        self, owner: str, conv_id: str, *, language: str | None = None
    ) -> AsyncIterator[ChatEvent]:
        """Answer the last user message again (the previous reply, or every reply of a
        roundtable turn, is dropped); `language` as for send()."""
        events = self._streamed(conv_id, "retry", self._retry, owner, language)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def _streamed(
        self,
        conv_id: str,
        action: str,
        start: Callable[..., AsyncIterator[ChatEvent]],
        owner: str,
        *args: Any,
    ) -> AsyncIterator[ChatEvent]:
        # Held while the reply streams, so a refresh after Stop (settled()) sees the saved
        # partial reply rather than the state before it.
        async with self.streaming(conv_id):
            events = start(owner, conv_id, *args)
            async with contextlib.aclosing(events):
                with user_errors(action):
                    async for event in events:
                        yield event

    @contextlib.asynccontextmanager
    async def streaming(self, conv_id: str) -> AsyncIterator[None]:
        """Held while a reply streams into the conversation: its turn lock, with the task
        tracked so a shutdown can wait for it or stop it. ShuttingDown once the app stops."""
        if self.draining:
            raise ShuttingDown(SHUTTING_DOWN)
        task = asyncio.current_task()
        async with self.turn_lock(conv_id):
            if task is not None:
                self.replies.add(task)
            try:
                yield
            finally:
                self.replies.discard(task)  # type: ignore[arg-type]

    def turn_lock(self, conv_id: str) -> asyncio.Lock:
        """The lock a reply streaming into this conversation holds."""
        return self._turn_locks.setdefault(conv_id, asyncio.Lock())

    async def settled(self, conv_id: str | None, wait_s: float = 10.0) -> None:
        """Wait until no reply is streaming into this conversation (or the timeout passes)."""
        lock = self._turn_locks.get(conv_id or "")
        if lock is None or not lock.locked():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await lock.acquire()
                lock.release()

    # -- personas ------------------------------------------------------------------------

    async def personas(self, owner: str) -> list[PersonaInfo]:
        """The personas this owner can pick: built-ins and their own, each as in use."""
        with user_errors("list the personas"):
            return [PersonaInfo.of(v) for v in await self._personas(self.registry.list, owner)]

    async def persona(self, owner: str, persona_id: str | None) -> PersonaDocument:
        """The editor's view of a persona (the default one when unknown or None)."""
        with user_errors("open the persona"):
            wanted = persona_id or DEFAULT_PERSONA_ID
            current = await self._persona_or_default(owner, wanted)
            versions = await self._personas(self.registry.versions, owner, current.id)
            return PersonaDocument(
                info=PersonaInfo.of(current),
                yaml_text=current.yaml_text,
                system_prompt=build_system_prompt(current.persona),
                form=self._form(current.persona),
                versions=[PersonaInfo.of(v) for v in versions],
                disk_error=self.registry.last_error(current.id),
                fell_back=current.id != wanted,
                fields=current.persona.model_dump(),
            )

    async def persona_versions(self, owner: str, persona_id: str) -> list[PersonaInfo]:
        with user_errors("list the persona's versions"):
            versions = await self._personas(self.registry.versions, owner, persona_id)
            return [PersonaInfo.of(v) for v in versions]

    @staticmethod
    def validate_persona(yaml_text: str) -> PersonaDraft:
        """Validate YAML without saving; raises InvalidPersonaYaml with located problems."""
        with user_errors("validate the persona"):
            persona = load_persona_text(yaml_text or "")
        return PersonaDraft(
            id=persona.id,
            display_name=persona.display_name,
            system_prompt=build_system_prompt(persona),
            form=Conversations._form(persona),
        )

    @staticmethod
    def apply_persona_form(yaml_text: str, edits: dict[str, Any]) -> FormResult:
        """Merge form edits into the YAML; the result has the new prompt or the problems."""
        new_text, persona, problems = persona_form.apply_form(yaml_text or "", edits)
        prompt = build_system_prompt(persona) if persona is not None else None
        return FormResult(new_text, prompt, list(problems))

    @staticmethod
    def _form(persona: Any) -> dict[str, Any]:
        return dict(zip(FORM_FIELDS, persona_form.form_values(persona), strict=True))

    async def save_persona(self, owner: str, yaml_text: str) -> PersonaInfo:
        """Save a new version for this owner, used from the next message. Bad YAML raises
        InvalidPersonaYaml and changes nothing."""
        with user_errors("save the persona"):
            return PersonaInfo.of(await self._personas(self.registry.save, owner, yaml_text or ""))

    async def rollback_persona(self, owner: str, persona_id: str, version: int) -> PersonaInfo:
        """Use an earlier version again."""
        with user_errors("roll back the persona"):
            found = await self._personas(self.registry.rollback, owner, persona_id, int(version))
            return PersonaInfo.of(found)

    async def revert_persona(self, owner: str, persona_id: str) -> PersonaInfo:
        """Use the built-in version again; an owner's own persona has none (PersonaRefused)."""
        with user_errors("revert the persona"):
            if not await self._personas(self.registry.is_builtin, persona_id):
                raise PersonaRefused(
                    "This persona is your own, so it has no built-in version. "
                    "Pick an earlier version in the list and use that instead.",
                    title="Nothing to revert to",
                )
            found = await self._personas(self.registry.revert_to_builtin, owner, persona_id)
            return PersonaInfo.of(found)

    async def put_persona(
        self, owner: str, persona_id: str, yaml_text: str | None, fields: dict[str, Any] | None
    ) -> PersonaInfo:
        """Save a new version of `persona_id` from YAML (saved as written, so problems point
        at the caller's own lines) or from a mapping of fields (its id is `persona_id`)."""
        with user_errors("save the persona"):
            if fields is not None:
                yaml_text = dump_persona_mapping({"id": persona_id, **fields})
            named = load_persona_text(yaml_text or "").id  # InvalidPersona, located
            if named != persona_id:
                raise InvalidPersonaYaml(
                    f"The persona's id is {named!r} but the URL names {persona_id!r}: make "
                    f"them match, or PUT it to /personas/{named}.",
                    [f"id: is {named!r}, not {persona_id!r}"],
                    [{"field": "id", "message": f"is {named!r}, not {persona_id!r}"}],
                )
            return PersonaInfo.of(await self._personas(self.registry.save, owner, yaml_text))

    async def refresh_personas(self) -> dict[str, str | None]:
        """Re-read the built-in persona files: each id and its problem (None: in use)."""
        with user_errors("re-read the built-in personas"):
            return await self._personas(self.registry.refresh_builtins)
