"""The roundtable turn: one user message answered by several personas in order, then a chair.

    async for event in runner.send(owner, conv_id, text, "erp_board"):
        Speaking(speaker, veto)   the next speaker starts (its bubble opens)
        Delta(text)               a chunk of that speaker's reply
        Spoke(speaker, done)      that reply is complete and saved (done: the chat turn's Done)
        RoundtableDone(...)       every speaker has answered

A conversation uses a roundtable when its persona id is `roundtable:<id>` (`ROUNDTABLE_PREFIX`),
so the choice is stored where the persona's is, with no schema change. The user's message is
saved once; each reply is saved with its speaker's persona id (memory's `turns.speaker`) and gets
its own metrics row (numbers only). Every speaker receives the conversation's memory, the
question and, in the user's message, what the earlier speakers said this turn; the chair goes
last with all of it. Before the vetoing member speaks, `personas.check_veto` decides from the
roundtable's metrics table whether it must veto; the member is then told to veto and the chair
that the veto stands. The model is never asked whether to veto, and whatever it writes, both
replies are saved with a ⛔ line saying the veto (outcome_notes.veto_line). Closing the stream
(Stop) saves the current speaker's partial reply and skips the rest; retry and undo act on the
whole turn because they already drop every reply after the last user message.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Literal

from memory import ContextWindow, StorageUnavailable
from memory.context import render_messages
from personas import (
    Persona,
    PersonaError,
    PersonaNotFound,
    Roundtable,
    RoundtableRegistry,
    VetoConfigError,
    VetoDecision,
    build_system_prompt,
    check_veto,
    fill_placeholders,
    label_of,
    missing_members,
    names_in,
)

from . import outcome_notes as notes
from .chat import (
    _STORAGE_DOWN,
    ChatService,
    Cleared,
    Delta,
    Done,
    _Persona,
    check_message,
    compose_system,
    is_reset_command,
)
from .errors import NothingToRetry, RoundtableNotFound, RoundtableUnavailable, StorageError
from .localized import Shown, localized_texts
from .models import Message
from .turn_state import ReplyState

ROUNDTABLE_PREFIX = "roundtable:"
EARLIER_HEADER = "What the board said so far this turn, in speaking order:"


def roundtable_ref(roundtable_id: str) -> str:
    """The persona id a conversation stores to use this roundtable."""
    return ROUNDTABLE_PREFIX + roundtable_id


def roundtable_id_of(persona_id: str | None) -> str | None:
    """The roundtable a conversation's persona id names, or None for a plain persona."""
    if persona_id and persona_id.startswith(ROUNDTABLE_PREFIX):
        return persona_id[len(ROUNDTABLE_PREFIX) :]
    return None


def unreadable_roundtable(roundtable_id: str, exc: PersonaError) -> RoundtableUnavailable:
    """The error for a roundtable the registry could not give: an unknown id is "not found"
    (a 404 over the API, like an unknown persona), anything else "unavailable"."""
    message = f"No roundtable {roundtable_id!r}: pick another one, or a single persona."
    if isinstance(exc, PersonaNotFound):
        return RoundtableNotFound(message)
    return RoundtableUnavailable(message)


@dataclass(frozen=True)
class Speaker(Shown):
    """One speaker of a roundtable turn, as the chat pane labels its bubble."""

    persona_id: str
    display_name: str
    avatar: str
    role: Literal["member", "chair"]
    index: int  # 0-based position in the speaking order
    total: int


@dataclass(frozen=True)
class Speaking:
    """The next speaker starts. `veto` is set for the vetoing member and the chair when the
    metrics table decided a veto."""

    speaker: Speaker
    veto: VetoDecision | None = None


@dataclass(frozen=True)
class Spoke:
    """A speaker's reply is complete and saved; `veto_line`: the ⛔ line the system stored
    with it (the vetoing member's and the chair's, when the table decided a veto)."""

    speaker: Speaker
    done: Done
    veto_line: notes.SystemLine | None = None


@dataclass(frozen=True)
class RoundtableDone:
    """Every speaker answered (a stopped or failed turn ends without this event)."""

    roundtable_id: str
    speakers: list[str]
    veto: VetoDecision | None
    model: str
    degraded: bool


RoundtableEvent = Speaking | Delta | Spoke | RoundtableDone | Cleared


