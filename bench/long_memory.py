"""Long memory: planted facts asked back at the end of long, multi-session conversations.

The conversations (bench/long_conversations.py) are >= 600 messages of everyday chat in
sessions days apart, English and Traditional Chinese, with facts asked back in five hard ways:
paraphrase (no shared word), list (spread over 3-5 turns), when (relative date, answer is the
absolute date), updated (the newer value) and distractor (other turns share the question's
words). They are generated from the seed and checked in code; no data files.

A question counts as found when every gold term is in what the model receives with it,
the question itself left out (Latin words whole and case-insensitive; Chinese and dates as
written; a date in any unambiguous form, see long_conversations.date_forms). What each
strategy sends, counted in characters per request:

- full history: the persona's system prompt, every message, the question. Messages carry a
  date line whenever the date changes and relative dates annotated with the absolute date
  ("yesterday (2026-03-14)"): the reference ceiling, everything shown as well as it can be.
- drop-oldest at Mnemo's budget: the same rendering, but only the newest messages that fit
  Mnemo's `history_chars`, each clipped to its `message_chars` (bench/baselines.py).
- SQLite reference design: its 10,000-character concatenate-and-truncate summary and newest
  20 rows, as published (no dates), with the persona prompt and the question.
- Mnemo: the real thing. The store is filled through its public API with each message's own
  timestamp (the store's clock is set to it, and `created_at=` is passed when append takes
  it), summarized after every message with the built-in summarizer as the app does, and what
  is sent is `ChatService.preview(draft=question)`: the persona prompt and memory note exactly
  as composed for the model, the recent turns, then the question, under the default
  MemoryPolicy. Once per conversation the question is really sent, to a model that records
  its input, and compared with the preview.
- Mnemo previous release: the same, with memory/, assistant/ and personas/ from commit
  PREVIOUS_RELEASE, checked out in a temporary `git worktree` and run in a subprocess, so the
  comparison survives changes to memory/.

Run: `python -m bench --only long_memory` (full), `--quick` (seconds), or
`python -m bench.long_memory --size quick`.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.baselines import DropOldest, ReferenceDesign, sqlite_timestamp
from bench.config import SIZES, BenchConfig
from bench.harness import Table, write_result
from bench.long_conversations import (
    KINDS,
    LongConversation,
    Message,
    Question,
    contains,
    corpus,
    found,
    render_transcript,
)

NAME = "long_memory"
PREVIOUS_RELEASE = "9e3148c"
OWNER = "long-memory-bench"
REPO = Path(__file__).resolve().parents[1]
ZH_COLUMN = "Traditional Chinese"
FULL, DROP, REFERENCE, MNEMO = (
    "full history",
    "drop-oldest at Mnemo's budget",
    "SQLite reference design",
    "Mnemo",
)
PREVIOUS = f"Mnemo previous release ({PREVIOUS_RELEASE})"
TARGET_SHARE, TARGET_CHARS = 0.90, 0.15


def sizes(config: BenchConfig) -> dict[str, int]:
    """Conversations, messages per English conversation (Chinese ones have twice as many),
    questions per kind per conversation."""
    return {
        "conversations": config.pick(12, 2, 2),
        "messages": config.pick(720, 600, 160),
        "per_kind": config.pick(4, 3, 2),
    }


def conversations_for(config: BenchConfig) -> list[LongConversation]:
    s = sizes(config)
    return corpus(config.seed, s["conversations"], s["messages"], s["per_kind"])


@dataclass(frozen=True)
class Outcome:
    """One question under one strategy."""

    strategy: str
    question: str
    kind: str
    language: str
    found: bool
    chars: int  # characters of the whole request: system prompt, history, question
    evidence_shown: int  # evidence turns whose text is in the request
    evidence: int
    stale: bool = False  # "updated": the older value is there and the newer is not


def outcome(
    strategy: str, conv: LongConversation, q: Question, history: str, chars: int
) -> Outcome:
    """Score `history` (everything the model receives except the question) for `q`."""
    hit = found(q, history)
    # A summary may keep a turn's sentences apart: its opening is what marks it as shown.
    shown = sum(conv.messages[i].content[:40] in history for i in q.evidence)
    stale = bool(q.stale) and not hit and all(contains(history, s) for s in q.stale)
    return Outcome(strategy, q.id, q.kind, q.language, hit, chars, shown, len(q.evidence), stale)


def persona_prompts(data_dir: Path) -> dict[str, str]:
    """The composed system prompt of each persona the conversations use."""
    from personas import PersonaRegistry, build_system_prompt

    registry = PersonaRegistry(data_dir=data_dir)
    return {
        pid: build_system_prompt(registry.get(OWNER, pid).persona)
        for pid in ("assistant", "assistant_zh_tw")
    }


def check_prompts(prompts: dict[str, str], conversations: list[LongConversation]) -> None:
    """No answer may be in a persona prompt: it would be found without any memory."""
    for conv in conversations:
        for q in conv.questions:
            if found(q, prompts[conv.persona_id]):
                raise AssertionError(f"{q.id}: the gold answer is in the persona prompt")


# -- the reference designs ------------------------------------------------------------------


def measure_full_and_drop(
    conversations: list[LongConversation], prompts: dict[str, str], history_chars: int,
    message_chars: int,
) -> list[Outcome]:  # fmt: skip
    window = DropOldest(rounds=10**6, message_chars=message_chars, total_chars=history_chars)
    out = []
    for conv in conversations:
        prompt = prompts[conv.persona_id]
        messages = list(conv.messages)
        full = prompt + "\n\n" + render_transcript(messages, conv.language)
        kept = window.context([(m.role, m.content) for m in messages])
        tail = [
            Message(m.role, content, m.created_at)
            for m, (_, content) in zip(messages[len(messages) - len(kept) :], kept, strict=True)
        ]
        dropped = prompt + "\n\n" + render_transcript(tail, conv.language)
        for q in conv.questions:
            out.append(outcome(FULL, conv, q, full, len(full) + len(q.text)))
            out.append(outcome(DROP, conv, q, dropped, len(dropped) + len(q.text)))
    return out


async def measure_reference(
    conversations: list[LongConversation], prompts: dict[str, str], work: Path
) -> list[Outcome]:
    """The design opens a connection (and commits, with an fsync) per call: the
    conversations, each in its own file, are written concurrently so the waits overlap."""

    async def one(conv: LongConversation) -> list[Outcome]:
        design = ReferenceDesign(work / f"reference-{conv.id}.db")
        design.create_schema()
        for m in conv.messages:
            await design.append(conv.id, m.role, m.content, sqlite_timestamp(m.created_at))
            await design.summarize_if_needed(conv.id)
        rows = await design.load_with_summary(conv.id)
        history = prompts[conv.persona_id] + "\n\n"
        history += "\n".join(f"{r['role']}: {r['content']}" for r in rows)
        return [outcome(REFERENCE, conv, q, history, len(history) + len(q.text))
                for q in conv.questions]  # fmt: skip

    return [o for part in await asyncio.gather(*map(one, conversations)) for o in part]


# -- Mnemo ----------------------------------------------------------------------------------


class SimulatedClock:
    """The store's clock, set to each message's own time while the conversation is written."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordingModel:
    """A chat model (assistant.models.ChatModel) that keeps what it was sent and replies at once."""

    name = "recording fake model"
    model_id = "recording-fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[dict[str, str]]]] = []

    def stream(self, system, messages, settings):
        from assistant.models import ReplyStream, Usage

        self.calls.append((system, [dict(m) for m in messages]))

        async def produce(stream):
            stream.usage = Usage(input_tokens=0, output_tokens=1)
            yield "Noted."
            stream.finish_reason = "STOP"

        return ReplyStream(produce)


