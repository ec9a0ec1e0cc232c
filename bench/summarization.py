"""Summarization: 100 conversations cross the threshold at once; commit time, readers meanwhile.

100 conversations hold 100 messages each; the 101st message arrives in all of them, then all
100 summarizations start together while a reader keeps loading other conversations' context.
Mnemo's summarizer (the built-in extractive one) runs outside the transaction, so its commit
time is measured from the summarizer's return to the call's return. The reference design does
everything inside one transaction on a new connection, so its whole call is its commit.
Designs alternate over batches of fresh conversations.
"""

from __future__ import annotations

import asyncio
import random
import time

from bench.baselines import ReferenceDesign
from bench.config import BenchConfig
from bench.datagen import Corpus, message_pool
from bench.harness import Samples, Table, ms, ratio, write_result

NAME = "summarization"
AT_ONCE = "all at once"
ONE_BY_ONE = "one at a time"


class TimedSummarizer:
    """Wraps a Summarizer and notes when each conversation's summary text was ready."""

    def __init__(self, inner):
        self.inner = inner
        self.ready_at: dict[str, float] = {}

    async def summarize(self, previous, turns, max_chars):
        text = await self.inner.summarize(previous, turns, max_chars)
        self.ready_at[turns[0].conversation_id] = time.perf_counter()
        return text


async def read_while(load, keys, until: asyncio.Event, rng, minimum: int = 0) -> Samples:
    """Load random contexts back to back until `until` is set (and at least `minimum`)."""
    samples = Samples("reader")
    while not until.is_set() or samples.count < minimum:
        key = rng.choice(keys)
        start = time.perf_counter()
        await load(key)
        samples.seconds.append(time.perf_counter() - start)
        await asyncio.sleep(0)  # let the summarizations progress between reads
    return samples


