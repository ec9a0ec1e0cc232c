"""Context load: the newest-20 context of a random conversation among 1M messages.

Every design gets the same corpus (10k conversations x 100 messages) written into its own
schema, then each round loads the same random conversation from each design, in a shuffled
order. LangChain reads a whole session per call, so it is timed in fewer rounds.
"""

from __future__ import annotations

import random
import time

from bench.baselines import LangChainHistory, ReferenceDesign, langchain_available
from bench.config import BenchConfig
from bench.datagen import Corpus, message_pool
from bench.harness import Table, interleave, ms, ratio, write_result

NAME = "context_load"


def session_id(conv: int) -> str:
    return f"session-{conv:06d}"


async def run(config: BenchConfig) -> None:
    from bench import mnemo_corpus
    from memory import ConversationStore

    corpus = Corpus(
        n_conversations=config.pick(10_000, 1_000, 50),
        messages_per_conversation=config.pick(100, 100, 30),
        seed=config.seed,
    )
    rounds = config.pick(3_000, 400, 30)
    lc_every = config.pick(20, 10, 5)
    pool = message_pool(config.seed)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)

    def rows_with_sessions():
        return ((session_id(c), r, t, ts) for c, _, r, t, ts in corpus.rows(pool))

    load_table = Table(
        f"Writing the corpus ({corpus.total:,} messages in {corpus.n_conversations:,} "
        "conversations) into each design's schema with executemany",
        ["design", "seconds", "messages/s"],
    )

    start = time.perf_counter()
    ids = await mnemo_corpus.bulk_load(
        work / "mnemo", corpus.n_conversations, corpus.rows(pool), start_ts=corpus.start_ts
    )
    took = time.perf_counter() - start
    load_table.add("Mnemo", f"{took:.2f}", f"{corpus.total / took:,.0f}")

    reference = ReferenceDesign(work / "reference.db")
    start = time.perf_counter()
    reference.bulk_load(rows_with_sessions())
    took = time.perf_counter() - start
    load_table.add(reference.name, f"{took:.2f}", f"{corpus.total / took:,.0f}")

    why_no_langchain = langchain_available()
    langchain = langchain_new_engine = None
    if why_no_langchain is None:
        langchain = LangChainHistory(work / "langchain.db")
        start = time.perf_counter()
        langchain.bulk_load(rows_with_sessions())
        took = time.perf_counter() - start
        load_table.add(
            "LangChain SQLChatMessageHistory", f"{took:.2f}", f"{corpus.total / took:,.0f}"
        )
        langchain_new_engine = LangChainHistory(work / "langchain.db", per_call_engine=True)

    store = await ConversationStore.open(work / "mnemo")
    owners = [mnemo_corpus.owner_of(i) for i in range(corpus.n_conversations)]
    try:
        # Same answer from every design, or the comparison means nothing.
        probe = corpus.n_conversations // 2
        ctx = await store.context(owners[probe], ids[probe])
        ref_rows = await reference.load(session_id(probe))
        assert [t.content for t in ctx.turns] == [r["content"] for r in ref_rows], "mismatch"
        if langchain is not None:
            lc_rows = langchain.load(session_id(probe))
            assert [r["content"] for r in lc_rows] == [r["content"] for r in ref_rows]

        rng = random.Random(config.seed)
        picks = [rng.randrange(corpus.n_conversations) for _ in range(rounds + 10)]

        contenders = {
            "Mnemo": lambda i: store.context(owners[i], ids[i]),
            reference.name: lambda i: reference.load(session_id(i)),
        }
        every = {}
        if langchain is not None:
            contenders[langchain.name] = lambda i: langchain.load(session_id(i))
            contenders[langchain_new_engine.name] = lambda i: langchain_new_engine.load(
                session_id(i)
            )
            every = {langchain.name: lc_every, langchain_new_engine.name: lc_every * 2}
        samples = await interleave(
            contenders, lambda i: picks[i % len(picks)], rounds, every=every, seed=config.seed
        )
    finally:
        await store.close()
        if langchain is not None:
            langchain.close()

    base = samples["Mnemo"]
    table = Table(
        f"Newest-20 context of a random conversation, {corpus.total:,} messages in "
        f"{corpus.n_conversations:,} conversations (interleaved rounds; ratio = time / Mnemo's)",
        ["design", "calls", "p50 ms", "p99 ms", "p50 vs Mnemo", "p99 vs Mnemo"],
    )
    for name, s in samples.items():
        table.add(
            name, s.count, ms(s.p50), ms(s.p99), ratio(s.p50, base.p50), ratio(s.p99, base.p99)
        )
    notes = [
        "Targets: Mnemo p99 ≤ 1 ms; ≥ 10× faster than the SQLite reference design; ≥ 500× "
        "faster than LangChain SQLChatMessageHistory.",
        f"Mnemo p99 = {ms(base.p99)} ms ({'met' if base.p99 <= 0.001 else 'missed'}); "
        f"reference design p50 ratio {ratio(samples[reference.name].p50, base.p50)}, p99 ratio "
        f"{ratio(samples[reference.name].p99, base.p99)}.",
        "Mnemo: `ConversationStore.context()` on its long-lived connection (ownership check, "
        "latest summary, newest turns under the budget). Reference design: a new aiosqlite "
        "connection per call, `SELECT ... ORDER BY created_at DESC, id DESC LIMIT 20`, reversed. "
        "LangChain: `SQLChatMessageHistory(session_id, connection=engine).messages[-20:]` with "
        "one shared SQLAlchemy engine (sync call, no thread hop); the 'new engine per call' row "
        "follows "
        "LangChain's documented `get_session_history` pattern that builds the history from a "
        "connection string on every call.",
    ]
    if why_no_langchain is not None:
        notes.append(
            f"LangChain rows skipped: langchain-community not importable ({why_no_langchain})."
        )
    write_result(
        NAME,
        "Context load",
        [table, load_table, *notes],
        out_dir=config.out_dir,
        quick=config.quick,
    )