def _request_text(system: str, turns: list[dict[str, str]]) -> str:
    return "\n\n".join([system, *(t["content"] for t in turns)])


async def measure_mnemo(
    conversations: list[LongConversation], work: Path, label: str = MNEMO
) -> tuple[list[Outcome], dict[str, object]]:
    """Fill a real store through its public API, then score what the service would send."""
    import memory
    from assistant.chat import ChatService
    from assistant.summarizer import summarizer_for
    from memory import ConversationStore
    from personas import PersonaRegistry

    clock = SimulatedClock()
    model = RecordingModel()
    # As the app's Runtime opens it: its summarizer for this (offline) model, and the embedder
    # the app would pick, once memory takes one.
    extra, embedder = _app_embedder(ConversationStore.open)
    store = await ConversationStore.open(
        work / "mnemo.db", clock=clock, summarizer=summarizer_for(model), **extra
    )
    service = ChatService(store, PersonaRegistry(data_dir=work), model, clock=clock)
    # Until append takes created_at, the clock alone dates each message (same effect, through
    # the public open(clock=) parameter); once it does, the timestamp is passed too.
    dated = "created_at" in inspect.signature(store.append).parameters
    render_memory = getattr(memory, "render_memory", None)  # memory's one renderer, if any
    out: list[Outcome] = []
    info: dict[str, object] = {"created_at": dated, "sends_checked": 0, "sends_matched": 0,
                               "rendered": 0, "rendered_sent": 0, "embedder": embedder}  # fmt: skip
    try:
        for conv in conversations:
            c = await store.create_conversation(OWNER, persona_id=conv.persona_id)
            for m in conv.messages:
                clock.now = m.created_at
                extra = {"created_at": m.created_at} if dated else {}
                await store.append(OWNER, c.id, m.role, m.content, **extra)
                await store.summarize_if_needed(OWNER, c.id)
            # Vectors are written after their turns (memory/vector_fill.py); in the app the
            # questions come long after, when the background has caught up.
            if hasattr(store, "flush_vectors"):
                await store.flush_vectors()
            clock.now = conv.asked_at
            for n, q in enumerate(conv.questions):
                preview = await service.preview(OWNER, c.id, draft=q.text)
                history = _request_text(preview.system_instruction, preview.turns)
                if render_memory is not None:
                    note = render_memory(await store.context(OWNER, c.id, query=q.text))
                    info["rendered"] = int(info["rendered"]) + 1
                    sent = note is None or note in preview.system_instruction
                    info["rendered_sent"] = int(info["rendered_sent"]) + sent
                if n == len(conv.questions) - 1:
                    history = await _check_send(service, model, c.id, q, preview, history, info)
                chars = len(history) - 2 * len(preview.turns) + len(q.text)
                out.append(outcome(label, conv, q, history, chars))
        await service.wait_background()
    finally:
        await store.close()
    return out, info


