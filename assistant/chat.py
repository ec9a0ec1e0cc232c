"""The chat turn: memory, persona and model tied together (DESIGN.md, "The chat turn").

    async for event in service.send(owner, conv_id, text):
        Delta(text)    a chunk of the reply, as it streams
        Done(...)      the reply is complete and saved; which model answered; degraded or not
        Cleared(...)   the message was `/reset`: what was forgotten

Order of a turn: `/reset` first (no quota, no model) -> quota (fails closed) -> context (fails
open: no history, flagged degraded) -> save the user's message -> stream the reply -> save it
(a stopped or failed stream keeps what arrived, marked incomplete) -> in the background: metrics
(numbers only, never text) and summarization when due, neither delaying the reply.

Errors are `AssistantError`s with a message the user can act on; an error during the stream
carries the text that had arrived in `.partial` (already saved, marked incomplete). Memory's
`ConversationNotFound` passes through unchanged: the conversation is gone, not the model.
How the reply is written while and after it streams is `assistant/reply_saving.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from memory import (
    MAX_MESSAGE_CHARS,
    ContextWindow,
    MemoryBackend,
    MemoryStatus,
    ResetResult,
    StorageUnavailable,
    Turn,
    TurnMetrics,
    render_memory,
)
from memory import (
    InvalidInput as MemoryInvalidInput,
)
from memory import (
    check_message as memory_check_message,
)
from memory.context import render_messages
from personas import PersonaError, PersonaRegistry, build_system_prompt

from . import outcome_notes as notes
from .errors import (
    AssistantError,
    BlockedBySafety,
    EmptyReply,
    InvalidMessage,
    NothingToRetry,
    QuotaExceeded,
    StorageError,
    condition_of,
)
from .failopen import FailOpenStore, is_unsaved
from .models import ChatModel, Message, Settings, Usage
from .reply_saving import save_progress, save_reply
from .tools import Search, Toolbox, ToolCall, save_note, search_messages
from .turn_state import Admission, OwnerLocks, ReplyState, error_kind, ms_since, outcome_of

log = logging.getLogger(__name__)

RESET_COMMAND = "/reset"
DEFAULT_PERSONA_ID = "assistant"
# Used only when no persona can be loaded at all (broken install): the turn still gets answered.
FALLBACK_SYSTEM_PROMPT = "You are Mnemo, a helpful assistant that remembers the conversation."


@dataclass(frozen=True)
class Delta:
    """A chunk of the reply."""

    text: str


@dataclass(frozen=True)
class Done:
    """The reply is complete (or was cut short: status "incomplete") and saved."""

    reply: str
    model: str  # display name of the model that answered
    status: Literal["ok", "incomplete"]
    degraded: bool  # memory storage failed: answered without history and/or not saved
    usage: Usage
    saved: bool = True  # False when storage failed and the reply exists only on screen
    notice: str | None = None  # why the reply is incomplete, for the user


@dataclass(frozen=True)
class Cleared:
    """The conversation's memory was reset (the `/reset` command)."""

    result: ResetResult


@dataclass(frozen=True)
class ToolUsed:
    """The model called a tool; its note is saved on the user's side of the history."""

    name: str
    status: str  # "ok" | "error"
    note: str  # what the history keeps: name, key arguments, status


ChatEvent = Delta | Done | Cleared | ToolUsed


@dataclass(frozen=True)
class Preview:
    """Exactly what the model receives with the next message (the inspector shows it)."""

    system_prompt: str  # the persona's composed prompt
    summary: str | None  # the rolling summary, if any
    turns: list[dict[str, str]]  # the recent turns, {"role", "content"}, oldest first
    chars: int  # memory characters in use (summary + turns)
    budget: int
    system_instruction: str  # system_prompt + the memory note: the exact system text sent
    model: str
    persona_id: str
    persona_version: int | None
    degraded: bool = False
    not_shown: int = 0  # older turns waiting to be summarized, not sent
    recalled: list[dict[str, str]] = field(default_factory=list)  # for the draft, oldest first
    # A roundtable conversation: what each speaker receives (assistant.roundtable.MemberPreview).
    members: list[Any] = field(default_factory=list)


