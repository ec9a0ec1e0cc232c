"""Memory quality: how many planted facts are still in what the model sees, per strategy.

Generated conversations plant facts (names, numbers, dates, preferences) at random user turns
among filler that itself mentions places, numbers and first-person chatter; no fact sits in the
last 40 messages. At the end the user asks about each fact; a fact counts as remembered when
all its key words appear in the history the strategy would send with that question. The
strategies' sizes are reported next to their scores: the comparison that matters is score at a
given size, and "drop-oldest at Mnemo's budget" is the plain recency window given exactly
Mnemo's character budget.
"""

from __future__ import annotations

from collections import defaultdict

from bench.baselines import DropOldest
from bench.config import BenchConfig
from bench.datagen import found, planted_conversation
from bench.harness import Table, write_result
from bench.strategies import (
    DropOldestStrategy,
    FullHistory,
    MnemoStrategy,
    ReferenceStrategy,
    chars,
    default_embedder,
    recall_supported,
)

NAME = "memory_quality"
KINDS = ("name", "number", "date", "preference")


async def run(config: BenchConfig) -> None:
    from memory import ConversationStore, MemoryPolicy

    n_conversations = config.pick(12, 2, 1)
    n_messages = config.pick(800, 300, 130)
    n_facts = config.pick(12, 8, 4)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)
    policy = MemoryPolicy()
    budget = policy.history_chars
    # The plain recency window given exactly Mnemo's budget: no round limit, Mnemo's clip.
    same_budget = DropOldest(rounds=10_000, message_chars=policy.message_chars, total_chars=budget)

    store = await ConversationStore.open(work / "mnemo", policy=policy, embedder=default_embedder())
    can_recall = recall_supported(store)
    hits: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    sizes: dict[str, list[int]] = defaultdict(list)
    order: list[str] = []
    total_facts = 0
    recalled_turns = 0
    try:
        for c in range(n_conversations):
            conversation = planted_conversation(config.seed * 1000 + c, n_messages, n_facts)
            mnemo = await MnemoStrategy.create(store, f"bench-owner-{c}")
            writers = [
                FullHistory(),
                ReferenceStrategy(work / f"reference-{c}.db"),
                DropOldestStrategy(DropOldest()),
                DropOldestStrategy(same_budget, name="drop-oldest at Mnemo's budget"),
                mnemo,
            ]
            readers = list(writers)
            if can_recall:
                readers.append(mnemo.view(recall=True))
            for role, content in conversation.messages:
                for strategy in writers:
                    await strategy.add(role, content)
            for fact in conversation.facts:
                total_facts += 1
                for strategy in readers:
                    texts = await strategy.context(query=fact.question)
                    if strategy.name not in order:
                        order.append(strategy.name)
                    sizes[strategy.name].append(chars(texts))
                    if found(fact, "\n".join(texts)):
                        hits[strategy.name][fact.kind] += 1
                        hits[strategy.name]["all"] += 1
            if can_recall:
                recalled_turns += readers[-1].recalled_turns
    finally:
        await store.close()

    full_score = hits["full history"]["all"] / total_facts
    full_size = sum(sizes["full history"]) / len(sizes["full history"])
    table = Table(
        f"Planted facts whose key words are in the history sent with the question "
        f"({n_conversations} conversations × {n_messages} messages, {total_facts} facts)",
        ["strategy", "facts found", "score", "vs full history's score", "mean history chars",
         "size vs full history"],
    )  # fmt: skip
    for name in order:
        score = hits[name]["all"] / total_facts
        size = sum(sizes[name]) / len(sizes[name])
        table.add(
            name, f"{hits[name]['all']}/{total_facts}", f"{score:.0%}",
            f"{score / full_score:.0%}" if full_score else "—", f"{size:,.0f}",
            f"{size / full_size:.1%}",
        )  # fmt: skip
    kinds = Table(
        "Found, by kind of fact",
        ["strategy", *KINDS],
    )
    per_kind = total_facts // len(KINDS) if total_facts >= len(KINDS) else 1
    for name in order:
        kinds.add(name, *[f"{hits[name][k]}/{per_kind}" for k in KINDS])
    notes = ["Target: Mnemo with recall ≥ 90% of full history's score at ≤ 15% of its size."]
    if can_recall:
        name = "Mnemo with recall"
        score = hits[name]["all"] / total_facts
        size = sum(sizes[name]) / len(sizes[name])
        met = score >= 0.9 * full_score and size <= 0.15 * full_size
        notes.append(
            f"Mnemo with recall: {score / full_score:.0%} of full history's score at "
            f"{size / full_size:.1%} of its size ({'met' if met else 'missed'}); "
            f"{recalled_turns} turns recalled in all."
        )
    else:
        notes.append("Mnemo with recall: not measured, this memory/ build has no recall yet.")
    notes.append(
        "Mnemo uses its default policy (20 recent messages, 16,000 characters in all, summary "
        "≤ 2,000, recall ≤ 8,000 within the 16,000, as rendered for the model: date lines and "
        "labels count) and its built-in extractive summarizer, "
        "summarizing after every message as the app does in the background. The reference "
        "design: its 10,000-character concatenate-and-truncate summary + its newest 20 rows "
        "(as published its LIMIT 20 load drops the summary row, which sorts before the rows it "
        "kept; here it gets the summary anyway); drop-oldest keeps 10 rounds, 500 characters "
        "per message, 6,000 in all. Key words are matched case-insensitively in the summary, "
        "recalled and recent messages (the question itself is not counted). The questions "
        'reuse the fact\'s own words ("What was the name of my dentist again?" for "my '
        'dentist is called ..."), which suits keyword recall; a paraphrase sharing no word '
        "with the fact would not be recalled."
    )
    write_result(NAME, "Memory quality", [table, kinds, *notes], out_dir=config.out_dir,
                 quick=config.quick)  # fmt: skip