def _app_embedder(open_store) -> tuple[dict[str, object], str]:
    """({"embedder": the app's default} or {}, its name) for ConversationStore.open."""
    if "embedder" not in inspect.signature(open_store).parameters:
        return {}, "none (this memory/ takes no embedder)"
    try:
        from assistant.embedding import select_embedder
    except ImportError:
        return {}, "none (assistant/ has no embedder)"
    embedder = select_embedder()
    return {"embedder": embedder}, getattr(embedder, "name", "none") if embedder else "none"


async def _check_send(service, model, conv_id, q, preview, history, info) -> str:
    """Send the question for real; score what the model got, and note if the preview lied."""
    async for _ in service.send(OWNER, conv_id, q.text):
        pass
    system, messages = model.calls[-1]
    info["sends_checked"] = int(info["sends_checked"]) + 1
    expected = [*preview.turns, {"role": "user", "content": q.text}]
    if system == preview.system_instruction and messages == expected:
        info["sends_matched"] = int(info["sends_matched"]) + 1
        return history
    return _request_text(system, messages[:-1])


# -- the previous release, in its own process ------------------------------------------------


def measure_previous_release(config: BenchConfig) -> tuple[list[Outcome], str]:
    """Run measure_mnemo with memory/, assistant/, personas/ from PREVIOUS_RELEASE; returns
    (outcomes, a note on how it ran) or ([], why it could not run)."""
    probe = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS_RELEASE}^{{commit}}"],
        capture_output=True, text=True,
    )  # fmt: skip
    if probe.returncode != 0:
        return [], f"not measured: commit {PREVIOUS_RELEASE} is not in this checkout (shallow?)"
    with tempfile.TemporaryDirectory(prefix="mnemo-previous-", dir=config.work_dir) as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(tree),
             PREVIOUS_RELEASE],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        try:
            result_file = Path(tmp) / "outcomes.json"
            run = subprocess.run(
                [sys.executable, "-m", "bench.long_memory", "--size", config.size,
                 "--seed", str(config.seed), "--memory-from", str(tree),
                 "--work-dir", tmp, "--outcomes", str(result_file)],
                cwd=REPO, capture_output=True, text=True, timeout=1_800,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )  # fmt: skip
            if run.returncode != 0:
                return [], f"not measured, it failed: {run.stderr.strip()[-500:]}"
            result = json.loads(result_file.read_text(encoding="utf-8"))
            return [Outcome(**r) for r in result["outcomes"]], _run_note(result["info"])
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                capture_output=True,
            )  # fmt: skip


