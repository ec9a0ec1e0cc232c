"""Streams one chat reply through the real ChatService until killed; prints each chunk.

Used by tests/test_reply_progress.py, which SIGKILLs this process mid-reply.
Usage: python chat_turn.py <data dir> <fake Gemini url> <owner>
"""

import asyncio
import sys

from assistant.chat import ChatService, Delta
from assistant.gemini import GeminiModel
from memory import ConversationStore
from personas import PersonaRegistry


async def main(data_dir: str, url: str, owner: str) -> None:
    store = await ConversationStore.open(data_dir)
    service = ChatService(store, PersonaRegistry(data_dir=data_dir), GeminiModel("k", base_url=url))
    conv = await store.create_conversation(owner)
    print("conversation", conv.id, flush=True)
    async for event in service.send(owner, conv.id, "Tell me a long story"):
        if isinstance(event, Delta):
            print("delta", event.text, flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
