"""Scaling out: the PostgreSQL backend beside SQLite on the same corpus, in one run.

Both stores get the same corpus (10k conversations x 100 messages at full size): SQLite through
`mnemo_corpus.bulk_load`, PostgreSQL through COPY into the schema its migrations made (the
search indexes are dropped during the COPY and rebuilt after, as one would for any bulk load).
Then, interleaved round by round: context load of a random conversation, context with recall
(the next message as the query), 50 conversations appending at once, and summarizations one at
a time. PostgreSQL comes from $MNEMO_BENCH_DATABASE_URL (else $MNEMO_TEST_DATABASE_URL); the
benchmark works in a schema of its own and drops it afterwards. Without a URL it says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import time
from urllib.parse import quote

from bench.appends import concurrent_phase
from bench.config import BenchConfig
from bench.datagen import Corpus, message_pool
from bench.harness import Samples, Table, interleave, ms, write_result

NAME = "scale_out"
TITLE = "Scaling out: PostgreSQL beside SQLite"
URL_ENV = ("MNEMO_BENCH_DATABASE_URL", "MNEMO_TEST_DATABASE_URL")
FLOOR = "PostgreSQL SELECT 1, same pool"
BEFORE = "PostgreSQL, the statement as before m011"
ASYNC = "PostgreSQL, append_commit=async"


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _cpu_timed(fn, samples: Samples):
    """`fn`, also recording this process's CPU time per call into `samples` (beside the wall
    time interleave() takes): what the client spends, apart from waiting."""

    async def timed(i):
        start = time.thread_time()
        await fn(i)
        samples.seconds.append(time.thread_time() - start)

    return timed


@contextlib.contextmanager
def _statement_as_before():
    """context() sending its whole statement, parsed and planned per call, as before migration
    m011 made it a function the server keeps a plan of: the same code otherwise, in the same
    rounds, so the table shows what the function changed apart from the machine's load.
    (interleave() awaits one call at a time, so no other call sees the swap.)"""
    from memory.postgres import sql

    call = sql.CONTEXT_CALL_SQL
    sql.CONTEXT_CALL_SQL = sql.context_sql(None, False)
    try:
        yield
    finally:
        sql.CONTEXT_CALL_SQL = call


def _server_url() -> str | None:
    return next((os.environ[n] for n in URL_ENV if os.environ.get(n, "").strip()), None)


def _in_schema(url: str, schema: str) -> str:
    option = quote(f"-c search_path={schema},public", safe="")
    return f"{url}{'&' if '?' in url else '?'}options={option}"


async def load_postgres(url: str, corpus: Corpus, pool: list[str], ids: list[str]) -> None:
    """COPY the corpus into the store's schema (created by its migrations) at `url`."""
    import psycopg

    from bench.mnemo_corpus import owner_of
    from memory.postgres.text import index_cjk, index_words

    texts = sorted(set(pool))
    async with await psycopg.AsyncConnection.connect(url) as conn:
        # Words as the store writes them: stemmed on the server (mnemo_stem, m010) when this
        # schema has it (pg_previous loads versions from before it too).
        cur = await conn.execute("SELECT to_regprocedure('mnemo_stem(tsvector)') IS NOT NULL")
        stem = "mnemo_stem(w::tsvector)" if (await cur.fetchone())[0] else "w::tsvector"
        cur = await conn.execute(
            f"SELECT {stem} FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, n) ORDER BY n",
            ([index_words(text) for text in texts],),
        )
        words = [w for (w,) in await cur.fetchall()]
        search = {text: (w, index_cjk(text)) for text, w in zip(texts, words, strict=True)}
        cur = await conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname IN ('turns_words', 'turns_cjk')"
        )
        indexes = await cur.fetchall()
        for name, _ in indexes:
            await conn.execute(f"DROP INDEX {name}")
        async with cur.copy(
            "COPY conversations (id, owner, title, persona_id, created_at, last_active_at) "
            "FROM STDIN"
        ) as copy:
            for i, cid in enumerate(ids):
                await copy.write_row(
                    (cid, owner_of(i), f"Conversation {i}", "assistant", corpus.start_ts, 0.0)
                )
        async with cur.copy(
            "COPY turns (conversation_id, role, content, created_at, words, cjk) FROM STDIN"
        ) as copy:
            for conv, _, role, content, ts in corpus.rows(pool):
                words, cjk = search[content]
                await copy.write_row((ids[conv], role, content, ts, words, cjk))
        await conn.execute(
            "UPDATE conversations c SET message_count = t.n, active_count = t.n, chars = t.chars, "
            "last_active_at = t.last FROM (SELECT conversation_id, count(*) AS n, "
            "sum(char_length(content)) AS chars, max(created_at) AS last FROM turns "
            "GROUP BY conversation_id) t WHERE c.id = t.conversation_id"
        )
        for _, definition in indexes:
            await conn.execute(definition)
        await conn.commit()
        # What one does after a bulk load, before going live: VACUUM sets the tuples' hint
        # bits and the visibility map, and a checkpoint writes the load's dirty pages, so the
        # timed appends do not pay for the load (full-page images after the checkpoint the
        # load's WAL triggers, hint bits set by the first reads).
        await conn.set_autocommit(True)
        await conn.execute("VACUUM (ANALYZE) conversations, turns")
        with contextlib.suppress(psycopg.errors.InsufficientPrivilege):  # needs pg_checkpoint
            await conn.execute("CHECKPOINT")


