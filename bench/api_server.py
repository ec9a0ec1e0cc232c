"""The app as the load test runs it, in a process of its own (`python -m bench.api_server`).

    --model instant      an instant echo model: what is timed is Mnemo, not a model
                         (--stream-s S: its first chunk at once, the rest over S seconds;
                         --stream-jitter: each reply over 0.5-1.5 × S, set by its text)
    --model gemini URL   the real google-genai client against the fake Gemini server at URL
    --fake-gemini        instead: serve only the fake Gemini server (tests/fake_gemini.py)

It serves exactly what `python app.py` serves (app.web_app: the API at /api/v1 and the UI at
/), plus, at /probe, a one-event Gradio page whose public streaming endpoint makes the same
facade call as the UI's send button, so gradio_client can drive the Gradio queue (the app's own
events are private to its page). Prints `READY <url>` when it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import threading
from pathlib import Path

from assistant.models import ReplyStream, Usage

TESTS_DIR = Path(__file__).resolve().parent.parent / "tests"


class EchoModel:
    """Answers "You said: <the message>", so each reply names its question. The first chunk
    comes at once; with `stream_s`, the rest follows in 10 chunks over that many seconds (a
    reply that keeps its stream open, as a real model's does). With `jitter` a reply's stream
    lasts 0.5-1.5 × `stream_s` instead (uniform, 1 × on average), picked by a hash of its text:
    replies end at different moments, as real ones do, and a run is repeatable."""

    name = "instant echo model"
    model_id = "instant-echo"

    def __init__(self, stream_s: float = 0.0, jitter: bool = False) -> None:
        self.stream_s = stream_s
        self.jitter = jitter

    def stream(self, system, messages, settings) -> ReplyStream:
        reply = "You said: " + messages[-1]["content"][:200]
        pieces = [reply] if not self.stream_s else _split(reply, 10)
        seconds = self.stream_s * (_spread(reply) if self.jitter else 1.0)
        pause = seconds / max(len(pieces) - 1, 1)

        async def produce(stream: ReplyStream):
            stream.usage = Usage(input_tokens=len(system) // 4, output_tokens=len(reply) // 4)
            for i, piece in enumerate(pieces):
                if i:
                    await asyncio.sleep(pause)
                yield piece
            stream.finish_reason = "STOP"

        return ReplyStream(produce)


def _spread(text: str) -> float:
    """0.5-1.5, uniform over texts, the same for the same text in every process."""
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return 0.5 + int.from_bytes(digest, "big") / 2**64


def _split(text: str, parts: int) -> list[str]:
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def probe_page(rt):
    """A Gradio page with one public streaming endpoint, /chat(owner, conversation, text)."""
    import gradio as gr

    async def chat(owner: str, conversation_id: str, text: str):
        reply = ""
        facade = await rt.conversations()
        async for event in facade.send(owner, conversation_id, text):
            delta = getattr(event, "text", None)
            if delta is not None:
                reply += delta
                yield reply

    with gr.Blocks() as page:
        owner, conversation, text = gr.Textbox(), gr.Textbox(), gr.Textbox()
        out = gr.Textbox()
        gr.Button().click(chat, [owner, conversation, text], out, api_name="chat")
    # The app's own queue settings (app.queued), so this path costs what the UI's does.
    import app

    return app.queued(page)


def serve_app(
    data_dir: Path,
    model_choice: str,
    gemini_url: str | None,
    stream_s: float = 0.0,
    jitter: bool = False,
) -> None:
    import gradio as gr

    import app
    from api.server import WebServer
    from assistant.gemini import GeminiModel
    from assistant.runtime import Runtime

    if model_choice == "instant":
        model = EchoModel(stream_s, jitter)
    else:
        model = GeminiModel("bench", base_url=gemini_url)
    rt = Runtime(data_dir, model=model)
    web = app.web_app(rt)
    gr.mount_gradio_app(web, probe_page(rt), path="/probe")
    web.router.routes.insert(0, web.router.routes.pop())  # before the UI's catch-all "/"
    server = WebServer(web, "127.0.0.1", 0)
    print(f"READY {server.url}", flush=True)
    server.run()


def serve_fake_gemini() -> None:
    sys.path.insert(0, str(TESTS_DIR))
    from fake_gemini import FakeGemini

    with FakeGemini() as fake:
        print(f"READY {fake.url}", flush=True)
        threading.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.api_server", description=__doc__)
    parser.add_argument("--fake-gemini", action="store_true")
    parser.add_argument("--model", choices=("instant", "gemini"), default="instant")
    parser.add_argument("--gemini-url")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--stream-s", type=float, default=0.0, help="instant model: stream for")
    parser.add_argument("--stream-jitter", action="store_true", help="0.5-1.5 × --stream-s")
    args = parser.parse_args(argv)
    if args.fake_gemini:
        serve_fake_gemini()
    else:
        serve_app(args.data, args.model, args.gemini_url, args.stream_s, args.stream_jitter)


if __name__ == "__main__":
    main()