@dataclass(frozen=True)
class Board:
    """A roundtable resolved for one owner: the document and every speaker's persona now."""

    roundtable: Roundtable
    version: int
    personas: dict[str, Persona]
    versions: dict[str, int]

    def speakers(self) -> list[Speaker]:
        order = self.roundtable.speakers
        return [
            Speaker(
                localized=localized_texts(self.personas[pid], ("display_name",)),
                persona_id=pid,
                display_name=self.personas[pid].display_name,
                avatar=self.personas[pid].avatar,
                role="chair" if pid == self.roundtable.chair else "member",
                index=i,
                total=len(order),
            )
            for i, pid in enumerate(order)
        ]

    def veto_line(self, veto: VetoDecision, role: str) -> notes.SystemLine:
        """The ⛔ line for a speaker's reply, with the vetoer's label in each page language
        (a reader sees the line in its own)."""
        vetoer = self.personas[veto.member]
        parameter = self.roundtable.veto.label_parameter  # type: ignore[union-attr]
        labels = {lang: label_of(vetoer, parameter, lang) for lang in notes.LINE_LANGUAGES}
        return notes.veto_line(veto, role, vetoer.display_name, labels)

    def decide_veto(self, question: str, language: str | None = None) -> VetoDecision | None:
        """The veto decision for `question` asked from a page in `language` (None: the
        roundtable has no veto rule); the label is in the turn's language."""
        rule = self.roundtable.veto
        if rule is None:
            return None
        try:
            return check_veto(question, self.roundtable, self.personas[rule.member], language)
        except VetoConfigError as exc:
            raise RoundtableUnavailable(str(exc)) from exc


@dataclass(frozen=True)
class MemberPreview:
    """What one speaker receives (the inspector shows it); earlier answers are placeholders."""

    speaker: Speaker
    system_instruction: str
    user_message: str
    veto: VetoDecision | None = None


@dataclass
class _Progress:
    answers: list[tuple[Speaker, str]] = field(default_factory=list)
    veto: VetoDecision | None = None
    degraded: bool = False


def _called(persona: Persona) -> str:
    """A speaker's name with what the pages show in other languages ("Sales Director
    (業務總監)"), so a reply in either language names the others as its readers see them."""
    others = [e.display_name for e in persona.i18n.values() if e.display_name]
    others = [n for n in dict.fromkeys(others) if n != persona.display_name]
    return persona.display_name + (f" ({' / '.join(others)})" if others else "")


def _names(board: Board, ids: list[str]) -> str:
    return " → ".join(_called(board.personas[p]) for p in ids)


# A board answers in one language: each persona's own reply language (the general manager's
# 繁體中文) would otherwise mix languages in one turn. The question's language is the one its
# asker reads, and every speaker can see it.
ONE_LANGUAGE = (
    "Reply in the language the user's question is written in, as every speaker of this "
    "roundtable does, so the board reads as one discussion."
)


def _metric_lines(board: Board, question: str) -> list[str]:
    # The veto's own matcher, so the figures shown and the veto always agree.
    named = [m for m in board.roundtable.metrics if names_in(question, m)]
    return [f"- {m.name}: gross margin {m.gross_margin_pct:g}%" for m in named]


def speaker_instructions(
    board: Board, speaker: Speaker, question: str, veto: VetoDecision | None
) -> str:
    """The roundtable section appended to a speaker's persona prompt."""
    rt = board.roundtable
    members = rt.members * rt.rounds
    chair = _called(board.personas[rt.chair])
    lines = [
        f"## Roundtable: {rt.display_name}",
        f"You are one of several speakers answering the same question in turn: "
        f"{_names(board, list(dict.fromkeys(members)))}, then {chair} concludes"
        + (f" ({rt.rounds} rounds)." if rt.rounds > 1 else "."),
        f"You speak as {_called(board.personas[speaker.persona_id])}, turn "
        f"{speaker.index + 1} of {speaker.total}. Answer for your own seat only; what earlier "
        "speakers said this turn is in the user's message.",
        ONE_LANGUAGE,
    ]
    if rt.rules:
        lines.append("Rules of this roundtable:\n" + "\n".join(f"- {r}" for r in rt.rules))
    figures = _metric_lines(board, question)
    if figures:
        lines.append("Business metrics for what the question names:\n" + "\n".join(figures))
    rule = rt.veto
    if rule is not None and speaker.persona_id == rule.member and veto is not None:
        lines.append(_vetoer_instruction(veto))
    if speaker.role == "chair":
        lines.append(_chair_instruction(board, veto))
    return "\n\n".join(lines)