async def _appends(stores: dict, n_conv: int, per_conv: int, phases: int, pool: list[str]):
    """Each store: 50 fresh conversations appending at once; (messages/s, latencies, stored)."""
    convs = {
        name: [await s.create_conversation("bench-appender") for _ in range(n_conv)]
        for name, s in stores.items()
    }
    wall = dict.fromkeys(stores, 0.0)
    lat = {name: Samples(name) for name in stores}
    errors: dict[str, list[str]] = {name: [] for name in stores}
    for phase in range(phases):
        for name in list(stores) if phase % 2 == 0 else reversed(list(stores)):
            store, ids = stores[name], convs[name]

            async def append(conv, role, content, store=store, ids=ids):
                await store.append("bench-appender", ids[conv].id, role, content)

            took, latencies, errs = await concurrent_phase(append, n_conv, per_conv, pool, phase)
            wall[name] += took
            lat[name].seconds.extend(latencies)
            errors[name].extend(errs)
    sent = n_conv * per_conv * phases
    results = {}
    for name, store in stores.items():
        stored = sum([(await store.get_conversation("bench-appender", c.id)).message_count
                      for c in convs[name]])  # fmt: skip
        results[name] = (sent / wall[name], lat[name], stored, errors[name])
    return sent, results


async def _summarizations(stores: dict, ids: list[str], owners: list[str], picks: list[int]):
    """Per store: one summarization at a time of conversations brought to the threshold."""
    samples = {name: Samples(name) for name in stores}
    folded = dict.fromkeys(stores, 0)
    for conv in picks:
        for name, store in stores.items():
            await store.append(owners[conv], ids[name][conv], "user", "One more, to fold.")
            start = time.perf_counter()
            folded[name] += await store.summarize_if_needed(owners[conv], ids[name][conv])
            samples[name].seconds.append(time.perf_counter() - start)
    return samples, folded


