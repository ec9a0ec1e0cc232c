"""Sending messages over the HTTP API: server-sent events, JSON, a client that disconnects
mid-reply, persona edits taking effect, the quota, model failures, one reply at a time."""

from __future__ import annotations

import json
import secrets
import threading
import time

import httpx
import pytest
from api_harness import ApiServer, sse_events


@pytest.fixture
def client(server):
    with server.client(server.token("b-" + secrets.token_urlsafe(18))) as c:
        yield c


def conversation(client: httpx.Client, **body) -> str:
    return client.post("/conversations", json=body).json()["id"]


def messages(client: httpx.Client, cid: str) -> list[dict]:
    return client.get(f"/conversations/{cid}/messages").json()["messages"]


def wait_for(predicate, timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_the_reply_streams_as_deltas_then_done(client, gemini):
    cid = conversation(client)
    gemini.reply("Hel", "lo ", "there!", chunk_delay=0.01, prompt_tokens=17, output_tokens=5)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "hi"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        events = list(sse_events(response))
    assert [e for e, _ in events] == ["delta", "delta", "delta", "done"]
    assert "".join(json.loads(d)["text"] for e, d in events if e == "delta") == "Hello there!"
    done = json.loads(events[-1][1])
    assert (done["reply"], done["status"], done["model"], done["saved"]) == (
        "Hello there!",
        "ok",
        "Gemini 2.5 Flash",
        True,
    )
    assert done["usage"] == {"input_tokens": 17, "output_tokens": 5}
    assert done["memory"]["messages"] == 2 and done["memory"]["degraded"] is False
    assert [(m["role"], m["content"]) for m in messages(client, cid)] == [
        ("user", "hi"),
        ("assistant", "Hello there!"),
    ]


@pytest.mark.parametrize(
    ("params", "accept"),
    [({"stream": "false"}, None), ({}, "application/json"), ({"stream": "false"}, "*/*")],
)
def test_one_json_body_when_asked(client, gemini, params, accept):
    cid = conversation(client)
    gemini.reply("All ", "in one.")
    headers = {"Accept": accept} if accept else {}
    response = client.post(
        f"/conversations/{cid}/messages", params=params, headers=headers, json={"text": "hi"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert (body["reply"], body["status"], body["memory"]["messages"]) == ("All in one.", "ok", 2)


def test_stream_true_wins_over_accept_json(client):
    cid = conversation(client)
    response = client.post(
        f"/conversations/{cid}/messages",
        params={"stream": "true"},
        headers={"Accept": "application/json"},
        json={"text": "hi"},
    )
    assert response.headers["content-type"].startswith("text/event-stream")


def test_an_unacceptable_accept_is_406_and_nothing_saved(client, gemini):
    cid = conversation(client)
    calls = len(gemini.requests)
    response = client.post(
        f"/conversations/{cid}/messages", headers={"Accept": "text/html"}, json={"text": "hi"}
    )
    assert response.status_code == 406 and response.json()["type"].endswith("not-acceptable")
    assert messages(client, cid) == [] and len(gemini.requests) == calls


def test_a_client_that_disconnects_mid_reply_loses_nothing(server, client, gemini):
    """Decided: the reply keeps going without the client, and is saved complete."""
    cid = conversation(client)
    gate = threading.Event()
    gemini.reply("First part, ", "then the rest ", "of the answer.", gate=gate)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "go"}) as response:
        event, data = next(sse_events(response))
        assert (event, json.loads(data)["text"]) == ("delta", "First part, ")
        # Saved before the model was called: the question is there while it answers.
        assert [m["role"] for m in messages(client, cid)] == ["user"]
    # The client has hung up; now the model sends the rest.
    gate.set()
    saved = wait_for(lambda: [m for m in messages(client, cid) if m["role"] == "assistant"])
    assert [(m["content"], m["incomplete"]) for m in saved] == [
        ("First part, then the rest of the answer.", False)
    ]
    server.wait_idle()
    assert len(messages(client, cid)) == 2


def test_a_put_persona_takes_effect_on_the_next_message(client, gemini):
    cid = conversation(client)
    client.post(f"/conversations/{cid}/messages?stream=false", json={"text": "before"})
    assert "Always answer like a lighthouse keeper" not in gemini.last.system_text
    put = client.put(
        "/personas/assistant",
        json={
            "display_name": "Keeper",
            "role_description": "Always answer like a lighthouse keeper.",
            "temperature": 0.3,
        },
    )
    assert put.status_code == 200
    client.post(f"/conversations/{cid}/messages?stream=false", json={"text": "after"})
    request = gemini.last
    assert "Always answer like a lighthouse keeper." in request.system_text
    assert request.generation_config["temperature"] == 0.3
    assert request.turns[-1] == ("user", "after")


def test_reset_typed_as_a_message_resets(client, gemini):
    cid = conversation(client)
    client.post(f"/conversations/{cid}/messages?stream=false", json={"text": "remember 7"})
    calls = len(gemini.requests)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "/reset"}) as r:
        events = list(sse_events(r))
    assert [e for e, _ in events] == ["done"]
    done = json.loads(events[0][1])
    assert done["reset"] == {"messages": 2, "summaries": 0, "chars": 10 + 2 * len("remember 7")}
    assert messages(client, cid) == [] and len(gemini.requests) == calls