async def run(config: BenchConfig) -> None:
    from bench import mnemo_corpus
    from memory import ConversationStore, ExtractiveSummarizer

    batch = config.pick(100, 50, 5)
    batches = config.pick(3, 1, 1)  # "at once" batches; then one batch "one at a time"
    n_readers_convs = config.pick(1_000, 100, 10)
    idle_reads = config.pick(1_000, 200, 20)
    plan = [(AT_ONCE, b) for b in range(batches)] + [(ONE_BY_ONE, batches)]
    n_sum = batch * len(plan)
    corpus = Corpus(n_conversations=n_sum + n_readers_convs, messages_per_conversation=100)
    pool = message_pool(config.seed)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(config.seed)

    ids = await mnemo_corpus.bulk_load(
        work / "mnemo", corpus.n_conversations, corpus.rows(pool), start_ts=corpus.start_ts
    )
    owners = [mnemo_corpus.owner_of(i) for i in range(corpus.n_conversations)]
    reference = ReferenceDesign(work / "reference.db")
    reference.bulk_load((f"s{c}", r, t, ts) for c, _, r, t, ts in corpus.rows(pool))

    timed = TimedSummarizer(ExtractiveSummarizer())
    store = await ConversationStore.open(work / "mnemo", summarizer=timed)
    readers = list(range(n_sum, corpus.n_conversations))
    names = ("Mnemo", reference.name)
    keys = [(n, m) for m in (AT_ONCE, ONE_BY_ONE) for n in names]
    calls = {k: Samples(str(k)) for k in keys}
    commits = {k: Samples(str(k)) for k in keys}
    summarized = dict.fromkeys(keys, 0)
    wall = dict.fromkeys(keys, 0.0)
    during = {k: Samples(str(k)) for k in keys}
    idle = {n: Samples(n) for n in names}
    errors: dict[str, list[str]] = {n: [] for n in names}

    async def mnemo_one(i: int, mode: str) -> None:
        start = time.perf_counter()
        try:
            done = await store.summarize_if_needed(owners[i], ids[i])
        except Exception as exc:  # reported, never hidden
            errors["Mnemo"].append(f"{type(exc).__name__}: {exc}")
            done = False
        end = time.perf_counter()
        calls["Mnemo", mode].seconds.append(end - start)
        summarized["Mnemo", mode] += bool(done)
        if done and ids[i] in timed.ready_at:
            commits["Mnemo", mode].seconds.append(end - timed.ready_at[ids[i]])

    async def reference_one(i: int, mode: str) -> None:
        start = time.perf_counter()
        try:
            done = await reference.summarize_if_needed(f"s{i}")
        except Exception as exc:  # e.g. "database is locked" past the busy timeout
            errors[reference.name].append(f"{type(exc).__name__}: {exc}")
            done = False
        took = time.perf_counter() - start
        calls[reference.name, mode].seconds.append(took)
        summarized[reference.name, mode] += bool(done)
        if done:  # the whole call is one transaction on its own connection
            commits[reference.name, mode].seconds.append(took)

    async def mnemo_load(i: int) -> None:
        await store.context(owners[i], ids[i])

    async def reference_load(i: int) -> None:
        await reference.load(f"s{i}")

    designs = {"Mnemo": (mnemo_one, mnemo_load), reference.name: (reference_one, reference_load)}
    try:
        for mode, b in plan:
            convs = list(range(b * batch, (b + 1) * batch))
            # The 101st message arrives in every conversation of the batch.
            for i in convs:
                await store.append(owners[i], ids[i], "user", pool[i % len(pool)])
                await reference.append(f"s{i}", "user", pool[i % len(pool)])
            order = list(names) if b % 2 == 0 else list(reversed(names))
            for name in order:
                summarize_one, load = designs[name]
                if mode == AT_ONCE:
                    stop = asyncio.Event()
                    stop.set()
                    quiet = await read_while(load, readers, stop, rng, idle_reads // batches)
                    idle[name].seconds.extend(quiet.seconds)
                stop = asyncio.Event()
                reader = asyncio.create_task(read_while(load, readers, stop, rng, 1))
                start = time.perf_counter()
                if mode == AT_ONCE:
                    await asyncio.gather(*(summarize_one(i, mode) for i in convs))
                else:
                    for i in convs:
                        await summarize_one(i, mode)
                wall[name, mode] += time.perf_counter() - start
                stop.set()
                during[name, mode].seconds.extend((await reader).seconds)
        # What the model now sees of a summarized conversation: 1 summary + the recent messages.
        ctx = await store.context(owners[0], ids[0])
        shape = f"{'1 summary' if ctx.summary else 'no summary'} + {len(ctx.turns)} messages"
    finally:
        await store.close()

    table = Table(
        f"{batch} conversations crossing the threshold: all at once ({batches} batch(es)) and "
        "one at a time (1 batch); designs alternate; per-conversation times",
        ["design", "mode", "summarized", "all done s", "call p50 ms", "call p99 ms",
         "commit p50 ms", "commit p99 ms", "commit max ms"],
    )  # fmt: skip
    for name, mode in keys:
        c, k = calls[name, mode], commits[name, mode]
        n_total = batch * (batches if mode == AT_ONCE else 1)
        table.add(
            name, mode, f"{summarized[name, mode]}/{n_total}", f"{wall[name, mode]:.2f}",
            ms(c.p50), ms(c.p99), ms(k.p50), ms(k.p99), ms(max(k.seconds, default=float("nan"))),
        )  # fmt: skip
    readers_table = Table(
        "Other conversations' context load meanwhile (vs idle, same run)",
        ["design", "while", "reads", "p50 ms", "p99 ms", "p99 vs idle"],
    )
    for name in names:
        i = idle[name]
        readers_table.add(name, "idle", i.count, ms(i.p50), ms(i.p99), "1.0×")
        for mode in (AT_ONCE, ONE_BY_ONE):
            d = during[name, mode]
            readers_table.add(
                name, f"summarizing {mode}", d.count, ms(d.p50), ms(d.p99), ratio(d.p99, i.p99)
            )
    one_by_one = commits["Mnemo", ONE_BY_ONE]
    at_once = during["Mnemo", AT_ONCE]
    commit_max = max(one_by_one.seconds, default=float("nan"))
    notes = [
        "Targets: Mnemo commit ≤ 20 ms each; other conversations' context p99 ≤ 5 ms meanwhile.",
        f"Mnemo commit, one at a time: max {ms(commit_max)} ms "
        f"({'met' if commit_max <= 0.020 else 'missed'}); all at once: p99 "
        f"{ms(commits['Mnemo', AT_ONCE].p99)} ms (queueing included). Readers' p99 while {batch} "
        f"summarize at once: {ms(at_once.p99)} ms "
        f"({'met' if at_once.p99 <= 0.005 else 'missed'}). After summarizing, a conversation's "
        f"context holds {shape}.",
        "Mnemo 'call' = `summarize_if_needed()`: read the turns, run the built-in extractive "
        "summarizer, commit. 'commit' = from the summarizer returning to the call returning: "
        "the transaction that re-checks nothing changed, inserts the summary and marks the "
        "turns compacted, plus (all at once) waiting for the single writer and for the event "
        f"loop, busy with the other {batch - 1}. Reference design: the whole call is one "
        "transaction on a new connection (count, select the oldest rows, join, truncate to "
        "10,000 chars, insert, delete), so call = commit.",
    ]
    for name, errs in errors.items():
        if errs:
            notes.append(f"{name}: {len(errs)} summarizations failed; first error: {errs[0]}")
    write_result(NAME, "Summarization", [table, readers_table, *notes], out_dir=config.out_dir,
                 quick=config.quick)  # fmt: skip
