"""A turn and a context with recall at 1M stored messages, this tree beside PREVIOUS's.

Issue 11's targets: a ChatService turn with an instant model ≤ 5 ms median to Done, and
context with recall p99 ≤ 10 ms, at 1M messages under the default embedder (USE). Each side
is a worker process (`python -m bench.turn_million worker`) over its own copy of one corpus
(bench/mnemo_corpus.py, every message with a vector), its memory/, assistant/ and personas/
imported from its root: this tree, or PREVIOUS's files (`git archive`). The driver hands
them the same calls in a shuffled order, one call at a time, so the machine's load falls on
both alike, and reports per call wall time and CPU time (`time.process_time`: every thread
of the worker), the load average beside them.

A turn is `ChatService.send()` in a random conversation of the corpus, with a question and a
reply that differ every turn (no cache serves them); after Done the worker waits for the
turn's background (metrics, the fold a 100-message conversation is due, the reply's vector,
the FTS merges and WAL checkpoints its commits started) and times that separately.

    python -m bench.turn_million [--messages 1000000] [--turns 200] [--contexts 400]
        [--store DIR]   # keep the built corpus there and reuse it next time

`python -m bench --only turn_million` runs it at the bench's size (1M full, 20k quick).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME = "turn_million"
ROOT = Path(__file__).resolve().parent.parent
PREVIOUS = "d0f9922"  # main before this benchmark's cuts
PER_CONVERSATION = 100  # messages: a turn's user message makes 101, and a fold is due


# ---- the worker (runs inside the side's tree) -----------------------------------------------


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of each of this process's threads, by role (Linux's schedstat; {}
    elsewhere): the event loop, the writer's, reader's and checkpointer's SQLite threads,
    the executor's (personas, the extractive summarizer), USE's own (mnemo-use), and
    "other" for threads not started by Python (OpenBLAS's workers)."""
    import glob
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for task in glob.glob("/proc/self/task/*"):
        try:
            with open(f"{task}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        name = names.get(int(task.rsplit("/", 1)[1]), "other")
        role = "executor" if name.startswith("asyncio_") else name
        role = "event loop" if role == "MainThread" else role
        out[role] = out.get(role, 0.0) + ns / 1e9
    return out


def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}


async def serve(store_dir: Path, ids: list[str], seed: int) -> None:
    """Answer the driver's commands on stdin, one JSON line each on stdout."""
    from assistant.chat import ChatService, Done
    from assistant.embedding import select_embedder
    from bench.datagen import message_pool
    from bench.fake_model import InstantModel
    from bench.mnemo_corpus import owner_of
    from memory import ConversationStore
    from personas import PersonaRegistry

    try:  # what the app's Runtime does first; a side from before it has OpenBLAS's default
        from assistant.runtime import one_blas_thread
    except ImportError:
        pass
    else:
        one_blas_thread()
    pool = message_pool(seed)
    store = await ConversationStore.open(store_dir, embedder=select_embedder())
    # Releases before vector_fill.py wrote every vector with its append: nothing to flush.
    flush = getattr(store, "flush_vectors", None)
    if flush is not None:
        await flush()
    for role in ("writer", "reader", "checkpointer"):
        connection = getattr(store._db, role, None)
        if connection is not None:
            connection._thread.name = role  # for thread_cpu
    model = InstantModel()
    service = ChatService(store, PersonaRegistry(data_dir=store_dir), model)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def settle() -> None:
        await service.wait_background()
        if flush is not None:
            await flush()
        await store._db.merged()
        await store._db.checkpointed()

    def answer(**fields: object) -> None:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()

    answer(ready=True)
    while line := (await reader.readline()).decode().strip():
        verb, *args = line.split()
        if verb == "quit":
            break
        i, n = int(args[0]) % len(ids), int(args[1])
        owner, conv = owner_of(i), ids[i]
        text = f"{pool[(n * 7 + 3) % len(pool)]} ({n})"
        threads, cpu, wall = thread_cpu(), time.process_time(), time.perf_counter()
        if verb == "turn":
            model.reply = f"{pool[(n * 13 + 1) % len(pool)]} [{n}]"
            async for event in service.send(owner, conv, text):
                ok = isinstance(event, Done) and event.status == "ok"
            done = (time.perf_counter() - wall, time.process_time() - cpu, thread_cpu())
            cpu, wall = time.process_time(), time.perf_counter()
            await settle()
            answer(wall=done[0], cpu=done[1], bg_wall=time.perf_counter() - wall,
                   bg_cpu=time.process_time() - cpu, ok=ok, threads=spent(threads, done[2]),
                   bg_threads=spent(done[2], thread_cpu()))  # fmt: skip
        else:  # context
            await store.context(owner, conv, query=text)
            answer(wall=time.perf_counter() - wall, cpu=time.process_time() - cpu,
                   threads=spent(threads, thread_cpu()))  # fmt: skip
    await service.aclose()
    await store.close()


