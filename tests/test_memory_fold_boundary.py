"""No turn falls between the summary and the recent window (issue 11, bug 1b)."""

from __future__ import annotations

import random

import pytest

from memory import ConversationStore, MemoryPolicy


async def gap(store, owner, conv_id):
    """(turns in neither the summary nor the window, the window's not_shown count)."""
    ctx = await store.context(owner, conv_id)
    covered_to = ctx.summary.covers_to_id if ctx.summary else 0
    shown = {t.id for t in ctx.turns}
    turns = [t for t in await store.transcript(owner, conv_id) if not t.is_summary]
    between = [t for t in turns if t.id > covered_to and t.id not in shown]
    assert all(t.id < min(shown) for t in between) if shown else True
    return between, ctx.not_shown


async def test_after_101_messages_the_reply_after_the_fold_is_not_lost(tmp_path):
    store = await ConversationStore.open(tmp_path)
    try:
        conv = await store.create_conversation("ana")
        for i in range(101):
            await store.append("ana", conv.id, ("user", "assistant")[i % 2], f"message {i}")
        assert await store.summarize_if_needed("ana", conv.id)
        between, not_shown = await gap(store, "ana", conv.id)
        assert between == [] and not_shown == 0
        ctx = await store.context("ana", conv.id)
        assert ctx.turns[0].role == "user"
        # The assistant turn right after the first 81 went into the summary with them.
        assert ctx.summary.covers_count == 82 and len(ctx.turns) == 19
    finally:
        await store.close()


@pytest.mark.parametrize("seed", range(16))
async def test_randomized_fold_boundaries_leave_nothing_between(tmp_path, seed):
    rng = random.Random(seed)
    keep = rng.randint(1, 8)
    policy = MemoryPolicy(
        keep_recent=keep,
        summarize_at=keep + rng.randint(1, 10),
        fold_max=rng.choice([2, 5, 1_000]),
        message_chars=200,
        summary_chars=400,
        recall_chars=0,
        history_chars=50_000,  # no eviction for budget: only the fold decides
    )
    store = await ConversationStore.open(tmp_path, policy=policy)
    try:
        conv = await store.create_conversation("ana")
        role = rng.choice(["user", "assistant"])  # a chat may open on a greeting
        folds = 0
        for i in range(rng.randint(40, 120)):
            await store.append("ana", conv.id, role, f"turn {i} " + "x" * rng.randint(0, 50))
            while await store.summarize_if_needed("ana", conv.id):
                folds += 1
                between, not_shown = await gap(store, "ana", conv.id)
                # What is between is exactly what the badge counts as waiting for the next
                # fold (a backlog larger than fold_max); an uncapped fold leaves nothing.
                assert len(between) == not_shown
                if policy.fold_max == 1_000:
                    assert between == []
            # Mostly turn-taking; sometimes two of a kind (a retried or stopped reply).
            if rng.random() > 0.15:
                role = "assistant" if role == "user" else "user"
        assert folds > 0
    finally:
        await store.close()