def _worker(args: argparse.Namespace) -> int:
    """The subprocess side: import memory/ from --memory-from, measure, write the outcomes."""
    tree = Path(args.memory_from).resolve()
    sys.path.insert(0, str(tree))
    import memory

    if not Path(memory.__file__).resolve().is_relative_to(tree):
        print(f"memory was imported from {memory.__file__}, not {tree}", file=sys.stderr)
        return 2
    config = BenchConfig(size=args.size, seed=args.seed, work_dir=Path(args.work_dir))
    work = Path(tempfile.mkdtemp(prefix="previous-", dir=args.work_dir))
    outcomes, info = asyncio.run(measure_mnemo(conversations_for(config), work, PREVIOUS))
    result = {"outcomes": [asdict(o) for o in outcomes], "info": info}
    Path(args.outcomes).write_text(json.dumps(result), encoding="utf-8")
    return 0


def _run_note(info: dict[str, object]) -> str:
    """How a Mnemo run went: the preview check, how messages got their dates, the embedder."""
    note = (
        f"real sends checked against the preview: {info['sends_matched']}/"
        f"{info['sends_checked']} identical; message dates: "
        + ("append(created_at=)" if info["created_at"] else "the store's clock (append takes "
           "no created_at)")
        + f"; embedder: {info['embedder']}"
    )  # fmt: skip
    if info["rendered"]:
        note += (f"; memory.render_memory's note is in the sent system prompt in "
                 f"{info['rendered_sent']}/{info['rendered']} requests")  # fmt: skip
    return note + "."


# -- the report -----------------------------------------------------------------------------


def column_of(o: Outcome) -> str:
    return ZH_COLUMN if o.language != "en" else o.kind


def summarize(outcomes: list[Outcome]) -> dict[str, dict[str, list[Outcome]]]:
    """strategy -> column (each English kind, Traditional Chinese, "overall") -> outcomes."""
    table: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        table[o.strategy][column_of(o)].append(o)
        table[o.strategy]["overall"].append(o)
    return table


def share(rows: list[Outcome]) -> float:
    return sum(o.found for o in rows) / len(rows) if rows else float("nan")


def mean_chars(rows: list[Outcome]) -> float:
    return sum(o.chars for o in rows) / len(rows) if rows else float("nan")


def _cell(rows: list[Outcome]) -> str:
    return f"{sum(o.found for o in rows)}/{len(rows)} ({share(rows):.0%})" if rows else "—"


def report(outcomes: list[Outcome], notes: list[str], config: BenchConfig) -> Path:
    s = summarize(outcomes)
    columns = [*KINDS, ZH_COLUMN, "overall"]
    order = [n for n in (FULL, PREVIOUS, MNEMO, DROP, REFERENCE) if n in s]
    full = s[FULL]
    n_conv = len({o.question.split("/")[0] for o in outcomes})
    n_q = len(full["overall"])
    found_table = Table(
        f"Questions whose gold answer is in what the model receives ({n_conv} conversations, "
        f"{n_q} questions; the English kinds, and every Traditional Chinese question)",
        ["strategy", *columns, "chars per request", "chars vs full history"],
    )
    for name in order:
        size = mean_chars(s[name]["overall"])
        found_table.add(
            name, *[_cell(s[name][c]) for c in columns], f"{size:,.0f}",
            f"{size / mean_chars(full['overall']):.1%}",
        )  # fmt: skip
    zh = Table(
        "Traditional Chinese questions by kind",
        ["strategy", *KINDS],
    )
    for name in order:
        rows = [o for o in s[name]["overall"] if o.language != "en"]
        zh.add(name, *[_cell([o for o in rows if o.kind == k]) for k in KINDS])
    target = Table(
        f"Against the target: found as a share of what full history finds (≥ {TARGET_SHARE:.0%})"
        f", at ≤ {TARGET_CHARS:.0%} of its characters",
        ["strategy", *columns, "chars vs full history", "met"],
    )
    for name in (n for n in order if n.startswith("Mnemo")):
        ratios = [share(s[name][c]) / share(full[c]) if share(full[c]) else float("nan")
                  for c in columns]  # fmt: skip
        size = mean_chars(s[name]["overall"]) / mean_chars(full["overall"])
        met = all(r >= TARGET_SHARE for r in ratios) and size <= TARGET_CHARS
        target.add(name, *[f"{r:.0%}" for r in ratios], f"{size:.1%}", "yes" if met else "no")
    diagnosis = Table(
        "Why Mnemo misses: evidence turns shown in the request, per kind (a list needs all "
        'of its turns; a "when" turn shown without its date still misses)',
        ["strategy", *columns, "updated: only the older value"],
    )
    for name in (n for n in order if n.startswith("Mnemo")):
        cells = []
        for c in columns:
            rows = s[name][c]
            shown, total = sum(o.evidence_shown for o in rows), sum(o.evidence for o in rows)
            cells.append(f"{shown}/{total}")
        stale = [o for o in s[name]["overall"] if o.kind == "updated"]
        diagnosis.add(name, *cells, f"{sum(o.stale for o in stale)}/{len(stale)}")
    return write_result(NAME, "Long memory", [found_table, target, diagnosis, zh, *notes],
                        out_dir=config.out_dir, quick=config.quick)  # fmt: skip


