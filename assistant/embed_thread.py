"""`EmbedThread`: one thread that runs a CPU-bound embedder's work for every event loop, a
turn's question ahead of background batches, and questions asked together as one batch.

USE costs ~3 ms of CPU for one text and ~1.3 ms a text in a batch of ten or more
(bench/results/api_load.md). With `asyncio.to_thread`, 50 questions arriving together ran
in the default executor's six threads at once: six threads holding the GIL by turns beside
the event loop, each question paying the single-text price, and the turn's other thread hops
(the persona) waiting in the same executor behind them. Here:

- One thread embeds, one batch at a time, so it is one thread beside the loop, not six.
- A call of up to `URGENT_TEXTS` texts (the new message and its content words, which its
  turn waits for: memory/vectors.embed_query) goes in the urgent lane; the urgent calls waiting
  when the thread is free are encoded as one batch (up to `max_batch` texts), so a burst of
  questions pays the batch price.
- Longer calls (the background filler's replies, a backfill, an import) are encoded
  `chunk` texts at a time, and urgent calls go first between chunks: a question waits at most
  one chunk behind background work.

Results go back to the caller's loop (`call_soon_threadsafe`); a caller that was cancelled
meanwhile is skipped. The thread is a daemon and lives as long as the process (the embedder
it serves is shared by every Runtime of the process).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_BATCH = 16  # urgent texts encoded together (USE: ~1.3 ms a text at 10-16, 3 ms alone)
# A turn's question is one or two texts (the message, and its content words under a sentence
# model). Two-text questions in the background lane, behind replies and without batching,
# made the closed-loop API row 1.9x slower (bench api_load: 139-150 -> 77-78 messages/s).
URGENT_TEXTS = 2
CHUNK = 8  # background texts per encoding, between which urgent ones go first


@dataclass
class _Job:
    texts: list[str]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[np.ndarray]
    parts: list[np.ndarray] = field(default_factory=list)
    done: int = 0  # texts encoded so far


class EmbedThread:
    """Runs `encode(texts) -> (n, dims) float32` on one daemon thread (module docstring)."""

    def __init__(
        self,
        encode: Callable[[list[str]], np.ndarray],
        name: str = "mnemo-embed",
        max_batch: int = MAX_BATCH,
        chunk: int = CHUNK,
    ) -> None:
        self._encode = encode
        self._name = name
        self._max_batch = max_batch
        self._chunk = chunk
        self._urgent: deque[_Job] = deque()
        self._background: deque[_Job] = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text (at least one), encoded on the thread; a call of up to
        `URGENT_TEXTS` texts is urgent."""
        loop = asyncio.get_running_loop()
        job = _Job(list(texts), loop, loop.create_future())
        with self._wake:
            urgent = len(job.texts) <= URGENT_TEXTS
            (self._urgent if urgent else self._background).append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._wake.notify()
        return await job.future

    def _next(self) -> tuple[list[_Job], list[str], bool]:
        """The jobs and texts of the next encoding, and whether it is a chunk of a background
        job (called holding the condition)."""
        while True:
            for lane in (self._urgent, self._background):
                while lane and lane[0].future.done():  # its caller went away
                    lane.popleft()
            if self._urgent:
                jobs: list[_Job] = []
                texts: list[str] = []
                while self._urgent and (
                    not jobs or len(texts) + len(self._urgent[0].texts) <= self._max_batch
                ):
                    job = self._urgent.popleft()
                    if not job.future.done():
                        jobs.append(job)
                        texts += job.texts
                return jobs, texts, False
            if self._background:
                job = self._background[0]
                texts = job.texts[job.done : job.done + self._chunk]
                if job.done + len(texts) >= len(job.texts):
                    self._background.popleft()
                return [job], texts, True
            self._wake.wait()

    def _run(self) -> None:
        while True:
            with self._wake:
                jobs, texts, chunk = self._next()
            try:
                vectors = np.asarray(self._encode(texts), dtype=np.float32)
                error = None
            except Exception as exc:  # the callers get the error, the thread goes on
                vectors, error = None, exc
            if chunk:  # of one background job
                job = jobs[0]
                if error is None:
                    job.parts.append(vectors)
                    job.done += len(texts)
                    if job.done >= len(job.texts):
                        _deliver(job, np.concatenate(job.parts), None)
                else:
                    with self._wake:
                        if self._background and self._background[0] is job:
                            self._background.popleft()
                    _deliver(job, None, error)
                continue
            start = 0
            for job in jobs:
                end = start + len(job.texts)
                _deliver(job, None if vectors is None else vectors[start:end], error)
                start = end


def _deliver(job: _Job, vectors: np.ndarray | None, error: BaseException | None) -> None:
    def settle() -> None:
        if job.future.done():
            return
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(vectors)

    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
        job.loop.call_soon_threadsafe(settle)
