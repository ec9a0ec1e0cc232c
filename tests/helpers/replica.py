"""One replica of the app's memory in its own process, on a shared PostgreSQL.

Used by tests/test_memory_replicas.py. Opens the store through `memory.open_store(url)` as the
app does, prints "ready", waits for a line on stdin (so several replicas start at the same
moment), runs the command, prints what happened.

Usage: python replica.py <url> <owner> <conversation id> write <tag> <writers> <per writer>
       python replica.py <url> <owner> <conversation id> summarize
"""

import asyncio
import sys

from memory import MemoryPolicy, open_store

POLICY = MemoryPolicy(
    keep_recent=2,
    summarize_at=6,
    message_chars=200,
    summary_chars=400,
    recall_chars=200,
    history_chars=1000,
)


class SlowSummarizer:
    """Takes long enough that both replicas are inside summarize_if_needed together."""

    async def summarize(self, previous, turns, max_chars):
        await asyncio.sleep(0.5)
        return f"- User: {len(turns)} messages folded by one replica"


async def write(store, owner, conv_id, tag, writers, per_writer):
    async def writer(n):
        for j in range(per_writer):
            await store.append(owner, conv_id, "user", f"{tag}{n}-{j}")

    await asyncio.gather(*(writer(n) for n in range(writers)))
    print(f"wrote {writers * per_writer}", flush=True)


async def main(url, owner, conv_id, command, *args):
    store = await open_store(url, policy=POLICY, summarizer=SlowSummarizer())
    try:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        if command == "write":
            await write(store, owner, conv_id, args[0], int(args[1]), int(args[2]))
        else:
            print(f"folded {await store.summarize_if_needed(owner, conv_id)}", flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
