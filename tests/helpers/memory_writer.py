"""Appends and summarizes in a loop until killed; prints each message once it is acknowledged.

Used by tests/test_memory_durability.py, which SIGKILLs this process at random moments.
Usage: python memory_writer.py <data dir> <run number>
"""

import asyncio
import sys

from memory import ConversationStore, MemoryPolicy

POLICY = MemoryPolicy(
    keep_recent=4,
    summarize_at=12,
    message_chars=200,
    summary_chars=400,
    recall_chars=200,
    history_chars=1000,
)


async def main(data_dir: str, run: str) -> None:
    store = await ConversationStore.open(data_dir, policy=POLICY)
    convs = await store.list_conversations("killer")
    conv = convs[0] if convs else await store.create_conversation("killer")
    print("ready", flush=True)
    i = 0
    while True:
        role = "user" if i % 2 == 0 else "assistant"
        content = f"run {run} message {i}: I live in Oslo and my code is {run}-{i}."
        await store.append("killer", conv.id, role, content)
        print(content, flush=True)  # acknowledged: append returned, so it was committed
        if i % 3 == 2:
            await store.summarize_if_needed("killer", conv.id)
        i += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
