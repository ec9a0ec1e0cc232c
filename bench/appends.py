"""Concurrent appends: 50 conversations appending at once; throughput, latency, nothing lost.

Each design starts from an empty database. 50 tasks each append their own conversation's
messages one after another (user, assistant, ...) while the other 49 do the same; every
append's latency is recorded, and the stored count is checked afterwards. Designs take turns
in several short phases so the machine's noise falls on all of them.
"""

from __future__ import annotations

import asyncio
import time

from bench.baselines import LangChainHistory, ReferenceDesign, langchain_available
from bench.config import BenchConfig
from bench.datagen import message_pool
from bench.harness import Samples, Table, ms, ratio, write_result

NAME = "appends"
OWNER = "bench-owner"


async def concurrent_phase(append, n_conversations: int, per_conversation: int, pool, phase: int):
    """Run n_conversations tasks of per_conversation appends; (wall s, latencies, errors)."""
    latencies: list[float] = []
    errors: list[str] = []

    async def writer(conv: int) -> None:
        for k in range(per_conversation):
            role = "user" if k % 2 == 0 else "assistant"
            content = pool[(conv * 31 + k + phase * 7) % len(pool)]
            start = time.perf_counter()
            try:
                await append(conv, role, content)
            except Exception as exc:  # a lost message: counted and reported, never hidden
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(writer(c) for c in range(n_conversations)))
    return time.perf_counter() - start, latencies, errors


async def run(config: BenchConfig) -> None:
    from memory import ConversationStore

    n_conv = config.pick(50, 50, 5)
    phases = config.pick(4, 1, 1)
    per_phase = config.pick(20, 10, 4)  # messages per conversation per phase
    pool = message_pool(config.seed)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)

    store = await ConversationStore.open(work / "mnemo")
    convs = [await store.create_conversation(OWNER) for _ in range(n_conv)]
    reference = ReferenceDesign(work / "reference.db")
    reference.create_schema()

    async def mnemo_append(conv, role, content):
        await store.append(OWNER, convs[conv].id, role, content)

    async def reference_append(conv, role, content):
        await reference.append(f"session-{conv}", role, content)

    designs = {"Mnemo": mnemo_append, reference.name: reference_append}
    why_no_langchain = langchain_available()
    langchain = None
    if why_no_langchain is None:
        langchain = LangChainHistory(work / "langchain.db")
        langchain.history("create-table")

        async def langchain_append(conv, role, content):
            # Its aadd_messages needs an async engine (aiosqlite under SQLAlchemy's asyncio
            # extension); with the sync engine an async app runs add_message in a thread.
            await asyncio.to_thread(langchain.append, f"session-{conv}", role, content)

        designs[langchain.name] = langchain_append

    wall = dict.fromkeys(designs, 0.0)
    lat = {name: Samples(name) for name in designs}
    errs: dict[str, list[str]] = {name: [] for name in designs}
    order = list(designs)
    for phase in range(phases):
        for name in order if phase % 2 == 0 else reversed(order):
            took, latencies, errors = await concurrent_phase(
                designs[name], n_conv, per_phase, pool, phase
            )
            wall[name] += took
            lat[name].seconds.extend(latencies)
            errs[name].extend(errors)

    expected = n_conv * per_phase * phases
    counts = {"Mnemo": sum([(await store.status(OWNER, c.id)).total for c in convs])}
    counts[reference.name] = await reference.count()
    if langchain is not None:
        import sqlite3

        with sqlite3.connect(work / "langchain.db") as db:
            counts[langchain.name] = db.execute(
                "SELECT count(*) FROM message_store WHERE session_id != 'create-table'"
            ).fetchone()[0]
        langchain.close()
    await store.close()

    base_rate = expected / wall["Mnemo"]
    table = Table(
        f"{n_conv} conversations appending concurrently, {expected:,} messages per design "
        f"({phases} interleaved phases); ratio = Mnemo's throughput / the design's",
        ["design", "messages/s", "p50 ms", "p99 ms", "max ms", "stored / sent", "errors",
         "Mnemo faster by"],
    )  # fmt: skip
    for name in designs:
        rate = expected / wall[name]
        s = lat[name]
        table.add(
            name, f"{rate:,.0f}", ms(s.p50), ms(s.p99), ms(max(s.seconds)),
            f"{counts[name]:,} / {expected:,}", len(errs[name]), ratio(base_rate, rate),
        )  # fmt: skip
    notes = [
        "Target: Mnemo ≥ 2,000 messages/s with 50 concurrent conversations, none lost.",
        f"Mnemo: {base_rate:,.0f} messages/s "
        f"({'met' if base_rate >= 2000 else 'missed'}), "
        f"{'none lost' if counts['Mnemo'] == expected else 'LOST MESSAGES'}.",
        "Mnemo appends go through its single long-lived writer connection (one transaction "
        "per message: insert + conversation counters). The reference design opens a new "
        "aiosqlite connection, inserts and commits per message (SQLite's default rollback "
        "journal, as published). LangChain: `add_message` per message on a shared sync "
        "engine, run with `asyncio.to_thread`.",
    ]
    for name, errors in errs.items():
        if errors:
            notes.append(f"{name} errors (first): {errors[0]}")
    if why_no_langchain is not None:
        notes.append(
            f"LangChain row skipped: langchain-community not importable ({why_no_langchain})."
        )
    write_result(NAME, "Concurrent appends", [table, *notes], out_dir=config.out_dir,
                 quick=config.quick)  # fmt: skip