def is_reset_command(text: str) -> bool:
    """True for `/reset` typed alone (any case, surrounding spaces ignored)."""
    return text.strip().casefold() == RESET_COMMAND


def compose_system(persona_prompt: str, context: ContextWindow) -> str:
    """Persona prompt, then the memory note (memory's one renderer) when there is one."""
    note = render_memory(context)
    return persona_prompt if note is None else persona_prompt + "\n\n" + note


@dataclass
class _Persona:
    id: str
    version: int | None
    prompt: str
    temperature: float | None


class ChatService:
    """Runs chat turns for the app. One instance serves every owner and conversation."""

    def __init__(
        self,
        store: MemoryBackend | FailOpenStore,
        personas: PersonaRegistry,
        model: ChatModel,
        quota_per_hour: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # Context, append and status must never fail a turn; the quota must (FailOpenStore
        # passes count_turn_requests through unchanged).
        self.store = store if isinstance(store, FailOpenStore) else FailOpenStore(store)
        self.personas = personas
        self.model = model
        self.quota_per_hour = quota_per_hour or None
        self.clock = clock
        self._background: set[asyncio.Task[Any]] = set()
        # Per owner: turns admitted whose metrics row (what the quota counts) is not written
        # yet, so a burst of concurrent messages cannot slip past the quota.
        self._pending: Counter[str] = Counter()
        self._quota_lock = OwnerLocks()  # the count and _pending read or changed as one
        # The search_memory tool's search (the facade puts the sidebar's in its place).
        self.search_memory: Search = partial(search_messages, self.store)

    # -- the turn -----------------------------------------------------------------------

    async def send(
        self, owner: str, conv_id: str, text: str, persona_id: str | None = None
    ) -> AsyncIterator[ChatEvent]:
        """Answer `text` in the conversation, streaming; see the module docstring.
        `persona_id`: the conversation's, when the caller has just read it (one read less)."""
        if is_reset_command(text):
            yield Cleared(await self.reset(owner, conv_id))
            return
        check_message(text)
        admission = await self._admit(owner)
        try:
            # The question's embedding (the longest wait before the model) runs meanwhile.
            await self.store.expect(owner, conv_id, text)
            persona, degraded = await self._persona_of(owner, conv_id, persona_id)
            context = await self.store.context(owner, conv_id, query=text)
            saved = await self.store.append(owner, conv_id, "user", text)
            degraded = degraded or context.degraded or not saved.saved
            # The new message goes in whole: the context clips stored turns for the prompt, and
            # this one is not in it yet (it was read before the append).
            messages: list[Message] = [*render_messages(context), {"role": "user", "content": text}]
            # aclosing: when the app closes this generator (Stop), close the inner one right
            # away so it saves the partial reply now, not whenever the garbage collector runs.
            turn = ReplyState(owner, conv_id, admission, question_id=saved.id)
            reply = self._reply(turn, persona, context, messages, degraded)
            async with contextlib.aclosing(reply):
                async for event in reply:
                    yield event
        finally:
            if not admission.handed_off:
                admission.release()

    async def expect(self, owner: str, conv_id: str, text: str) -> None:
        """Start embedding `text` before send() is called, while the caller reads what it must
        first (the conversation's persona): only a message that send() will answer with no
        check left to pass. With a quota, send() starts it once the message is admitted, so
        a refused message costs no embedding."""
        if self.quota_per_hour is not None or is_reset_command(text):
            return
        try:
            check_message(text)
        except InvalidMessage:
            return  # send() refuses it
        await self.store.expect(owner, conv_id, text)

    async def retry(self, owner: str, conv_id: str) -> AsyncIterator[ChatEvent]:
        """Regenerate the reply to the last user message (the previous reply is dropped)."""
        admission = await self._admit(owner)
        try:
            persona, degraded = await self._persona_of(owner, conv_id)
            try:
                await self.store.drop_last_reply(owner, conv_id)
                # A summary written since the last message has a newer id: skip past it.
                recent = await self.store.transcript(owner, conv_id, limit=5)
            except StorageUnavailable as exc:
                raise StorageError(_STORAGE_DOWN.format(action="retry")) from exc
            question = next(
                (t for t in reversed(recent) if not t.is_summary and not t.is_tool_note), None
            )
            if question is None or question.role != "user":
                raise NothingToRetry("There is no message to answer again yet: send one first.")
            context = await self.store.context(owner, conv_id, query=question.content)
            messages = render_messages(context)
            if context.turns and context.turns[-1].id == question.id:
                messages[-1] = {"role": "user", "content": question.content}  # unclipped
            else:
                messages.append({"role": "user", "content": question.content})
            degraded = degraded or context.degraded
            turn = ReplyState(owner, conv_id, admission, question.id, question.outcome)
            reply = self._reply(turn, persona, context, messages, degraded)
            async with contextlib.aclosing(reply):
                async for event in reply:
                    yield event
        finally:
            if not admission.handed_off:
                admission.release()

    async def _reply(
        self,
        turn: ReplyState,
        persona: _Persona,
        context: ContextWindow,
        messages: list[Message],
        degraded: bool,
    ) -> AsyncIterator[ChatEvent]:
        system = compose_system(persona.prompt, context)
        turn.measure(persona.prompt, context, messages)
        settings = Settings(temperature=persona.temperature)
        started = time.perf_counter()
        if getattr(self.model, "supports_tools", False):
            tools = self.toolbox(turn.owner, turn.conv_id)
            stream = self.model.stream(system, messages, settings, tools=tools)
        else:  # the offline model does without tools
            stream = self.model.stream(system, messages, settings)
        try:
            async with contextlib.aclosing(stream):
                async for chunk in stream:
                    if isinstance(chunk, ToolCall):
                        yield await self._tool_note(turn, chunk)
                        continue
                    if turn.first_token_ms is None:
                        turn.first_token_ms = ms_since(started)
                    turn.add(chunk)
                    if turn.progress_due():
                        # In the background: the stream never waits for the disk. The final
                        # save waits for it (reply_saving.save_reply).
                        turn.saving = self._spawn(save_progress(self.store, turn))
                    yield Delta(chunk)
            if not turn.text.strip():
                raise EmptyReply(
                    "The model finished without writing anything. Retry, or rephrase the message."
                )
        except (asyncio.CancelledError, GeneratorExit):
            # The app stopped the stream: keep what arrived. Shielded, so a second cancel
            # cannot lose the save.
            await self._shielded(self._finish(turn, stream.usage, started, "stopped", None))
            raise
        except AssistantError as exc:
            exc.partial = turn.text
            await self._shielded(self._finish(turn, stream.usage, started, "error", exc))
            raise
        except Exception as exc:
            # A bug or an unmapped library error: still keep the partial reply and the metrics.
            await self._shielded(self._finish(turn, stream.usage, started, "error", exc))
            raise

        notice: notes.OutcomeNote | None = None
        if stream.truncated:
            notice = notes.reply_cut(MAX_MESSAGE_CHARS)
        elif stream.finish_reason in ("MAX_TOKENS", "length"):
            notice = notes.MAX_TOKENS_NOTE
        saved = await self._shielded(
            self._finish(turn, stream.usage, started, "ok", None, notice=notice)
        )
        yield Done(
            reply=turn.text,
            model=self.model.name,
            status="incomplete" if notice else "ok",
            degraded=degraded or not saved,
            usage=stream.usage,
            saved=saved,
            notice=notice.text if notice else None,
        )

    async def _finish(
        self,
        turn: ReplyState,
        usage: Usage,
        started: float,
        status: Literal["ok", "error", "stopped"],
        error: BaseException | None,
        *,
        notice: notes.OutcomeNote | None = None,
    ) -> bool:
        """Save the reply (or what arrived of it) with its outcome, and schedule metrics and
        summarization. Returns whether the reply is stored."""
        saved = await save_reply(self.store, turn, *outcome_of(status, error, notice))
        metrics_status = status
        if isinstance(error, BlockedBySafety):
            metrics_status = "refused"
        metrics = TurnMetrics(
            model=self.model.model_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            latency_ms=ms_since(started),
            first_token_ms=turn.first_token_ms,
            status=metrics_status,  # type: ignore[arg-type]
            error_kind=error_kind(error),
            **turn.sizes,
            persona_id=turn.speaker,
        )
        turn.admission.handed_off = True
        self._spawn(self._record(turn.owner, turn.conv_id, metrics, turn.admission))
        if saved:
            self._spawn(self._summarize(turn.owner, turn.conv_id))
        return saved

    def toolbox(self, owner: str, conv_id: str) -> Toolbox:
        """The tools the model may call in a turn of this owner and conversation."""
        return Toolbox(self.store, owner, conv_id, self.search_memory, self.clock)

    async def _tool_note(self, turn: ReplyState, call: ToolCall) -> ToolUsed:
        """Save the call's note as a user-side turn (never as the assistant's words)."""
        await save_note(self.store, turn.owner, turn.conv_id, call.note)
        return ToolUsed(name=call.name, status=call.status, note=call.note)

    # -- the other actions --------------------------------------------------------------

    async def reset(self, owner: str, conv_id: str) -> ResetResult:
        """Forget the conversation: turns and summaries go, the conversation stays."""
        try:
            return await self.store.reset(owner, conv_id)
        except StorageUnavailable as exc:
            raise StorageError(_STORAGE_DOWN.format(action="reset")) from exc

    async def undo(self, owner: str, conv_id: str) -> list[Turn]:
        """Drop the last user message and what followed it; returns what went ([] if none)."""
        try:
            return await self.store.undo(owner, conv_id)
        except StorageUnavailable as exc:
            raise StorageError(_STORAGE_DOWN.format(action="undo")) from exc

    async def status(self, owner: str, conv_id: str) -> MemoryStatus:
        """For the badge (degraded instead of an error when storage fails)."""
        return await self.store.status(owner, conv_id)

    async def preview(self, owner: str, conv_id: str, draft: str | None = None) -> Preview:
        """What the model would receive with the next message, besides that message. Recalled
        turns depend on the next message: pass it as `draft` to see them (without a draft there
        are none). The offline model may clip this further to fit its context window."""
        persona, degraded = await self._persona_of(owner, conv_id)
        context = await self.store.context(owner, conv_id, query=draft or None)
        return Preview(
            system_prompt=persona.prompt,
            summary=context.summary.content if context.summary else None,
            turns=render_messages(context),
            chars=context.chars,
            budget=context.budget,
            system_instruction=compose_system(persona.prompt, context),
            model=self.model.name,
            persona_id=persona.id,
            persona_version=persona.version,
            degraded=degraded or context.degraded,
            not_shown=context.not_shown,
            recalled=[{"role": r.turn.role, "content": r.turn.content} for r in context.recalled],
        )

    # -- background work ----------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        # Keep a reference: the loop holds tasks weakly, an unreferenced one can vanish mid-run.
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _shielded(self, work: Coroutine[Any, Any, Any]) -> Any:
        """Run `work` to completion even if the caller is cancelled again meanwhile."""
        task = self._spawn(work)
        # Cancelled again while waiting: the work goes on as a tracked task; the caller gets
        # the CancelledError.
        return await asyncio.shield(task)

    async def _record(
        self, owner: str, conv_id: str, metrics: TurnMetrics, admission: Admission
    ) -> None:
        async with self._quota_lock(owner):
            try:
                await self.store.record_metrics(owner, conv_id, metrics)
            except Exception as exc:  # metrics must never hurt a turn
                log.warning("metrics not recorded: %s", type(exc).__name__)
            finally:
                admission.release()  # now counted by the database (or lost with it)

    async def _summarize(self, owner: str, conv_id: str) -> None:
        try:
            await self.store.summarize_if_needed(owner, conv_id)
        except Exception as exc:  # retried on the next turn
            log.warning("summarization failed: %s: %s", type(exc).__name__, exc)

    async def wait_background(self) -> None:
        """Wait until metrics and summarizations started so far are done (tests, shutdown)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def aclose(self) -> None:
        """Finish background work, then close the model client (the store belongs to whoever
        opened it: the Runtime)."""
        await self.wait_background()
        closer = getattr(self.model, "aclose", None)
        if closer is not None:
            await closer()

    # -- helpers ------------------------------------------------------------------------

    async def _admit(self, owner: str) -> Admission:
        """Let a model call through the quota (fails closed), or raise QuotaExceeded."""
        if self.quota_per_hour is not None:
            await self._check_quota(owner, self.quota_per_hour)
        return Admission(owner, self._pending)

    async def _check_quota(self, owner: str, quota: int) -> None:
        try:
            async with self._quota_lock(owner):
                recorded = await self.store.count_turn_requests(owner, since=self.clock() - 3600)
                recorded += self._pending[owner]
        except Exception as exc:
            # Fail closed: on a public deployment an unknown count must not mean "unlimited".
            log.warning("quota check failed: %s", type(exc).__name__)
            raise QuotaExceeded(
                "Mnemo cannot check your message quota right now, so it is not answering. "
                "Try again in a minute.",
                code="quota_unknown",
            ) from exc
        if recorded >= quota:
            raise QuotaExceeded(
                f"You have sent {quota} messages in the last hour, the limit on "
                "this server. Try again later, or run Mnemo yourself for no limit.",
                code="quota_hour",
                params={"quota": quota},
            )

    async def _persona_of(
        self, owner: str, conv_id: str, known: str | None = None
    ) -> tuple[_Persona, bool]:
        """The persona of the conversation, as this owner currently has it (edits apply from
        the next message; `known`: its persona id, just read). Returns (persona, degraded)."""
        degraded, persona_id = False, known or DEFAULT_PERSONA_ID
        if known is None and is_unsaved(conv_id):
            # Created while storage was down: it exists only on screen.
            degraded = True
        elif known is None:
            try:
                conversation = await self.store.get_conversation(owner, conv_id)
                persona_id = conversation.persona_id or DEFAULT_PERSONA_ID
            except StorageUnavailable:
                degraded = True
        return await asyncio.to_thread(self._load_persona, owner, persona_id), degraded

    def _load_persona(self, owner: str, persona_id: str) -> _Persona:
        if persona_id.startswith("roundtable:"):
            # A roundtable conversation: assistant.roundtable composes each speaker's prompt;
            # the plain preview beside it shows the default persona, without a warning.
            persona_id = DEFAULT_PERSONA_ID
        for candidate in dict.fromkeys((persona_id, DEFAULT_PERSONA_ID)):
            try:
                found = self.personas.get(owner, candidate)
                return _Persona(
                    id=candidate,
                    version=found.version,
                    prompt=build_system_prompt(found.persona),
                    temperature=found.persona.temperature,
                )
            except PersonaError as exc:
                log.warning("persona %r unavailable: %s", candidate, exc)
        return _Persona(DEFAULT_PERSONA_ID, None, FALLBACK_SYSTEM_PROMPT, None)


_STORAGE_DOWN = (
    "Memory storage is unavailable right now, so {action} cannot change the conversation. "
    "Try again in a moment."
)


def check_message(text: str) -> None:
    """Raise InvalidMessage (with memory's wording) unless memory would store `text`."""
    try:
        memory_check_message(text)
    except MemoryInvalidInput as exc:
        raise InvalidMessage(str(exc), **condition_of(exc)) from exc
