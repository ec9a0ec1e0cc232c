"""Load over real HTTP on 127.0.0.1: N clients × M streamed messages against a running app.

The app runs in a process of its own (bench/api_server.py, the same web app `python app.py`
serves), the clients in this one. Each client has its own owner, API token and conversation
and sends its messages one after another, each as soon as the previous reply is done (a
closed loop: N messages always in flight, the server never idle). Scenarios:

- API, instant model: the time to the first streamed byte is all Mnemo's (auth, persona,
  context with recall, saving the message, the SSE response), nothing is the model's.
- API, instant first chunk, 1 s streams: the same model, but each reply's stream stays open
  for 1 s after its instant first chunk, so 50 streams are open at once while the server adds
  what it adds to each new message's first byte.
- API, 1 s streams, arrivals independent: as the row above, but the clients start at random
  moments within the first second and each reply streams for 0.5-1.5 s (set by its text), so
  the 50 streams stay open while new messages arrive one by one rather than 50 in the same
  millisecond (in the rows above every reply lasts exactly 1 s, so the clients stay in step and
  each second's 50 messages arrive together and queue behind each other). How many streams were
  open when each message was sent is reported with it.
- API, fake Gemini: the real google-genai client streaming from the fake Gemini server.
- Gradio queue, instant model: the same facade call through a Gradio event driven by
  gradio_client (queue join + SSE), as the UI's messages travel.
- API, instant model, paced: each client waits 1 s between messages (people and bots do),
  so the server is not saturated.
- API, instant model, one client at a time (10 clients in turn): one message at a time, the
  server otherwise idle — the baseline, in the same run, for the loaded rows' first byte.
- The two target rows (closed loop, and 1 s streams) again against the app as it was at
  PREVIOUS (`git archive` into a temporary directory, served from there), interleaved with
  this tree's (previous, this, this, previous), so a before/after ratio is taken on the same
  machine load.

Afterwards every conversation is read back from SQLite: each message sent must be stored
exactly once, in its own conversation, followed by its own reply (0 lost, 0 duplicated,
0 cross-owner).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import secrets
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from api.server import settle_heap
from assistant.runtime import Runtime
from bench.api_server import EchoModel
from bench.config import BenchConfig
from bench.harness import Table, git_tree, ms, percentile, write_result

ROOT = Path(__file__).resolve().parent.parent
# The code the target rows are compared with: main before the first-byte work (urgent writes,
# one-hop transactions, two readers). Its database schema is this tree's (same migrations).
PREVIOUS = "eec8fbc"
PACE_S = 1.0
STREAM_S = 1.0  # the "stream" model: first chunk at once, the reply over this many seconds
# One TLS context for every client (the URLs are plain http, but httpx builds a context per
# client): building one loads the CA bundle, 20-25 ms on the clients' event loop, so the 50
# clients' start stalled their loop for 1.1 s while the first messages' replies came in.
CLIENT_TLS = ssl.create_default_context()


@dataclass
class Client:
    owner: str
    token: str = ""
    conversation: str = ""
    sent: list[str] = field(default_factory=list)


@dataclass
class Run:
    name: str
    first_byte: list[float] = field(default_factory=list)
    whole: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    check: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0  # requests sent and not yet answered in full, now
    open_at_send: list[int] = field(default_factory=list)  # the others in flight at each send


# ---- processes ---------------------------------------------------------------------------


@contextlib.contextmanager
def process(*args: str, root: Path = ROOT):
    """A `python -m bench.api_server ...` process run from `root` (this tree, or PREVIOUS's);
    yields the URL it prints when ready."""
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    env.pop("MNEMO_QUOTA_PER_HOUR", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.api_server", *args],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("READY "):
            raise RuntimeError(f"bench.api_server {' '.join(args)} did not start: {line!r}")
        yield line.split()[1]
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


async def prepare(data_dir: Path, count: int, tag: str) -> list[Client]:
    """Owners with a token each, issued through the facade (as the UI's token panel does)
    into the app's database."""
    rt = Runtime(data_dir, model=EchoModel())
    try:
        facade = await rt.conversations()
        clients = [Client(f"b-{tag}-{i:03d}-{secrets.token_urlsafe(8)}") for i in range(count)]
        for c in clients:
            c.token = (await facade.issue_token(c.owner, "load test")).secret
        return clients
    finally:
        await rt.close()


async def warm_up(url: str, data_dir: Path) -> None:
    """One message by an owner of its own, so first-use costs (opening the database, loading
    the persona, the model client) are not in the timed rows."""
    (client,) = await prepare(data_dir, 1, "warmup")
    await api_client(url, client, 2, 0.0, Run("warm-up"))


# ---- API clients -------------------------------------------------------------------------


async def api_client(
    url: str, c: Client, messages: int, pace: float, run: Run, start_after: float = 0.0
) -> None:
    headers = {"Authorization": f"Bearer {c.token}"}
    async with httpx.AsyncClient(
        base_url=url + "/api/v1", headers=headers, timeout=120, verify=CLIENT_TLS
    ) as http:
        c.conversation = (await http.post("/conversations", json={})).json()["id"]
        if start_after:
            await asyncio.sleep(start_after)
        for i in range(messages):
            text = f"{c.owner} message {i}: what did I say before?"
            run.open_at_send.append(run.in_flight)
            run.in_flight += 1
            started = time.perf_counter()
            first = None
            try:
                async with http.stream(
                    "POST", f"/conversations/{c.conversation}/messages", json={"text": text}
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        run.errors.append(f"{response.status_code} {response.text[:120]}")
                        continue
                    body = b""
                    async for chunk in response.aiter_raw():
                        if first is None:
                            first = time.perf_counter() - started
                        body += chunk
                if b"event: done" not in body:
                    run.errors.append("stream ended without a done event")
                    continue
            except httpx.HTTPError as exc:
                run.errors.append(type(exc).__name__)
                continue
            finally:
                run.in_flight -= 1
            c.sent.append(text)
            run.first_byte.append(first or 0.0)
            run.whole.append(time.perf_counter() - started)
            if pace:
                await asyncio.sleep(pace)


async def run_api(
    url: str,
    clients: list[Client],
    messages: int,
    pace: float,
    run: Run,
    starts: list[float] | None = None,
) -> None:
    """The clients at once; `starts`: each client's first message that many seconds late."""
    starts = starts or [0.0] * len(clients)
    started = time.perf_counter()
    await asyncio.gather(
        *(api_client(url, c, messages, pace, run, t) for c, t in zip(clients, starts, strict=True))
    )
    run.seconds = time.perf_counter() - started


# ---- Gradio queue clients ----------------------------------------------------------------


def ui_client(url: str, c: Client, messages: int, run: Run, lock: threading.Lock) -> None:
    from gradio_client import Client as GradioClient

    gradio = GradioClient(url + "/probe/", verbose=False, download_files=False)
    for i in range(messages):
        text = f"{c.owner} message {i}: what did I say before?"
        started = time.perf_counter()
        first = None
        try:
            job = gradio.submit(c.owner, c.conversation, text, api_name="/chat")
            for _ in job:
                if first is None:
                    first = time.perf_counter() - started
            job.result()
        except Exception as exc:  # a failed call is counted, the load goes on
            with lock:
                run.errors.append(f"{type(exc).__name__}: {str(exc)[:100]}")
            continue
        with lock:
            c.sent.append(text)
            run.first_byte.append(first or 0.0)
            run.whole.append(time.perf_counter() - started)


async def run_ui(url: str, clients: list[Client], messages: int, run: Run) -> None:
    async with httpx.AsyncClient(base_url=url + "/api/v1", timeout=60) as http:
        for c in clients:  # the conversations are made over the API; the load is the queue's
            r = await http.post(
                "/conversations", json={}, headers={"Authorization": f"Bearer {c.token}"}
            )
            c.conversation = r.json()["id"]
    lock = threading.Lock()
    threads = [
        threading.Thread(target=ui_client, args=(url, c, messages, run, lock)) for c in clients
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    await asyncio.to_thread(lambda: [t.join() for t in threads])
    run.seconds = time.perf_counter() - started


# ---- checking what was stored ------------------------------------------------------------


def verify(db_path: Path, clients: list[Client]) -> dict[str, int]:
    """Compare what each client sent with what its conversation holds, straight from SQLite."""
    lost = duplicated = cross = wrong_reply = 0
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
        for c in clients:
            rows = db.execute(
                "SELECT c.owner, t.role, t.content FROM turns t JOIN conversations c "
                "ON c.id = t.conversation_id WHERE t.conversation_id = ? ORDER BY t.id",
                (c.conversation,),
            ).fetchall()
            cross += sum(1 for owner, _, content in rows if owner != c.owner)
            cross += sum(1 for _, _, content in rows if c.owner not in content)
            questions = [content for _, role, content in rows if role == "user"]
            lost += sum(1 for text in c.sent if text not in questions)
            duplicated += len(questions) - len(set(questions))
            pairs = zip(rows[::2], rows[1::2], strict=False)
            wrong_reply += sum(
                1
                for (_, r1, q), (_, r2, a) in pairs
                if (r1, r2) != ("user", "assistant") or a != "You said: " + q[:200]
            )
            wrong_reply += len(rows) - 2 * len(c.sent)
    return {"lost": lost, "duplicated": duplicated, "cross_owner": cross, "bad_pairs": wrong_reply}


# ---- the benchmark -----------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One row: `model` is "instant", "stream" (instant first chunk, 1 s streams) or
    "gemini"; `path` "api" or "ui"; `pace` seconds between a client's messages; `alone`: the
    clients one after another, so one message at a time (a fifth of them: 200 messages);
    `previous`: the app at PREVIOUS serves it; `independent` (the stream model): the clients
    start at random moments within the first `STREAM_S` and the replies' streams last
    0.5-1.5 × `STREAM_S`, so the clients do not send in step."""

    name: str
    model: str
    path: str
    pace: float = 0.0
    alone: bool = False
    previous: bool = False
    independent: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} · before ({PREVIOUS})" if self.previous else self.name

    @property
    def target(self) -> bool:
        """A row the first-byte target is about: the API loaded, instant model, unpaced."""
        return self.path == "api" and self.model != "gemini" and not self.pace and not self.alone


async def scenario(config: BenchConfig, index: int, s: Scenario, previous_root: Path) -> Run:
    clients_n = config.pick(50, 10, 3) // (5 if s.alone else 1)
    messages = config.pick(20, 5, 2)
    data = config.work_dir / f"api-load-{index}"
    clients = await prepare(data, clients_n, s.name.split()[0].lower())
    run = Run(s.label)
    root = previous_root if s.previous else ROOT
    with contextlib.ExitStack() as stack:
        args = ["--data", str(data), "--model", "instant"]
        if s.model == "stream":
            args += ["--stream-s", str(STREAM_S)]
        if s.independent:
            args.append("--stream-jitter")
        if s.model == "gemini":
            gemini = stack.enter_context(process("--fake-gemini"))
            args = ["--data", str(data), "--model", "gemini", "--gemini-url", gemini]
        url = stack.enter_context(process(*args, root=root))
        await warm_up(url, data)
        # The clients' process sets its heap aside from the cycle collector, as the server
        # does (api.server.settle_heap): with the Runtime that issued the tokens and the
        # imports alive, a full collection stopped the clients' loop for 80 ms mid-run, and
        # every first byte then due was read that much later.
        settle_heap()
        if s.alone:
            for client in clients:
                one = Run(s.label)
                await run_api(url, [client], messages, s.pace, one)
                run.first_byte += one.first_byte
                run.whole += one.whole
                run.errors += one.errors
                run.seconds += one.seconds
        elif s.path == "api":
            seeded = random.Random(f"{s.name} {clients_n}")
            starts = [seeded.uniform(0, STREAM_S) for _ in clients] if s.independent else None
            await run_api(url, clients, messages, s.pace, run, starts)
        else:
            await run_ui(url, clients, messages, run)
        await asyncio.sleep(0.5)  # background metrics writes after the last reply
    run.check = verify(data / "mnemo.db", clients)
    run.check["expected"] = clients_n * messages
    run.check["stored"] = sum(len(c.sent) for c in clients)
    return run


def _both(name: str, model: str) -> list[Scenario]:
    """A target row before and after, interleaved so that a drift of the machine's load
    falls on both alike (previous, this, this, previous)."""
    before, after = Scenario(name, model, "api", previous=True), Scenario(name, model, "api")
    return [before, after, after, before]


CLOSED = "API · instant model"
STREAMS = f"API · instant first chunk, {STREAM_S:.0f} s streams"
INDEPENDENT = f"API · instant first chunk, 0.5-{1.5 * STREAM_S:.1f} s streams, arrivals independent"
BASELINE = "API · instant model · one client at a time (baseline)"
SCENARIOS = [
    Scenario(BASELINE, "instant", "api", alone=True),
    *_both(CLOSED, "instant"),
    *_both(STREAMS, "stream"),
    Scenario(INDEPENDENT, "stream", "api", independent=True),
    Scenario("API · fake Gemini", "gemini", "api"),
    Scenario("Gradio queue (gradio_client) · instant model", "instant", "ui"),
    Scenario(f"API · instant model · {PACE_S:.0f} s between messages", "instant", "api", PACE_S),
]


def _pooled(runs: list[tuple[Scenario, Run]], name: str, previous: bool) -> list[float]:
    return [t for s, r in runs if s.name == name and s.previous == previous for t in r.first_byte]


def verdicts(runs: list[tuple[Scenario, Run]]) -> list[str]:
    """Per target row: this tree's first byte (its runs pooled) against the target, the
    baseline of the same run and PREVIOUS's runs."""
    baseline = next((r for s, r in runs if s.alone), None)
    out = []
    for name in dict.fromkeys(s.name for s, _ in runs if s.target):
        this, before = _pooled(runs, name, False), _pooled(runs, name, True)
        if not this:
            continue
        p50, p99 = percentile(this, 50) * 1000, percentile(this, 99) * 1000
        line = f"{name}: p99 {p99:.0f} ms — {'met' if p99 <= 50 else 'missed'} (p50 {p50:.1f} ms"
        if before:
            b50, b99 = percentile(before, 50) * 1000, percentile(before, 99) * 1000
            line += (
                f"; before ({PREVIOUS}) p50 {b50:.1f}, p99 {b99:.0f} ms: "
                f"p50 {p50 / b50:.2f}×, p99 {p99 / b99:.2f}× of before"
            )
        if baseline is not None and baseline.first_byte:
            a50, a99 = percentile(baseline.first_byte, 50), percentile(baseline.first_byte, 99)
            line += f"; one client alone p50 {a50 * 1000:.1f}, p99 {a99 * 1000:.1f} ms"
        opened = [n for s, r in runs if s.name == name and not s.previous for n in r.open_at_send]
        line += (
            f"; other streams open when a message was sent: p50 {percentile(opened, 50):.0f}, "
            f"p10 {percentile(opened, 10):.0f}"
        )
        out.append(line + ")")
    return out


async def run(config: BenchConfig) -> None:
    clients_n, messages = config.pick(50, 10, 3), config.pick(20, 5, 2)
    table = Table(
        f"{clients_n} concurrent clients × {messages} streamed messages each, over HTTP on "
        "127.0.0.1 (app in its own process)",
        [
            "path",
            "messages/s",
            "first byte p50 ms",
            "first byte p99 ms",
            "whole reply p50 ms",
            "p99 ms",
            "errors",
            "stored / sent",
            "lost · duplicated · cross-owner · mismatched",
        ],
    )
    runs: list[tuple[Scenario, Run]] = []
    with tempfile.TemporaryDirectory(prefix="mnemo-previous-", dir=config.work_dir) as tmp:
        previous_root = git_tree(PREVIOUS, Path(tmp))
        for index, s in enumerate(SCENARIOS):
            if config.size == "tiny" and (s.pace or s.model == "stream" or s.alone):
                continue  # the smoke test runs the three paths once, briefly
            if s.previous and (config.size == "tiny" or previous_root is None):
                continue  # (PREVIOUS not in this checkout: a shallow clone)
            result = await scenario(config, index, s, previous_root or ROOT)
            runs.append((s, result))
            c = result.check
            table.add(
                result.name,
                f"{len(result.whole) / result.seconds:,.0f}" if result.seconds else "—",
                ms(percentile(result.first_byte, 50)),
                ms(percentile(result.first_byte, 99)),
                ms(percentile(result.whole, 50)),
                ms(percentile(result.whole, 99)),
                len(result.errors),
                f"{c['stored']} / {c['expected']}",
                f"{c['lost']} · {c['duplicated']} · {c['cross_owner']} · {c['bad_pairs']}",
            )
            print(f"{result.name}: done, load average {os.getloadavg()[0]:.1f}", flush=True)
            if result.errors:
                print(f"{result.name}: errors, first: {result.errors[:3]}", flush=True)
    notes = [
        table,
        f"Target: time to first streamed byte added by the server, p99 ≤ 50 ms at "
        f"{clients_n} concurrent streams (instant model). " + "; ".join(verdicts(runs)) + ".",
        f"Before/after: the target rows were run twice with this tree and twice with the app "
        f"at {PREVIOUS} (main before the first-byte work), interleaved previous, this, this, "
        "previous; the verdict pools each side's two runs. The load average after each row is "
        "printed while the benchmark runs.",
        "First byte: from sending the request to the first byte of the response body (the "
        "first `delta` event; the status line comes with it, since errors found before the "
        "reply starts are answered as problem documents instead). With the instant model "
        "that is all server time. In a closed loop the server is always saturated, so the "
        "times include waiting behind the other clients' turns on one event loop (Little's "
        "law: in flight / throughput); the paced row shows the unsaturated cost.",
        "The Gradio row drives a one-event page (bench/api_server.py `/probe`) whose public "
        "streaming endpoint makes the same facade call as the UI's send button, with the "
        "app's queue setting (8 at a time). The app's own page fires four more small events "
        "per message (show the message, lock controls, re-read, unlock), so the UI costs at "
        "least this.",
        "Checked afterwards in SQLite: every message each client sent is in its own "
        "conversation exactly once, directly followed by its own reply ('You said: ...').",
    ]
    write_result(
        "api_load",
        "HTTP API under load",
        notes,
        out_dir=config.out_dir,
        quick=config.quick,
    )
    print(json.dumps({r.name: r.check for _, r in runs}), flush=True)