def _vetoer_instruction(veto: VetoDecision) -> str:
    threshold = f"{veto.threshold_pct:g}%"
    if veto.vetoed:
        return (
            f"VETO — decided by the business-metrics table, not open to discussion: "
            f"{veto.reason()}, below your threshold of {threshold}. You must veto this "
            f'proposal. The last line of your answer must start with "{veto.label}:" followed '
            "by the margin and what would have to change to reach the threshold."
        )
    if veto.named:
        return (
            f"The business-metrics table puts every entry the question names at or above your "
            f"threshold of {threshold}: it gives no ground for a veto. Do not veto on margin."
        )
    return (
        f"The question names no entry of the business-metrics table; judge the margin from "
        f"the figures given, against your threshold of {threshold}."
    )


def _chair_instruction(board: Board, veto: VetoDecision | None) -> str:
    text = (
        "You chair the roundtable and speak last: weigh what every speaker said, name the real "
        "conflicts, and decide."
    )
    label = board.personas[board.roundtable.chair].conclusion_label
    if label:
        label = fill_placeholders(label, board.personas[board.roundtable.chair].parameters)
        text += f' Your last line starts with "{label}:".'
    if veto is not None and veto.vetoed:
        vetoer = _called(board.personas[veto.member])
        text += (
            f'\n{vetoer} vetoed this proposal ("{veto.label}": {veto.reason()}; threshold '
            f"{veto.threshold_pct:g}%). The veto stands: you must not approve the proposal, "
            "neither fully nor with conditions. Decide to reject it, or to put it on hold until "
            "the margin reaches the threshold, and say what would have to change."
        )
    return text


def speaker_message(question: str, answers: list[tuple[Speaker, str]]) -> str:
    """The user's message as a speaker receives it: the question, then earlier answers."""
    if not answers:
        return question
    earlier = "\n\n".join(f"### {s.display_name} ({s.persona_id})\n{text}" for s, text in answers)
    return f"{question}\n\n---\n{EARLIER_HEADER}\n\n{earlier}"