def test_a_model_that_fails_before_answering_is_a_problem_and_keeps_the_question(client, gemini):
    cid = conversation(client)
    gemini.error(503, "overloaded")
    response = client.post(f"/conversations/{cid}/messages", json={"text": "are you there?"})
    assert response.status_code == 502
    doc = response.json()
    assert doc["type"].endswith("model-unavailable") and doc["detail"]
    assert [(m["role"], m["content"]) for m in messages(client, cid)] == [
        ("user", "are you there?")
    ]


def test_a_stream_that_breaks_part_way_ends_with_an_error_event(client, gemini):
    cid = conversation(client)
    gemini.reply("Partial ", "answer ", "never finished", break_after=2)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "tell me"}) as r:
        assert r.status_code == 200
        events = list(sse_events(r))
    kinds = [e for e, _ in events]
    assert kinds[-1] == "error" and "done" not in kinds
    assert json.loads(events[-1][1])["type"].endswith("model-unavailable")
    saved = messages(client, cid)
    assert [(m["role"], m["incomplete"]) for m in saved] == [("user", False), ("assistant", True)]
    assert saved[1]["content"] == "Partial answer "


def test_messages_to_one_conversation_are_answered_one_at_a_time(server, client):
    cid = conversation(client)
    texts = [f"question {i}" for i in range(6)]
    results: list[int] = []

    def post(text: str) -> None:
        r = client.post(f"/conversations/{cid}/messages?stream=false", json={"text": text})
        results.append(r.status_code)

    threads = [threading.Thread(target=post, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [200] * len(texts)
    saved = messages(client, cid)
    assert [m["role"] for m in saved] == ["user", "assistant"] * len(texts)
    for question, answer in zip(saved[::2], saved[1::2], strict=True):
        assert answer["content"] == "You said: " + question["content"]
    assert sorted(m["content"] for m in saved[::2]) == texts


def test_the_quota_applies_to_api_messages(tmp_path, gemini):
    s = ApiServer(tmp_path / "data", gemini.url, quota_per_hour=2)
    try:
        with s.client(s.token("b-" + secrets.token_urlsafe(18))) as c:
            cid = conversation(c)
            for text in ("one", "two"):
                assert c.post(f"/conversations/{cid}/messages", json={"text": text}).is_success
            s.wait_idle()
            calls = len(gemini.requests)
            response = c.post(f"/conversations/{cid}/messages", json={"text": "three"})
            assert response.status_code == 429
            doc = response.json()
            assert doc["type"].endswith("quota-exceeded")
            assert doc["detail"].startswith("You have sent 2 messages in the last hour")
            assert [m["content"] for m in messages(c, cid) if m["role"] == "user"] == [
                "one",
                "two",
            ]
            assert len(gemini.requests) == calls
    finally:
        s.stop()


def test_shutdown_lets_a_running_reply_finish_and_be_saved(tmp_path, gemini):
    s = ApiServer(tmp_path / "data", gemini.url)
    owner = "b-" + secrets.token_urlsafe(18)
    secret = s.token(owner)
    gate = threading.Event()
    with s.client(secret) as c:
        cid = conversation(c)
        gemini.reply("Still ", "saved.", gate=gate)
        with c.stream("POST", f"/conversations/{cid}/messages", json={"text": "bye"}) as r:
            next(sse_events(r))
    stopper = threading.Thread(target=s.stop)
    stopper.start()
    time.sleep(0.2)
    gate.set()
    stopper.join(30)
    again = ApiServer(tmp_path / "data", gemini.url)
    try:
        with again.client(secret) as c:
            assert [(m["role"], m["content"]) for m in messages(c, cid)] == [
                ("user", "bye"),
                ("assistant", "Still saved."),
            ]
    finally:
        again.stop()
