"""Turn vectors written after the turn, in the background: `VectorFiller`.

A model that knows Chinese (USE multilingual, ~3 ms of CPU a message alone, ~1.5 ms in a
batch) is too slow to embed on a turn's path four times. So a message is saved without
waiting for its vector:

- The new user message is embedded once, by context() while its SQL runs (the recall query),
  and that vector is written with the append (`take_fresh`). Nothing else waits for a model.
  A context with nothing older than its recent window to recall does not wait for it either
  (`keep_later`): the append takes it if it came first, else the turn is queued for that
  embedding's vector, not for a second one (`submit`); an embedding that failed leaves the
  turn to be embedded like any other.
- Every other write (a reply, a tool note, an append without a context before it) queues its
  turn here; one worker, 50 ms after the first arrives, embeds what queued up in one batch
  (`embed_packed`) and writes the vectors in one transaction, after the turn. A reply's
  progress saves are drafts and are not queued: it is embedded once, when final.
- A turn whose vector is not written yet is recalled by its words. A vector is written only
  while the turn still holds the text it was made from (the backends' `write_vectors` checks
  the content), so a reply rewritten or a turn undone meanwhile never gets a stale one.
- On open, turns lacking a vector of the current model (a crash before it was written, a store
  written by another model such as wordllama, or without an embedder) get one in background
  batches, oldest first, up to the newest turn at open (later ones are queued live), with
  progress in the log. A complete pass records how far it got (`vector_backfill`: model and
  turn id), so the next open scans only the turns written since; a pass cut short records
  nothing, and the next open finds what is still missing. Live turns go first.
- `aclose()` (the store's close) writes what is queued within a deadline and drops the rest
  (logged, and the mark moved back before them): the next open's backfill finds those turns.

memory still never loads a model: the `Embedder` comes from outside; this module only calls
it and hands the backend (SQLite or PostgreSQL) rows to write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from .vectors import Embedder, QueryVector, embed_packed, embed_query

log = logging.getLogger(__name__)

LIVE_BATCH = 64  # queued turns per embedder call (USE: ~1.5 ms a message in a batch)
BACKFILL_BATCH = 256  # older turns read and embedded per backfill step
PROGRESS_EVERY_S = 10.0  # how often the backfill logs how far it got
CLOSE_S = 5.0  # on close, how long queued vectors may take to be written
# A vector is not urgent: waiting this long lets the turns of a busy moment (one-at-a-time
# appends, many conversations at once) queue up and go in one embedder call and one write.
LINGER_S = 0.05
FRESH = 64  # new messages' vectors kept between context() and append()
ASKED = 64  # questions embedded ahead of their context() (expect), at most


@dataclass(frozen=True)
class Pending:
    """A turn waiting for its vector: the vector is made of `content` and written only while
    the turn still holds it."""

    conv_id: str
    turn_id: int
    content: str
    vector: bytes | None = None  # made already (keep_later): written, not embedded again


class VectorRows(Protocol):
    """The backend's half (memory/vector_rows.py, memory/postgres/vector_rows.py)."""

    async def write(self, model: str, rows: list[tuple[Pending, bytes]]) -> int:
        """Write (turn, vector) pairs of `model` where the turn still holds the text; how
        many were written."""
        ...

    async def missing(self, model: str, after: int, upto: int, limit: int) -> list[Pending]:
        """Up to `limit` messages with ids in (after, upto] lacking a vector of `model`,
        oldest first."""
        ...

    async def newest(self) -> int | None:
        """The newest turn's id (the backfill's bound at open)."""
        ...

    async def done_upto(self, model: str) -> int:
        """How far a complete pass of `model` got (0: none)."""
        ...

    async def mark(self, model: str, upto: int) -> None:
        """Record that every message up to `upto` was given a vector of `model`."""
        ...

    async def lower_mark(self, below: int) -> None:
        """Move the mark back before turn `below` (its vector was dropped)."""
        ...