class RoundtableRunner:
    """Runs roundtable turns on the chat service's store, model, quota and metrics."""

    def __init__(self, service: ChatService, roundtables: RoundtableRegistry) -> None:
        self.service = service
        self.roundtables = roundtables

    def _resolve(self, owner: str, roundtable_id: str) -> Board:
        try:
            found = self.roundtables.get(owner, roundtable_id)
        except PersonaError as exc:
            raise unreadable_roundtable(roundtable_id, exc) from exc
        board: Roundtable = found.persona  # type: ignore[assignment]
        known = {p.id: p for p in self.service.personas.list(owner)}
        missing = missing_members(board, known)
        if missing:
            raise RoundtableUnavailable(
                f"Roundtable {board.display_name!r} names personas you do not have: "
                f"{', '.join(missing)}. Edit the roundtable's members, or add those personas."
            )
        ids = [*board.members, board.chair]
        return Board(
            board,
            found.version,
            {p: known[p].persona for p in ids},
            {p: known[p].version for p in ids},
        )

    async def board(self, owner: str, roundtable_id: str) -> Board:
        """The roundtable and its speakers' personas as this owner has them now (edits apply
        from the next message)."""
        return await asyncio.to_thread(self._resolve, owner, roundtable_id)

    async def send(
        self, owner: str, conv_id: str, text: str, roundtable_id: str, language: str | None = None
    ) -> AsyncIterator[RoundtableEvent]:
        """Answer `text` with every speaker in order; see the module docstring. `language` is
        the asker's page's (None: the question's alone), for the veto label."""
        if is_reset_command(text):
            yield Cleared(await self.service.reset(owner, conv_id))
            return
        check_message(text)
        board = await self.board(owner, roundtable_id)
        store = self.service.store
        context = await store.context(owner, conv_id, query=text)
        saved = await store.append(owner, conv_id, "user", text)
        degraded = context.degraded or not saved.saved
        run = self._run(owner, conv_id, board, text, context, degraded, language)
        async with contextlib.aclosing(run):
            async for event in run:
                yield event

    async def retry(
        self, owner: str, conv_id: str, roundtable_id: str, language: str | None = None
    ) -> AsyncIterator[RoundtableEvent]:
        """Answer the last user message again with every speaker (all replies are dropped)."""
        board = await self.board(owner, roundtable_id)
        store = self.service.store
        try:
            await store.drop_last_reply(owner, conv_id)
            recent = await store.transcript(owner, conv_id, limit=5)
        except StorageUnavailable as exc:
            raise StorageError(_STORAGE_DOWN.format(action="retry")) from exc
        question = next((t for t in reversed(recent) if not t.is_summary), None)
        if question is None or question.role != "user":
            raise NothingToRetry("There is no message to answer again yet: send one first.")
        context = await store.context(owner, conv_id, query=question.content)
        if context.turns and context.turns[-1].id == question.id:
            context = _without_last(context)  # the question is sent whole, by speaker_message
        run = self._run(
            owner, conv_id, board, question.content, context, context.degraded, language
        )
        async with contextlib.aclosing(run):
            async for event in run:
                yield event

    async def _run(
        self,
        owner: str,
        conv_id: str,
        board: Board,
        question: str,
        context: ContextWindow,
        degraded: bool,
        language: str | None,
    ) -> AsyncIterator[RoundtableEvent]:
        progress = _Progress(degraded=degraded)
        rule = board.roundtable.veto
        for speaker in board.speakers():
            if rule is not None and speaker.persona_id == rule.member and progress.veto is None:
                progress.veto = board.decide_veto(question, language)  # before it speaks
            told = speaker.role == "chair" or (
                rule is not None and speaker.persona_id == rule.member
            )
            vetoed = progress.veto if progress.veto is not None and progress.veto.vetoed else None
            yield Speaking(speaker, vetoed if told else None)
            done: Done | None = None
            line = None
            if told and vetoed is not None:  # the ⛔ line the system writes on this reply
                line = board.veto_line(vetoed, speaker.role)
            speech = self._speak(owner, conv_id, board, speaker, question, context, progress, line)
            # aclosing: Stop closes this generator at a yield; the speaker's partial reply is
            # saved now and no later speaker starts.
            async with contextlib.aclosing(speech):
                async for event in speech:
                    if isinstance(event, Done):
                        done = event
                    else:
                        yield event
            assert done is not None
            progress.answers.append((speaker, done.reply))
            progress.degraded = progress.degraded or done.degraded
            yield Spoke(speaker, done, line)
        yield RoundtableDone(
            roundtable_id=board.roundtable.id,
            speakers=[s.persona_id for s, _ in progress.answers],
            veto=progress.veto,
            model=self.service.model.name,
            degraded=progress.degraded,
        )

    async def _speak(
        self,
        owner: str,
        conv_id: str,
        board: Board,
        speaker: Speaker,
        question: str,
        context: ContextWindow,
        progress: _Progress,
        line: notes.SystemLine | None = None,
    ) -> AsyncIterator[Delta | Done]:
        persona = board.personas[speaker.persona_id]
        prompt = (
            build_system_prompt(persona, own_language=False)
            + "\n\n"
            + speaker_instructions(board, speaker, question, progress.veto)
        )
        messages: list[Message] = [
            *render_messages(context),
            {"role": "user", "content": speaker_message(question, progress.answers)},
        ]
        admission = await self.service._admit(owner)  # every model call counts to the quota
        try:
            turn = ReplyState(owner, conv_id, admission, speaker=speaker.persona_id, veto_line=line)
            chosen = _Persona(
                speaker.persona_id,
                board.versions[speaker.persona_id],
                prompt,
                persona.temperature,
            )
            reply = self.service._reply(turn, chosen, context, messages, progress.degraded)
            async with contextlib.aclosing(reply):
                async for event in reply:
                    yield event  # type: ignore[misc]
        finally:
            if not admission.handed_off:
                admission.release()

    async def preview(
        self,
        owner: str,
        conv_id: str,
        roundtable_id: str,
        draft: str | None = None,
        language: str | None = None,
    ) -> list[MemberPreview]:
        """What each speaker would receive with the next message (`draft`; the veto and the
        metrics lines depend on it). Earlier answers are shown as placeholders."""
        board = await self.board(owner, roundtable_id)
        context = await self.service.store.context(owner, conv_id, query=draft or None)
        question = draft or "(your next message)"
        veto = board.decide_veto(question, language) if draft else None
        rule = board.roundtable.veto
        shown: list[MemberPreview] = []
        answers: list[tuple[Speaker, str]] = []
        for speaker in board.speakers():
            persona = board.personas[speaker.persona_id]
            told = speaker.role == "chair" or (
                rule is not None and speaker.persona_id == rule.member
            )
            prompt = build_system_prompt(persona, own_language=False) + "\n\n"
            prompt += speaker_instructions(board, speaker, question, veto if told else None)
            shown.append(
                MemberPreview(
                    speaker,
                    compose_system(prompt, context),
                    speaker_message(question, answers),
                    veto if told and veto is not None and veto.vetoed else None,
                )
            )
            answers.append((speaker, f"({speaker.display_name}'s answer this turn)"))
        return shown


def _without_last(context: ContextWindow) -> ContextWindow:
    return replace(context, turns=context.turns[:-1])
