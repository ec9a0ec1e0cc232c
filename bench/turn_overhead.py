"""Per-turn overhead: a whole ChatService turn with an instant fake model.

The model answers at once, so a turn's time is Mnemo's own work: persona, context (with recall
when available), saving the user's message, streaming, saving the reply. Metrics and
summarization run in the background after the reply; they are timed separately. Interleaved
with the bare store operations a turn cannot avoid (context, two appends) as the baseline.
"""

from __future__ import annotations

import random
import time

from bench.config import BenchConfig
from bench.datagen import filler_message
from bench.harness import Samples, Table, ms, ratio, write_result
from bench.strategies import default_embedder, recall_supported

NAME = "turn_overhead"
SEND = "ChatService.send() to Done"
BARE_RECALL = "store only: context(query=message) + 2 appends"
BARE_PLAIN = "store only: context() + 2 appends"


async def run(config: BenchConfig) -> None:
    from assistant.chat import ChatService, Done
    from bench.fake_model import InstantModel
    from memory import ConversationStore
    from personas import PersonaRegistry

    n_conv = config.pick(20, 5, 2)
    turns = config.pick(100, 30, 4)  # per conversation: 200 messages, so summaries happen
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(config.seed)
    owner = "bench-owner"

    # As the app runs: with its default embedder (a vector per message and per query).
    store = await ConversationStore.open(work / "data", embedder=default_embedder())
    service = ChatService(store, PersonaRegistry(data_dir=work / "data"), InstantModel())
    model = InstantModel()
    can_recall = recall_supported(store)
    kinds = [SEND, BARE_RECALL, BARE_PLAIN] if can_recall else [SEND, BARE_PLAIN]
    convs = {k: [(await store.create_conversation(owner)).id for _ in range(n_conv)] for k in kinds}
    samples = {k: Samples(k) for k in kinds}
    background = Samples("background")
    replies = 0

    async def bare_turn(conv_id: str, text: str, query: str | None) -> None:
        if query is None:
            await store.context(owner, conv_id)
        else:
            await store.context(owner, conv_id, query=query)
        await store.append(owner, conv_id, "user", text)
        await store.append(owner, conv_id, "assistant", model.reply)

    try:
        for _ in range(turns):
            for c in range(n_conv):
                text = filler_message(rng, "user")
                order = list(kinds)
                rng.shuffle(order)
                for kind in order:
                    conv_id = convs[kind][c]
                    start = time.perf_counter()
                    if kind == SEND:
                        async for event in service.send(owner, conv_id, text):
                            if isinstance(event, Done):
                                replies += event.status == "ok"
                        samples[kind].seconds.append(time.perf_counter() - start)
                        # Background work (metrics, summarization) finishes before the next
                        # timed call, so one turn's tail does not land on the other's time.
                        start = time.perf_counter()
                        await service.wait_background()
                        background.seconds.append(time.perf_counter() - start)
                    else:
                        await bare_turn(conv_id, text, text if kind == BARE_RECALL else None)
                        samples[kind].seconds.append(time.perf_counter() - start)
                        await store.summarize_if_needed(owner, conv_id)
        status = await store.status(owner, convs[SEND][0])
    finally:
        await service.aclose()
        await store.close()

    send, bare = samples[SEND], samples[kinds[1]]
    table = Table(
        f"One chat turn with an instant fake model ({n_conv} conversations × {turns} turns, "
        "interleaved with the bare store operations)",
        ["what", "turns", "p50 ms", "p99 ms", "max ms", "p50 / row 2's"],
    )
    for name, s in samples.items():
        table.add(name, s.count, ms(s.p50), ms(s.p99), ms(max(s.seconds)), ratio(s.p50, bare.p50))
    table.add(
        "background after the reply (metrics, summarization when due)",
        background.count, ms(background.p50), ms(background.p99), ms(max(background.seconds)),
        "—",
    )  # fmt: skip
    notes = [
        "Target: ≤ 5 ms median beyond the model.",
        f"Median ChatService turn {ms(send.p50)} ms with a model that answers instantly "
        f"({'met' if send.p50 <= 0.005 else 'missed'}); {replies} replies ok. After "
        f"{turns} turns a conversation holds {status.total} messages, {status.summaries} "
        f"summaries written, {status.active} active.",
        "'to Done' is what the person waits for beyond the model: reset check, quota (off), "
        "persona lookup and system prompt, context with recall, saving the user's message, "
        "streaming, saving the reply. The background row is the metrics write and, every "
        "~80 messages, a summarization (extractive), which run after Done. The database here "
        "holds only this benchmark's conversations; context_load.md has context(query=...) "
        "at 1M messages.",
    ]
    write_result(NAME, "Per-turn overhead", [table, *notes], out_dir=config.out_dir,
                 quick=config.quick)  # fmt: skip