async def run(config: BenchConfig) -> None:
    url = _server_url()
    if url is None:
        table = Table("Not run", ["reason"])
        table.add(f"no PostgreSQL: set {URL_ENV[0]} (see README, Scaling out)")
        write_result(NAME, TITLE, [table], out_dir=config.out_dir, quick=config.quick)
        return
    import psycopg

    schema = "bench_" + secrets.token_hex(4)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        await _run(config, _in_schema(url, schema))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def _run(config: BenchConfig, pg_url: str) -> None:
    from psycopg import connect as psycopg_connect

    from bench import mnemo_corpus
    from memory import ConversationStore
    from memory.postgres import PostgresStore

    corpus = Corpus(config.pick(10_000, 500, 20), config.pick(100, 100, 30), seed=config.seed)
    rounds = config.pick(2_000, 300, 20)
    pool = message_pool(config.seed)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)
    owners = [mnemo_corpus.owner_of(i) for i in range(corpus.n_conversations)]
    load = Table(f"Loading {corpus.total:,} messages", ["backend", "seconds"])

    start = time.perf_counter()
    sqlite_ids = await mnemo_corpus.bulk_load(
        work / "mnemo", corpus.n_conversations, corpus.rows(pool), start_ts=corpus.start_ts
    )
    load.add("SQLite (executemany + FTS5 indexes)", f"{time.perf_counter() - start:.1f}")
    start = time.perf_counter()
    await (await PostgresStore.open(pg_url)).close()  # the migrations make the schema
    pg_ids = [secrets.token_urlsafe(16) for _ in range(corpus.n_conversations)]
    await load_postgres(pg_url, corpus, pool, pg_ids)
    load.add("PostgreSQL (COPY, then the GIN indexes)", f"{time.perf_counter() - start:.1f}")

    with psycopg_connect(pg_url) as conn:
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', "
            "'server_version', 'shared_buffers')"
        ).fetchall())  # fmt: skip
    stores = {
        "SQLite": await ConversationStore.open(work / "mnemo"),
        "PostgreSQL": await PostgresStore.open(pg_url),
    }
    ids = {"SQLite": sqlite_ids, "PostgreSQL": pg_ids}
    try:
        probe = corpus.n_conversations // 2
        a, b = [await s.context(owners[probe], ids[n][probe]) for n, s in stores.items()]
        assert [t.content for t in a.turns] == [t.content for t in b.turns], "mismatch"

        rng = random.Random(config.seed)
        picks = [rng.randrange(corpus.n_conversations) for _ in range(rounds + 10)]
        queries = [pool[rng.randrange(len(pool))] for _ in range(rounds + 10)]

        cpu: dict[str, Samples] = {}

        def loader(name, with_query, label=None):
            store, conv_ids, label = stores[name], ids[name], label or name
            if with_query:
                return lambda i: store.context(owners[picks[i]], conv_ids[picks[i]], queries[i])
            return _cpu_timed(
                lambda i: store.context(owners[picks[i]], conv_ids[picks[i]]),
                cpu.setdefault(label, Samples(label)),
            )

        contenders = {n: loader(n, False) for n in stores}
        before = loader("PostgreSQL", False, BEFORE)

        async def as_before(i):
            with _statement_as_before():
                await before(i)

        contenders[BEFORE] = as_before
        # The machine's floor: the cheapest statement through the same pool, in the same
        # rounds (a p99 no context() on this machine can beat).
        contenders[FLOOR] = _cpu_timed(
            lambda i: stores["PostgreSQL"]._fetch("SELECT 1", {}),
            cpu.setdefault(FLOOR, Samples(FLOOR)),
        )
        load_before = _load()
        plain = await interleave(contenders, lambda i: i, rounds)
        recall = await interleave({n: loader(n, True) for n in stores}, lambda i: i, rounds)
        ctx = Table(
            f"context() of a random conversation among {corpus.total:,} messages, "
            f"{rounds:,} rounds each, interleaved (load average {load_before} → {_load()})",
            ["backend", "p50 ms", "p99 ms", "p50 / p99 ÷ the floor's",
             "this process's CPU p50 / p99 ms", "with recall p50 ms", "with recall p99 ms"],
        )  # fmt: skip
        floor = plain[FLOOR]
        for name in contenders:
            p, c = plain[name], cpu[name]
            ratio = f"{p.p50 / floor.p50:.1f}× / {p.p99 / floor.p99:.1f}×"
            ratio = ratio if name.startswith("PostgreSQL") and name != FLOOR else ""
            r = [ms(recall[name].p50), ms(recall[name].p99)] if name in recall else ["", ""]
            ctx.add(name, ms(p.p50), ms(p.p99), ratio, f"{ms(c.p50)} / {ms(c.p99)}", *r)

        n_conv, per_conv, phases = 50, config.pick(20, 10, 2), config.pick(4, 2, 1)
        # The opt-in that does not wait for each commit's WAL flush, on the same database.
        writers = {**stores, ASYNC: await PostgresStore.open(pg_url, append_commit="async")}
        for name in ("PostgreSQL", ASYNC):  # both pools at full size before any is timed
            await asyncio.gather(*(writers[name]._fetch("SELECT 1", {}) for _ in range(10)))
        load_before = _load()
        try:
            sent, appended = await _appends(writers, n_conv, per_conv, phases, pool)
        finally:
            await writers[ASYNC].close()
        app = Table(
            f"{n_conv} conversations appending at once, {sent:,} messages per backend, "
            f"phase by phase in turn (load average {load_before} → {_load()})",
            ["backend", "messages/s", "p50 ms", "p99 ms", "stored / sent", "errors"],
        )
        for name, (rate, s, stored, errs) in appended.items():
            app.add(name, f"{rate:,.0f}", ms(s.p50), ms(s.p99), f"{stored:,} / {sent:,}", len(errs))

        fold_picks = rng.sample(range(corpus.n_conversations), config.pick(100, 20, 3))
        folds, folded = await _summarizations(stores, ids, owners, fold_picks)
        summ = Table(
            "summarize_if_needed() one at a time, conversations at 101 active messages "
            "(extractive summarizer; read, summarize, commit)",
            ["backend", "folded", "p50 ms", "max ms"],
        )
        for name, s in folds.items():
            summ.add(name, f"{folded[name]} / {s.count}", ms(s.p50), ms(max(s.seconds)))
    finally:
        for store in stores.values():
            await store.close()
    notes = [
        "Targets (issue 12) on PostgreSQL at 1M messages: context p99 ≤ 5 ms; ≥ 1,000 appends/s "
        "with 50 concurrent conversations.",
        f"PostgreSQL {settings.get('server_version')} over TCP, fsync={settings.get('fsync')}, "
        f"synchronous_commit={settings.get('synchronous_commit')} (on: every append waits for "
        "its WAL flush), shared_buffers of "
        f"{int(settings.get('shared_buffers', 0)) * 8 // 1024} MiB; the store's pool of 10 "
        "connections. SQLite: WAL with synchronous=NORMAL (a commit does not wait for fsync). "
        f"{ASYNC}: the opt-in whose appends do not wait for their flush (README, Scaling out).",
    ]
    write_result(
        NAME, TITLE, [load, ctx, app, summ, *notes], out_dir=config.out_dir, quick=config.quick
    )


if __name__ == "__main__":
    asyncio.run(run(BenchConfig()))
