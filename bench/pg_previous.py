"""The PostgreSQL store against its previous version, in one process: before/after ratios that
the machine's load cannot fake.

On a shared machine two runs minutes apart differ more than two versions of the code do (the
scale_out bench's SQLite p99, the same code, moved 1 -> 45 ms between runs). Here memory/ from
PREVIOUS (`git archive`, imported as `memory_previous`) and this tree's memory/ each get the
same corpus in a schema of their own, loaded by COPY as scale_out loads it; then context loads
(without and with recall) are interleaved call by call in a shuffled order, and 50
conversations appending at once alternate phase by phase, so drift falls on both alike.
PostgreSQL comes from $MNEMO_BENCH_DATABASE_URL (else $MNEMO_TEST_DATABASE_URL).
"""

from __future__ import annotations

import importlib
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.appends import concurrent_phase
from bench.config import BenchConfig
from bench.datagen import Corpus, message_pool
from bench.harness import Table, git_tree, interleave, ms, write_result
from bench.scale_out import URL_ENV, _in_schema, _server_url, load_postgres

NAME = "pg_previous"
TITLE = "PostgreSQL store: this version beside the previous one, in one process"
# The store before the batched appends and the pool's cheaper check (issue 12).
PREVIOUS = "7c5d9ec"
REPO = Path(__file__).resolve().parents[1]


def import_previous(ref: str, into: Path):
    """memory/ at `ref`, imported as the package `memory_previous` (its imports are relative)."""
    if git_tree(ref, into, "memory") is None:
        raise RuntimeError(f"memory/ at {ref} is not in this checkout (a shallow clone?)")
    (into / "memory").rename(into / "memory_previous")
    sys.path.insert(0, str(into))
    return importlib.import_module("memory_previous.postgres").PostgresStore


def _has_previous() -> bool:
    probe = ["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"]
    return subprocess.run(probe, capture_output=True).returncode == 0


async def run(config: BenchConfig) -> None:
    url = _server_url()
    reason = None
    if url is None:
        reason = f"no PostgreSQL: set {URL_ENV[0]} (see README, Scaling out)"
    elif not _has_previous():
        reason = f"commit {PREVIOUS} is not in this checkout (shallow?)"
    if reason:
        table = Table("Not run", ["reason"])
        table.add(reason)
        write_result(NAME, TITLE, [table], out_dir=config.out_dir, quick=config.quick)
        return
    import psycopg

    schemas = {"previous": "prev_" + secrets.token_hex(4), "this": "this_" + secrets.token_hex(4)}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        for schema in schemas.values():
            conn.execute(f"CREATE SCHEMA {schema}")
    try:
        with tempfile.TemporaryDirectory(prefix="mnemo-previous-", dir=config.work_dir) as tmp:
            await _run(config, url, schemas, import_previous(PREVIOUS, Path(tmp)))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            for schema in schemas.values():
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


async def _run(config: BenchConfig, url: str, schemas: dict[str, str], previous_store) -> None:
    from bench.mnemo_corpus import owner_of
    from memory.postgres import PostgresStore

    corpus = Corpus(config.pick(10_000, 500, 20), config.pick(100, 100, 30), seed=config.seed)
    rounds = config.pick(2_000, 600, 20)
    phases = config.pick(8, 8, 2)
    n_conv, per_conv = 50, config.pick(10, 10, 2)
    pool = message_pool(config.seed)
    owners = [owner_of(i) for i in range(corpus.n_conversations)]
    classes = {"previous": previous_store, "this": PostgresStore}
    stores, ids = {}, {}
    for name, cls in classes.items():
        target = _in_schema(url, schemas[name])
        await (await cls.open(target)).close()  # its own migrations make its schema
        ids[name] = [secrets.token_urlsafe(16) for _ in range(corpus.n_conversations)]
        await load_postgres(target, corpus, pool, ids[name])
        stores[name] = await cls.open(target)
    try:
        rng = random.Random(config.seed)
        picks = [rng.randrange(corpus.n_conversations) for _ in range(rounds + 10)]
        queries = [pool[rng.randrange(len(pool))] for _ in range(rounds + 10)]

        def loader(name, with_query):
            store, conv_ids = stores[name], ids[name]
            if with_query:
                return lambda i: store.context(owners[picks[i]], conv_ids[picks[i]], queries[i])
            return lambda i: store.context(owners[picks[i]], conv_ids[picks[i]])

        plain = await interleave({n: loader(n, False) for n in stores}, lambda i: i, rounds)
        recall = await interleave({n: loader(n, True) for n in stores}, lambda i: i, rounds)
        rates, errors = await _append_phases(stores, n_conv, per_conv, phases, pool)
    finally:
        for store in stores.values():
            await store.close()
    ctx = Table(
        f"context() of a random conversation among {corpus.total:,} messages, {rounds:,} "
        "rounds each, interleaved call by call",
        ["store", "p50 ms", "p99 ms", "with recall p50 ms", "with recall p99 ms"],
    )
    for name in stores:
        p, r = plain[name], recall[name]
        ctx.add(f"{name} ({PREVIOUS})" if name == "previous" else name,
                ms(p.p50), ms(p.p99), ms(r.p50), ms(r.p99))  # fmt: skip
    p, r = plain, recall
    ctx.add("this / previous", *(f"{a / b:.2f}" for a, b in (
        (p["this"].p50, p["previous"].p50), (p["this"].p99, p["previous"].p99),
        (r["this"].p50, r["previous"].p50), (r["this"].p99, r["previous"].p99),
    )))  # fmt: skip
    app = Table(
        f"{n_conv} conversations appending at once ({per_conv} messages each), {phases} phases "
        "per store, alternating",
        ["store", "median messages/s", "each phase", "errors"],
    )
    for name in stores:
        app.add(name, f"{statistics.median(rates[name]):,.0f}",
                " ".join(f"{x:.0f}" for x in rates[name]), len(errors[name]))  # fmt: skip
    ratio = statistics.median(rates["this"]) / statistics.median(rates["previous"])
    app.add("this / previous", f"{ratio:.2f}", "", "")
    write_result(NAME, TITLE, [ctx, app], out_dir=config.out_dir, quick=config.quick)


async def _append_phases(stores: dict, n_conv: int, per_conv: int, phases: int, pool: list[str]):
    rates: dict[str, list[float]] = {name: [] for name in stores}
    errors: dict[str, list[str]] = {name: [] for name in stores}
    for phase in range(phases):
        for name in list(stores) if phase % 2 == 0 else reversed(list(stores)):
            store = stores[name]
            convs = [await store.create_conversation("bench-appender") for _ in range(n_conv)]

            async def append(conv, role, content, store=store, convs=convs):
                await store.append("bench-appender", convs[conv].id, role, content)

            took, _, errs = await concurrent_phase(append, n_conv, per_conv, pool, phase)
            rates[name].append(n_conv * per_conv / took)
            errors[name].extend(errs)
    return rates, errors