async def measure(config: BenchConfig) -> tuple[list[Outcome], list[str]]:
    """Every strategy on the same conversations; the outcomes and the notes for the report."""
    from memory import MemoryPolicy

    conversations = conversations_for(config)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)
    prompts = persona_prompts(work)
    check_prompts(prompts, conversations)
    policy = MemoryPolicy()
    started = time.perf_counter()
    outcomes = measure_full_and_drop(
        conversations, prompts, policy.history_chars, policy.message_chars
    )
    if config.size == "full":  # slow by design (see measure_reference), and finds ~nothing
        outcomes += await measure_reference(conversations, prompts, work)
    print(f"reference designs: {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    mnemo, info = await measure_mnemo(conversations, work / "mnemo")
    outcomes += mnemo
    print(f"Mnemo: {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    previous, previous_note = await asyncio.to_thread(measure_previous_release, config)
    outcomes += previous
    print(f"{PREVIOUS}: {time.perf_counter() - started:.1f} s", flush=True)
    s = sizes(config)
    notes = [
        f"{s['conversations']} conversations (every third one from the second in Traditional "
        f"Chinese), {s['messages']} messages each in English and {2 * s['messages']} in "
        f"Chinese, sessions 2-9 days apart; up to {s['per_kind']} questions of each kind per "
        f"conversation, seed {config.seed}. Generated and checked by "
        "bench/long_conversations.py: a paraphrase shares no content word (Porter stems) or "
        "Chinese bigram with its fact, no answer appears outside its evidence turns, nothing "
        "is planted in the last 70 messages.",
        "Found: every gold term is in the request, the question left out. A date is the day "
        "the relative date means, in UTC, from the turn's own timestamp (\"last week\": the "
        "Monday of that week; \"a week ago\": seven days before), written as 2026-03-14, "
        "14 March 2026, March 14, 2026 or 2026年3月14日. Updated facts count only with the "
        "newer value; with both, the order and dates tell which is newer.",
        f"Mnemo: default MemoryPolicy (history_chars {policy.history_chars:,}, recall on, "
        "the question as the query), the app's summarizer for an offline model (extractive) "
        "after every message; the request is ChatService.preview(draft=question); "
        + _run_note(info),
        f"{PREVIOUS}: {previous_note}",
    ]  # fmt: skip
    if config.size != "full":
        notes.append(f"{REFERENCE}: measured at full size only (a connection and an fsync per "
                     "call make it slow; it finds almost nothing here).")  # fmt: skip
    return outcomes, notes


async def run(config: BenchConfig) -> None:
    outcomes, notes = await measure(config)
    report(outcomes, notes, config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.long_memory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument("--seed", type=int, default=BenchConfig.seed)
    parser.add_argument("--out", type=Path, help="where the table goes (default bench/results/)")
    parser.add_argument("--work-dir", default=None, help="scratch dir (default: a temp dir)")
    # Internal: the previous-release subprocess.
    parser.add_argument("--memory-from", help=argparse.SUPPRESS)
    parser.add_argument("--outcomes", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_from:
        return _worker(args)
    from bench.harness import RESULTS_DIR

    out = args.out or (RESULTS_DIR if args.size == "full" else RESULTS_DIR / "quick")
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir=args.work_dir) as work:
        config = BenchConfig(size=args.size, out_dir=out, work_dir=Path(work), seed=args.seed)
        asyncio.run(run(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
