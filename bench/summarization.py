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
    batches = config.pick(3, 1, 1)
    n_readers_convs = config.pick(1_000, 100, 10)
    idle_reads = config.pick(1_000, 200, 20)
    n_sum = batch * batches
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

    async def mnemo_load(i):
        await store.context(owners[i], ids[i])

    async def reference_load(i):
        await reference.load(f"s{i}")

    calls = {"Mnemo": Samples("Mnemo"), reference.name: Samples(reference.name)}
    commits = Samples("Mnemo commit")
    summarized = {"Mnemo": 0, reference.name: 0}
    errors: dict[str, list[str]] = {"Mnemo": [], reference.name: []}
    wall = {"Mnemo": 0.0, reference.name: 0.0}
    idle = {"Mnemo": Samples("idle"), reference.name: Samples("idle")}
    during = {"Mnemo": Samples("during"), reference.name: Samples("during")}

    async def mnemo_batch(convs):
        ends: dict[str, float] = {}

        async def one(i):
            start = time.perf_counter()
            try:
                done = await store.summarize_if_needed(owners[i], ids[i])
            except Exception as exc:  # reported, never hidden
                errors["Mnemo"].append(f"{type(exc).__name__}: {exc}")
                done = False
            ends[ids[i]] = time.perf_counter()
            calls["Mnemo"].seconds.append(ends[ids[i]] - start)
            summarized["Mnemo"] += bool(done)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in convs))
        wall["Mnemo"] += time.perf_counter() - start
        for i in convs:
            if ids[i] in timed.ready_at:
                commits.seconds.append(ends[ids[i]] - timed.ready_at[ids[i]])

    async def reference_batch(convs):
        async def one(i):
            start = time.perf_counter()
            try:
                done = await reference.summarize_if_needed(f"s{i}")
            except Exception as exc:  # e.g. "database is locked" past the busy timeout
                errors[reference.name].append(f"{type(exc).__name__}: {exc}")
                done = False
            calls[reference.name].seconds.append(time.perf_counter() - start)
            summarized[reference.name] += bool(done)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in convs))
        wall[reference.name] += time.perf_counter() - start

    designs = {
        "Mnemo": (mnemo_batch, mnemo_load),
        reference.name: (reference_batch, reference_load),
    }
    try:
        for b in range(batches):
            convs = list(range(b * batch, (b + 1) * batch))
            # The 101st message arrives in every conversation of the batch.
            for i in convs:
                await store.append(owners[i], ids[i], "user", pool[i % len(pool)])
                await reference.append(f"s{i}", "user", pool[i % len(pool)])
            order = list(designs) if b % 2 == 0 else list(reversed(designs))
            for name in order:
                summarize_batch, load = designs[name]
                stop = asyncio.Event()
                stop.set()
                idle[name].seconds.extend(
                    (await read_while(load, readers, stop, rng, idle_reads // batches)).seconds
                )
                stop = asyncio.Event()
                reader = asyncio.create_task(read_while(load, readers, stop, rng, 1))
                await summarize_batch(convs)
                stop.set()
                during[name].seconds.extend((await reader).seconds)
        # What the model now sees of a summarized conversation: 1 summary + the recent messages.
        ctx = await store.context(owners[0], ids[0])
        shape = f"{'1 summary' if ctx.summary else 'no summary'} + {len(ctx.turns)} messages"
    finally:
        await store.close()

    table = Table(
        f"{batch} conversations crossing the threshold at once ({batches} batch(es), designs "
        "alternating); per-conversation times",
        ["design", "summarized", "errors", "all done s", "call p50 ms", "call p99 ms",
         "commit p50 ms", "commit p99 ms", "commit max ms"],
    )  # fmt: skip
    total = n_sum
    c = calls["Mnemo"]
    table.add(
        "Mnemo", f"{summarized['Mnemo']}/{total}", len(errors["Mnemo"]), f"{wall['Mnemo']:.2f}",
        ms(c.p50), ms(c.p99),
        ms(commits.p50), ms(commits.p99), ms(max(commits.seconds, default=float("nan"))),
    )  # fmt: skip
    r = calls[reference.name]
    table.add(
        reference.name, f"{summarized[reference.name]}/{total}", len(errors[reference.name]),
        f"{wall[reference.name]:.2f}",
        ms(r.p50), ms(r.p99), ms(r.p50), ms(r.p99), ms(max(r.seconds)),
    )  # fmt: skip
    readers_table = Table(
        "Other conversations' context load while the summarizations run (vs idle, same run)",
        ["design", "reads idle", "idle p50 ms", "idle p99 ms", "reads during", "during p50 ms",
         "during p99 ms", "p99 during / idle"],
    )  # fmt: skip
    for name in designs:
        i, d = idle[name], during[name]
        readers_table.add(
            name, i.count, ms(i.p50), ms(i.p99), d.count, ms(d.p50), ms(d.p99),
            ratio(d.p99, i.p99),
        )  # fmt: skip
    commit_max = max(commits.seconds, default=float("nan"))
    notes = [
        "Targets: Mnemo commit ≤ 20 ms each; other conversations' context p99 ≤ 5 ms meanwhile.",
        f"Mnemo commit max {ms(commit_max)} ms "
        f"({'met' if commit_max <= 0.020 else 'missed'}); readers' p99 during "
        f"{ms(during['Mnemo'].p99)} ms ({'met' if during['Mnemo'].p99 <= 0.005 else 'missed'}). "
        f"After summarizing, a conversation's context holds {shape}.",
        "Mnemo 'call' = `summarize_if_needed()` (extractive summarizer + commit, all 100 "
        "started together, so it includes queueing behind the other 99); 'commit' = from the "
        "summarizer returning to the call returning (the transaction that checks nothing "
        "changed, inserts the summary and marks the turns compacted, plus waiting for the "
        "single writer). Reference design: one transaction on a new connection per call "
        "(count, select the oldest rows, join, truncate to 10,000 chars, insert, delete).",
    ]
    for name, errs in errors.items():
        if errs:
            notes.append(f"{name}: {len(errs)} summarizations failed; first error: {errs[0]}")
    write_result(NAME, "Summarization", [table, readers_table, *notes], out_dir=config.out_dir,
                 quick=config.quick)  # fmt: skip