# ---- the driver -----------------------------------------------------------------------------


async def build_store(where: Path, n_messages: int, seed: int) -> list[str]:
    """The corpus with every message's vector (each distinct text embedded once), once."""
    ids_file = where / "ids.json"
    if ids_file.exists():
        return json.loads(ids_file.read_text())
    from assistant.embedding import select_embedder
    from bench import mnemo_corpus
    from bench.datagen import Corpus, message_pool
    from memory import ConversationStore

    corpus = Corpus(n_messages // PER_CONVERSATION, PER_CONVERSATION, seed=seed)
    embedder = select_embedder()
    started = time.perf_counter()
    ids = await mnemo_corpus.bulk_load(
        where / "base", corpus.n_conversations, corpus.rows(message_pool(seed)),
        start_ts=corpus.start_ts, embedder=embedder,
    )  # fmt: skip
    store = await ConversationStore.open(where / "base", embedder=embedder)
    await store.flush_vectors()  # the backfill's pass finds none missing and records its mark
    await store.close()
    print(f"corpus of {corpus.total:,} messages built in {time.perf_counter() - started:.0f} s")
    ids_file.write_text(json.dumps(ids))
    return ids


class Side:
    """One worker process over its own copy of the corpus."""

    def __init__(self, name: str, root: Path, store: Path, ids_file: Path, seed: int,
                 env: dict[str, str] | None = None) -> None:  # fmt: skip
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        if "MNEMO_EMBEDDER" not in (env or {}):
            env.pop("MNEMO_EMBEDDER", None)  # the side's default
        self.proc = subprocess.Popen(
            # This file, with the side's packages first on the path (PREVIOUS has no copy).
            [sys.executable, __file__, "worker", str(store), str(ids_file), str(seed)],
            cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.samples: dict[str, list[float]] = {}
        self.call("")  # waits for "ready"

    def call(self, command: str) -> dict:
        if command:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}'s worker exited ({self.proc.wait()})")
        return json.loads(line)

    def record(self, kind: str, result: dict) -> None:
        for key, value in result.items():
            if isinstance(value, float):
                self.samples.setdefault(f"{kind} {key}", []).append(value)
            elif isinstance(value, dict):  # CPU by thread
                for role, seconds in value.items():
                    self.samples.setdefault(f"{kind} {key} {role}", []).append(seconds)

    def close(self) -> None:
        with contextlib_suppress():
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
        self.proc.wait(120)


def contextlib_suppress():
    import contextlib

    return contextlib.suppress(OSError, ValueError)


def run_sides(sides: list[Side], kind: str, calls: int, n_conv: int, seed: int) -> list[float]:
    """`calls` rounds of `kind` in random conversations, sides in a shuffled order each
    round; the load average (1 min) after every round."""
    rng = random.Random(seed)
    loads = []
    for n in range(calls + 3):
        i = rng.randrange(n_conv)
        order = list(sides)
        rng.shuffle(order)
        for side in order:
            # The contexts' messages are not the turns' (the embedder's cache keeps 16).
            result = side.call(f"{kind} {i} {n + (0 if kind == 'turn' else 10**6)}")
            if n >= 3:  # the first three warm the caches
                side.record(kind, result)
        loads.append(os.getloadavg()[0])
    return loads


ROWS = (
    ("turn to Done, wall", "turn wall"),
    ("turn to Done, CPU", "turn cpu"),
    ("the turn's background, wall", "turn bg_wall"),
    ("the turn's background, CPU", "turn bg_cpu"),
    ("turn + background, CPU", "turn total"),
    ("context with recall, wall", "context wall"),
    ("context with recall, CPU", "context cpu"),
)
# "mnemo-use": USE's embedding thread; "other": threads Python did not start (OpenBLAS's).
THREADS = ("event loop", "executor", "mnemo-use", "reader", "writer", "checkpointer", "other")


def cell(values: list[float]) -> str:
    from bench.harness import percentile

    return f"{percentile(values, 50) * 1e3:.1f} / {percentile(values, 99) * 1e3:.1f}"


def ratio(values: list[float], base: list[float], q: float) -> str:
    from bench.harness import percentile

    return f"{percentile(values, q) / max(percentile(base, q), 1e-12):.2f}×"


def report(sides: list[Side], loads: dict[str, list[float]], n_messages: int, out_dir: Path,
           quick: bool, name: str = NAME) -> None:  # fmt: skip
    from bench.harness import Table, write_result

    base, this = sides[0], sides[-1]
    for side in sides:
        side.samples["turn total"] = [
            a + b
            for a, b in zip(side.samples["turn cpu"], side.samples["turn bg_cpu"], strict=True)
        ]
    calls = {kind: len(this.samples[f"{kind} cpu"]) for kind in ("turn", "context")}
    table = Table(
        f"At {n_messages:,} messages (SQLite, USE), the sides interleaved call by call "
        f"({calls['turn']} turns, {calls['context']} contexts each); p50 / p99 ms",
        ["what", *(s.name for s in sides), f"{this.name} ÷ {base.name} p50", "p99"],
    )
    for label, key in ROWS:
        mine, theirs = this.samples[key], base.samples[key]
        ratios = [ratio(mine, theirs, q) for q in (50, 99)] if this is not base else ["—"] * 2
        table.add(label, *(cell(s.samples[key]) for s in sides), *ratios)
    by_thread = Table(
        "Where the CPU goes, by thread (mean ms per call; Linux schedstat)",
        ["thread", *(f"{kind}: {s.name}" for kind in ("to Done", "background", "context")
                     for s in sides)],
    )  # fmt: skip
    for role in THREADS:
        cells = []
        for key in ("turn threads", "turn bg_threads", "context threads"):
            for side in sides:
                values = side.samples.get(f"{key} {role}", [])
                cells.append(f"{sum(values) / len(values) * 1e3:.2f}" if values else "—")
        by_thread.add(role, *cells)
    load_line = "Load average (1 min) during the runs: " + "; ".join(
        f"{kind} {min(v):.1f}-{max(v):.1f}" for kind, v in loads.items() if v
    )
    title = f"A turn and context with recall at {n_messages:,} messages: {this.name}, {base.name}"
    write_result(name, title, [table, by_thread, load_line], out_dir=out_dir, quick=quick)


async def measure(n_messages: int, turns: int, contexts: int, store_dir: Path | None,
                  out_dir: Path, quick: bool, seed: int = 42, previous: str = PREVIOUS,
                  previous_env: dict[str, str] | None = None, this: str | None = None,
                  name: str = NAME, work_dir: Path | None = None) -> None:  # fmt: skip
    from bench.harness import git_tree

    with tempfile.TemporaryDirectory(prefix="mnemo-turn-million-", dir=work_dir) as scratch:
        where = store_dir or Path(scratch)
        where.mkdir(parents=True, exist_ok=True)
        ids = await build_store(where, n_messages, seed)
        ids_file = where / "ids.json"
        old_root = git_tree(previous, Path(scratch) / "previous")
        this_root = ROOT if this is None else git_tree(this, Path(scratch) / "this")
        label = "main" if previous == PREVIOUS else previous
        mine = this or "this"
        if mine == label:  # the same code on both sides (how much a side moves on its own)
            label, mine = f"{label} (a)", f"{mine} (b)"
        roots = [(label, old_root, previous_env), (mine, this_root, None)]
        if old_root is None:
            print(f"{previous} is not in this checkout: measuring this tree alone")
        sides = []
        try:
            for i, (side, root, env) in enumerate(r for r in roots if r[1] is not None):
                copy = Path(scratch) / f"store-{i}"
                shutil.copytree(where / "base", copy)
                sides.append(Side(side, root, copy, ids_file, seed, env))
            loads = {
                "turns": run_sides(sides, "turn", turns, len(ids), seed),
                "contexts": run_sides(sides, "context", contexts, len(ids), seed + 1),
            }
        finally:
            for side in sides:
                side.close()
        report(sides, loads, n_messages, out_dir, quick, name)


async def run(config) -> None:
    """`python -m bench`'s entry: 1M messages at full size (the corpus takes about five
    minutes to build), 5,000 at --quick."""
    await measure(
        config.pick(1_000_000, 5_000, 2_000),
        config.pick(200, 10, 3),
        config.pick(400, 20, 3),
        None,
        config.out_dir,
        config.quick,
        config.seed,
        work_dir=config.work_dir,
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "worker":
        store, ids_file, seed = argv[1:4]
        ids = json.loads(Path(ids_file).read_text())
        asyncio.run(serve(Path(store), ids, int(seed)))
        return
    parser = argparse.ArgumentParser(prog="python -m bench.turn_million", description=__doc__)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--contexts", type=int, default=400)
    parser.add_argument("--store", type=Path, help="build the corpus here once, reuse it after")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--previous", default=PREVIOUS, help=f"the other side ({PREVIOUS})")
    parser.add_argument("--previous-embedder", help="its MNEMO_EMBEDDER (default: its default)")
    parser.add_argument("--this", help="a commit instead of this tree")
    parser.add_argument("--name", default=NAME, help="the results file's name")
    args = parser.parse_args(argv)
    env = {"MNEMO_EMBEDDER": args.previous_embedder} if args.previous_embedder else None
    asyncio.run(
        measure(args.messages, args.turns, args.contexts, args.store, args.out, quick=False,
                previous=args.previous, previous_env=env, this=args.this, name=args.name)
    )  # fmt: skip


if __name__ == "__main__":
    main()