class VectorFiller:
    """The store's background embedder: a queue of turns, one worker, and the backfill."""

    def __init__(
        self,
        embedder: Embedder | None,
        rows: VectorRows,
        *,
        live_batch: int = LIVE_BATCH,
        backfill_batch: int = BACKFILL_BATCH,
    ) -> None:
        self.embedder = embedder
        self._rows = rows
        self._lost = False  # a write failed during the pass: it records no mark
        self._inflight: list[Pending] = []  # the batch being embedded or written
        self._live_batch = live_batch
        self._backfill_batch = backfill_batch
        self._queue: OrderedDict[int, Pending] = OrderedDict()  # by turn id: the latest text
        self._fresh: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._asked: OrderedDict[tuple[str, str], asyncio.Future[QueryVector]] = OrderedDict()
        # Questions whose context did not wait for their vector, and the turns saved before
        # it came (keep_later): by (conversation, text).
        self._later: dict[tuple[str, str], asyncio.Future[QueryVector]] = {}
        self._claims: dict[tuple[str, str], Pending] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._backfill: tuple[int, int] | None = None  # (after id, up to id) still to scan
        self._progress = _Progress(0, 0)
        self._closed = False
        self.written = 0  # vectors written since open (the backfill's included)

    # -- the turn's path ----------------------------------------------------------------

    def expect(self, conv_id: str, query: str) -> None:
        """Start embedding the question `query` now, for the context() of `conv_id` that will
        ask for it (`ask`), so the embedding runs while the turn does its other reads. At most
        ASKED wait: the oldest of a question that never came is cancelled."""
        key = (conv_id, query)
        if self.embedder is None or self._closed or key in self._asked:
            return
        self._asked[key] = asyncio.ensure_future(embed_query(self.embedder, query))
        while len(self._asked) > ASKED:
            self._asked.popitem(last=False)[1].cancel()

    def ask(self, conv_id: str, query: str) -> asyncio.Future[QueryVector]:
        """The question's vectors for context(): the embedding expect() started (taken, once),
        else one started now. The caller owns the future (it may cancel it)."""
        started = self._asked.pop((conv_id, query), None)
        return started or asyncio.ensure_future(embed_query(self.embedder, query))

    def keep_fresh(self, conv_id: str, text: str, vector: bytes | None) -> None:
        """Remember the vector context() made of the new message, for its append. Only when
        it is what a saved turn gets (the question embedded as stored: see stores_query)."""
        if vector is None or not stores_query(self.embedder):
            return
        self._fresh[(conv_id, text)] = vector
        self._fresh.move_to_end((conv_id, text))
        while len(self._fresh) > FRESH:
            self._fresh.popitem(last=False)

    def keep_later(self, conv_id: str, text: str, embedding: asyncio.Future[QueryVector]) -> None:
        """Take over the embedding of the new message that context() did not wait for
        (nothing to recall): its vector goes to keep_fresh when done, or, when the message
        was saved first, to that turn (submit). Cancelled when no saved turn would get it."""
        key = (conv_id, text)
        if not stores_query(self.embedder) or self._closed or len(self._later) >= FRESH:
            embedding.cancel()  # the append's turn is embedded in the background instead
            return
        self._later[key] = embedding
        if embedding.done():
            self._later_done(key, embedding)
        else:
            embedding.add_done_callback(lambda done: self._later_done(key, done))

    def _later_done(self, key: tuple[str, str], embedding: asyncio.Future[QueryVector]) -> None:
        if self._later.get(key) is embedding:
            del self._later[key]
        vector = None
        if not embedding.cancelled() and embedding.exception() is None:
            vector = embedding.result().own
        claim = self._claims.pop(key, None)
        if claim is None:
            self.keep_fresh(*key, vector)
        elif not self._closed:  # close queued it to be embedded (aclose)
            # Without a vector (the embedder failed) it is embedded like any other turn.
            self._queue[claim.turn_id] = replace(claim, vector=vector)
            self._start()

    def take_fresh(self, conv_id: str, text: str) -> bytes | None:
        """The vector context() made of `text` in `conv_id`, once; None when there is none."""
        return self._fresh.pop((conv_id, text), None)

    def submit(self, conv_id: str, turn_id: int, content: str) -> None:
        """Queue a saved turn for its vector (no-op without an embedder or once closed): the
        one an embedding under way of the same text will make (keep_later), else its own."""
        if self.embedder is None or self._closed:
            return
        self._unclaim(turn_id)
        key = (conv_id, content)
        pending = Pending(conv_id, turn_id, content)
        if key in self._later and key not in self._claims:
            self._queue.pop(turn_id, None)
            self._claims[key] = pending
            return
        self._queue[turn_id] = pending
        self._queue.move_to_end(turn_id)
        self._start()

    def forget(self, turn_id: int) -> None:
        """Drop a queued turn (its text is a draft again, or it is gone)."""
        self._queue.pop(turn_id, None)
        self._unclaim(turn_id)

    def _unclaim(self, turn_id: int) -> None:
        for key in [k for k, p in self._claims.items() if p.turn_id == turn_id]:
            del self._claims[key]

    # -- background ---------------------------------------------------------------------

    async def start_backfill(self) -> None:
        """Embed, in the background, the turns up to the newest now that lack a vector of
        the current model, after the last complete pass's mark."""
        if self.embedder is None:
            return
        upto = await self._rows.newest()
        after = await self._rows.done_upto(self.embedder.name)
        if upto and after < upto:
            self._backfill = (after, int(upto))
            self._progress = _Progress(after, int(upto))
            self._start()

    async def flush(self) -> None:
        """Until everything queued so far is written and the backfill is done (tests, bench)."""
        # Saved turns waiting for an embedding under way (keep_later): queued once it is done.
        while waiting := [self._later[k] for k in self._claims if k in self._later]:
            await asyncio.wait(waiting)
            await asyncio.sleep(0)  # their callbacks queue the turns
        while self._task is not None and not self._task.done():
            if not self._queue and self._backfill is None and self._idle.is_set():
                return
            self._wake.set()
            await asyncio.sleep(0.005)

    async def aclose(self, timeout_s: float = CLOSE_S) -> None:
        """Write what is queued within `timeout_s`, stop the backfill, drop the rest."""
        self._closed = True
        self._backfill = None
        for claim in self._claims.values():  # embedded in the deadline, or dropped
            self._queue.setdefault(claim.turn_id, claim)
        self._claims.clear()
        if self._queue:
            self._start()
        task, self._task = self._task, None
        if task is None:
            return
        self._wake.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                while self._queue or not self._idle.is_set():
                    if task.done():
                        break
                    await asyncio.sleep(0.005)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        dropped = [*self._queue, *(p.turn_id for p in self._inflight)]
        if dropped:
            log.warning(
                "vectors: %d turns closed without one; the next open embeds them", len(dropped)
            )
            with contextlib.suppress(Exception):  # storage down: the mark may stay too high
                await self._rows.lower_mark(min(dropped))
            self._queue.clear()

    def _start(self) -> None:
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            if 0 < len(self._queue) < self._live_batch and not self._closed:
                self._idle.clear()  # flush() sees the wait as work in progress
                await asyncio.sleep(LINGER_S)
                self._idle.set()
            if self._queue:
                batch = [self._queue.popitem(last=False)[1] for _ in range(self._take())]
            elif self._backfill is not None and not self._closed:
                batch = await self._backfill_step()
            else:
                if self._closed:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            if batch:
                await self._embed_and_write(batch)
            await asyncio.sleep(0)  # the turns' own work first

    def _take(self) -> int:
        return min(self._live_batch, len(self._queue))

    async def _embed_and_write(self, batch: Sequence[Pending]) -> None:
        self._idle.clear()
        self._inflight = list(batch)  # stays set only when cancelled (close): then dropped
        try:
            todo = [p.content for p in batch if p.vector is None]
            made = iter(await embed_packed(self.embedder, todo))
            vectors = [next(made) if p.vector is None else p.vector for p in batch]
            rows = [(p, v) for p, v in zip(batch, vectors, strict=True) if v is not None]
            self._lost |= len(rows) < len(batch)  # the embedder failed: no mark this pass
            if rows:
                self.written += await self._rows.write(self.embedder.name, rows)
            self._inflight = []
        except Exception:  # storage down: those turns are found by the next open's backfill
            self._lost = True
            self._inflight = []
            log.warning("vectors: %d not written", len(batch), exc_info=True)
        finally:
            self._idle.set()

    async def _backfill_step(self) -> list[Pending]:
        assert self._backfill is not None
        after, upto = self._backfill
        model = self.embedder.name
        try:
            batch = await self._rows.missing(model, after, upto, self._backfill_batch)
            if not batch:
                self._progress.done(model)
                if not self._lost:
                    self._idle.clear()  # flush() and aclose() wait for the mark's write
                    try:
                        await self._rows.mark(model, upto)
                    finally:
                        self._idle.set()
                self._backfill = None
                return []
        except Exception:
            log.warning("vectors: backfill stopped (the next open resumes it)", exc_info=True)
            self._backfill = None
            return []
        self._backfill = (batch[-1].turn_id, upto)
        self._progress.step(self.embedder.name, len(batch), batch[-1].turn_id)
        return batch


