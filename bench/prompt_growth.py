"""Prompt growth: characters of history sent per turn over one 1,000-message conversation.

Before each user message, every strategy is asked for the history the model would get with it;
the figure is that history's characters plus the new message. Full history grows without end;
a bounded memory should stay flat at its budget. Writes a table and a PNG plot.
"""

from __future__ import annotations

from bench.baselines import DropOldest
from bench.config import BenchConfig
from bench.datagen import planted_conversation
from bench.harness import Table, write_result
from bench.strategies import (
    DropOldestStrategy,
    FullHistory,
    MnemoStrategy,
    ReferenceStrategy,
    chars,
    recall_supported,
)

NAME = "prompt_growth"
PLOT = "prompt_growth.png"


def plot(path, series: dict[str, list[tuple[int, int]]], budget: int) -> str | None:
    """Write the PNG; returns why not when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"plot skipped: matplotlib not importable ({exc})"
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for name, points in series.items():
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, label=name, linewidth=2 if name.startswith("Mnemo") else 1.4)
    ax.axhline(budget, color="grey", linestyle=":", linewidth=1,
               label=f"Mnemo's budget ({budget:,} characters)")  # fmt: skip
    ax.set_xlabel("message number in the conversation")
    ax.set_ylabel("characters of history + new message sent")
    ax.set_yscale("log")
    ax.set_title("Characters sent to the model per turn")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return None


async def run(config: BenchConfig) -> None:
    from memory import ConversationStore

    n_messages = config.pick(1_000, 300, 140)
    conversation = planted_conversation(config.seed, n_messages, n_facts=0)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)

    store = await ConversationStore.open(work / "mnemo")
    mnemo = await MnemoStrategy.create(store, "bench-owner")
    writers = [
        FullHistory(),
        ReferenceStrategy(work / "reference.db"),
        DropOldestStrategy(DropOldest()),
        mnemo,
    ]
    readers = list(writers)
    if recall_supported(store):
        readers.append(mnemo.view(recall=True))
    series: dict[str, list[tuple[int, int]]] = {s.name: [] for s in readers}
    try:
        for pos, (role, content) in enumerate(conversation.messages):
            if role == "user":
                for strategy in readers:
                    sent = chars(await strategy.context(query=content)) + len(content)
                    series[strategy.name].append((pos + 1, sent))
            for strategy in writers:
                await strategy.add(role, content)
        budget = (await store.context("bench-owner", mnemo.conv_id)).budget
    finally:
        await store.close()

    config.out_dir.mkdir(parents=True, exist_ok=True)
    plot_problem = plot(config.out_dir / PLOT, series, budget)
    marks = [m for m in (50, 100, 250, 500, 750, 1000) if m <= n_messages]
    table = Table(
        f"Characters sent per turn (history + new message), one {n_messages:,}-message "
        "conversation; columns: at message N",
        ["strategy", *[f"@{m}" for m in marks], "max", "mean", "sum over all turns"],
    )
    for name, points in series.items():
        by_pos = dict(points)
        row = [f"{by_pos.get(m if m % 2 else m - 1, by_pos.get(m, 0)):,}" for m in marks]
        values = [v for _, v in points]
        table.add(name, *row, f"{max(values):,}", f"{sum(values) / len(values):,.0f}",
                  f"{sum(values):,}")  # fmt: skip
    full_sum = sum(v for _, v in series["full history"])
    mnemo_sum = sum(v for _, v in series["Mnemo"])
    mnemo_tail = [v for p, v in series["Mnemo"] if p > 120]
    notes = [
        "Target: Mnemo's characters per turn flat at the budget (plot vs full history).",
        f"Mnemo over the whole conversation sends {mnemo_sum / full_sum:.1%} of the characters "
        f"full history sends; after message 120 its per-turn size stays between "
        f"{min(mnemo_tail, default=0):,} and {max(mnemo_tail, default=0):,} characters "
        f"(budget {budget:,}).",
        "Messages are generated chat filler (about 200 characters each). Mnemo summarizes with "
        "its built-in extractive summarizer; the reference design with its 10,000-character "
        "concatenate-and-truncate summary; drop-oldest keeps 10 rounds, 500 chars each, 6,000 "
        "in total. The system prompt (the same for all) is not counted.",
        plot_problem or f"![characters per turn]({PLOT})",
    ]
    write_result(NAME, "Prompt growth", [table, *notes], out_dir=config.out_dir,
                 quick=config.quick)  # fmt: skip
