"""GeminiModel: the real google-genai client against the local fake Gemini server."""

from __future__ import annotations

import socket

import pytest
from google.genai import types

from assistant.errors import (
    BlockedBySafety,
    InvalidKey,
    InvalidRequest,
    ModelUnavailable,
    RateLimited,
)
from assistant.gemini import GeminiModel, display_name, to_contents
from assistant.models import Settings

HISTORY = [
    {"role": "user", "content": "Will it rain in Taipei tomorrow?"},
    {"role": "assistant", "content": "Likely, bring an umbrella."},
    {"role": "user", "content": "And Kaohsiung?"},
]


@pytest.fixture
async def gemini(fake):
    model = GeminiModel("test-key", base_url=fake.url)
    yield model
    await model.aclose()


async def collect(stream) -> str:
    return "".join([chunk async for chunk in stream])


async def test_streams_chunks_and_sends_system_history_and_config(fake, gemini):
    fake.reply("Sunny ", "in ", "Kaohsiung.", prompt_tokens=42, output_tokens=5)
    stream = gemini.stream("You are terse.", HISTORY, Settings(temperature=0.3))
    assert await collect(stream) == "Sunny in Kaohsiung."

    request = fake.last
    assert request.path.endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert request.version == "v1"  # google-genai 3.x default for the Developer API
    assert request.headers["x-goog-api-key"] == "test-key"
    assert request.system_text == "You are terse."
    assert request.turns == [
        ("user", "Will it rain in Taipei tomorrow?"),
        ("model", "Likely, bring an umbrella."),
        ("user", "And Kaohsiung?"),
    ]
    assert set(request.body) == {"contents", "systemInstruction", "generationConfig"}
    config = request.generation_config
    assert config["temperature"] == 0.3
    assert config["maxOutputTokens"] == 2500
    thinking = config["thinkingConfig"]  # google-genai 3.3 sends this one in snake_case
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 0
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (42, 5)
    assert stream.finish_reason == "STOP"


async def test_thinking_budget_only_for_flash_models(fake):
    pro = GeminiModel("k", "gemini-2.5-pro", base_url=fake.url)
    await collect(pro.stream("", HISTORY[:1], Settings()))
    await pro.aclose()
    assert "thinkingConfig" not in fake.last.generation_config
    assert fake.last.generation_config["maxOutputTokens"] == 2500 + 8192  # room to think
    assert "systemInstruction" not in fake.last.body  # empty system prompt: not sent
    assert "temperature" not in fake.last.generation_config


async def test_consecutive_user_messages_are_joined():
    contents = to_contents(
        [
            {"role": "user", "content": "first"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "ok"},
        ]
    )
    assert [(c.role, c.parts[0].text) for c in contents] == [
        ("user", "first\n\nsecond"),
        ("model", "ok"),
    ]


async def test_reply_is_clipped_to_the_storage_limit(fake, gemini):
    fake.reply("a" * 6000, "b" * 6000, "c" * 10)
    stream = gemini.stream("", HISTORY, Settings(max_reply_chars=10_000))
    text = await collect(stream)
    assert len(text) == 10_000
    assert text.endswith("b" * 4000)
    assert stream.truncated and stream.finish_reason == "MAX_CHARS"


async def test_api_version_v1beta_is_served(fake):
    model = GeminiModel("k", base_url=fake.url)
    model._client = type(model._client)(
        api_key="k", http_options=types.HttpOptions(base_url=fake.url, api_version="v1beta")
    )
    assert await collect(model.stream("", HISTORY[:1], Settings())) == (
        "You said: Will it rain in Taipei tomorrow?"
    )
    assert fake.last.version == "v1beta"
    await model.aclose()


@pytest.mark.parametrize(
    "status,message,expected,words",
    [
        (429, "Resource has been exhausted", RateLimited, "Wait a minute"),
        (400, "API key not valid. Please pass a valid API key.", InvalidKey, "GEMINI_API_KEY"),
        (401, "Request had invalid authentication credentials.", InvalidKey, "GEMINI_API_KEY"),
        (403, "Permission denied.", InvalidKey, "GOOGLE_API_KEY"),
        (404, "models/x is not found", InvalidRequest, "GEMINI_MODEL"),
        (400, "Invalid value at 'contents'", InvalidRequest, "refused the request"),
        (500, "Internal error encountered.", ModelUnavailable, "Retry in a moment"),
        (503, "The model is overloaded.", ModelUnavailable, "Retry in a moment"),
    ],
)
async def test_http_errors_become_actionable_errors(fake, gemini, status, message, expected, words):
    fake.error(status, message)
    with pytest.raises(expected) as caught:
        await collect(gemini.stream("", HISTORY, Settings()))
    assert words in caught.value.message
    assert len(fake.requests) == 1  # no hidden SDK retries


async def test_rate_limit_says_how_long_to_wait(fake, gemini):
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"}
    fake.error(429, "You exceeded your current quota.", details=[retry_info])
    with pytest.raises(RateLimited, match="Retry in 36 seconds"):
        await collect(gemini.stream("", HISTORY, Settings()))


async def test_connection_refused_is_model_unavailable():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = GeminiModel("k", base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ModelUnavailable, match="Could not reach Gemini"):
        await collect(model.stream("", HISTORY, Settings()))
    await model.aclose()


async def test_stream_broken_half_way_yields_what_arrived_then_fails(fake, gemini):
    fake.reply("It will ", "rain ", "all day.", break_after=2)
    received = []
    with pytest.raises(ModelUnavailable, match="broke off mid-reply"):
        async for chunk in gemini.stream("", HISTORY, Settings()):
            received.append(chunk)
    assert received == ["It will ", "rain "]


@pytest.mark.parametrize("where", ["prompt", "candidate"])
async def test_safety_blocks(fake, gemini, where):
    fake.blocked(where)
    with pytest.raises(BlockedBySafety, match="safety"):
        await collect(gemini.stream("", HISTORY, Settings()))


async def test_complete_and_count_tokens(fake, gemini):
    fake.reply("A summary.")
    assert await gemini.complete("Summarize.", "text", max_output_tokens=300) == "A summary."
    request = fake.of("generateContent")[0]
    assert request.system_text == "Summarize."
    assert request.generation_config["maxOutputTokens"] == 300
    assert await gemini.count_tokens(HISTORY) == 12  # the fake counts words
    assert fake.last.action == "countTokens"


@pytest.mark.parametrize(
    "model_id,name",
    [
        ("gemini-2.5-flash", "Gemini 2.5 Flash"),
        ("models/gemini-2.5-flash-lite", "Gemini 2.5 Flash Lite"),
        ("gemini-3-pro-preview", "Gemini 3 Pro Preview"),
        ("learnlm-2.0", "learnlm-2.0"),
    ],
)
def test_display_name(model_id, name):
    assert display_name(model_id) == name
