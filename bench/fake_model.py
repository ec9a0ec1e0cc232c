"""An instant chat model (the ChatModel protocol): replies at once, so what is timed is Mnemo."""

from __future__ import annotations

from assistant.models import ReplyStream, Usage


class InstantModel:
    """Streams a fixed reply in one chunk with no delay."""

    name = "instant fake model"
    model_id = "instant-fake"

    def __init__(self, reply: str = "Noted. Tell me more about that, I am listening.") -> None:
        self.reply = reply

    def stream(self, system, messages, settings) -> ReplyStream:
        reply = self.reply
        prompt_chars = len(system) + sum(len(m["content"]) for m in messages)

        async def produce(stream: ReplyStream):
            stream.usage = Usage(input_tokens=prompt_chars // 4, output_tokens=len(reply) // 4)
            yield reply
            stream.finish_reason = "STOP"

        return ReplyStream(produce)