class _Progress:
    """The backfill's log lines: started, every PROGRESS_EVERY_S, done."""

    def __init__(self, after: int, upto: int) -> None:
        self.after, self.upto = after, upto
        self.count = 0
        self.started = self.logged = time.monotonic()

    def step(self, model: str, n: int, last_id: int) -> None:
        if self.count == 0:
            log.info(
                "vectors: embedding older turns lacking one of %s (turns %d to %d)",
                model, self.after + 1, self.upto,
            )  # fmt: skip
        self.count += n
        now = time.monotonic()
        if now - self.logged >= PROGRESS_EVERY_S:
            self.logged = now
            rate = self.count / max(now - self.started, 1e-9)
            log.info(
                "vectors: %d older turns embedded (at turn %d of %d, %.0f a second)",
                self.count, last_id, self.upto, rate,
            )  # fmt: skip

    def done(self, model: str) -> None:
        if self.count:
            log.info(
                "vectors: backfill done, %d older turns embedded by %s in %.1f s",
                self.count, model, time.monotonic() - self.started,
            )  # fmt: skip


def stores_query(embedder: Embedder | None) -> bool:
    """Whether the recall query's vector is the one a saved turn of the same text gets: not
    under a static model, whose question is embedded without its function words."""
    return embedder is not None and not getattr(embedder, "averages_tokens", False)
