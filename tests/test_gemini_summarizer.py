"""GeminiSummarizer against the fake Gemini server, and its extractive fallback."""

from __future__ import annotations

import pytest

from assistant.gemini import GeminiModel
from assistant.local import LocalModel
from assistant.summarizer import GeminiSummarizer, summarizer_for
from memory import ExtractiveSummarizer, Turn

TURNS = [
    Turn(1, "c", "user", "My name is Ana and I live in Porto.", 1.0),
    Turn(2, "c", "assistant", "Nice to meet you, Ana.", 2.0),
    Turn(3, "c", "user", "Book the flight on 14 March for 2 people.", 3.0),
]


@pytest.fixture
async def summarizer(fake):
    model = GeminiModel("k", base_url=fake.url)
    yield GeminiSummarizer(model)
    await model.aclose()


async def test_rolling_prompt_carries_previous_summary_and_new_turns(fake, summarizer):
    fake.reply("- User: Ana, lives in Porto.\n- User: flight on 14 March for 2 people.")
    text = await summarizer.summarize("- User: prefers window seats.", TURNS, 4000)
    assert text == "- User: Ana, lives in Porto.\n- User: flight on 14 March for 2 people."
    assert summarizer.last_used == "gemini"
    request = fake.last
    assert request.action == "generateContent"
    prompt = request.turns[0][1]
    assert prompt.index("prefers window seats") < prompt.index("User: My name is Ana")
    assert "Assistant: Nice to meet you, Ana." in prompt
    assert "under 4000 characters" in request.system_text
    assert request.generation_config["temperature"] == 0.2


async def test_summary_is_clipped_at_a_line_under_the_cap(fake, summarizer):
    fake.reply("\n".join(f"- fact number {i} " + "x" * 40 for i in range(100)))
    text = await summarizer.summarize(None, TURNS, 500)
    assert len(text) <= 500 and text.endswith("x" * 40)


@pytest.mark.parametrize("failure", ["error-500", "error-429", "blocked", "empty"])
async def test_any_failure_falls_back_to_extractive(fake, summarizer, failure):
    if failure.startswith("error"):
        fake.error(int(failure.split("-")[1]))
    elif failure == "blocked":
        fake.blocked("candidate")
    else:
        fake.reply("   ")
    text = await summarizer.summarize(None, TURNS, 4000)
    assert summarizer.last_used == "extractive"
    assert text == ExtractiveSummarizer().summarize_sync(None, TURNS, 4000)
    assert "Porto" in text and "14 March" in text


async def test_offline_model_gets_the_extractive_summarizer(fake):
    assert isinstance(summarizer_for(LocalModel()), ExtractiveSummarizer)
    model = GeminiModel("k", base_url=fake.url)
    assert isinstance(summarizer_for(model), GeminiSummarizer)
    await model.aclose()


async def test_long_turns_are_clipped_and_a_huge_backlog_goes_extractive(fake, summarizer):
    long_turn = Turn(4, "c", "user", "My name is Ana. " + "blah " * 2000, 4.0)
    fake.reply("- User: Ana.")
    await summarizer.summarize(None, [long_turn], 4000)
    prompt = fake.last.turns[0][1]
    assert "[…]" in prompt and len(prompt) < 4_500

    backlog = [
        Turn(i, "c", "user", f"I live in city {i}. " + "x" * 5000, float(i)) for i in range(100)
    ]
    requests = len(fake.requests)
    text = await summarizer.summarize(None, backlog, 4000)
    assert summarizer.last_used == "extractive" and len(fake.requests) == requests
    assert text and len(text) <= 4000
