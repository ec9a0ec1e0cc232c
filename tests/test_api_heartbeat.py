"""Heartbeats on the API's reply streams: while the model is silent, a comment line every
MNEMO_SSE_HEARTBEAT seconds (0.2 here), so a proxy does not drop a slow reply (issue 14).
The model is the real google-genai client against the fake Gemini server, told to be slow."""

from __future__ import annotations

import json
import secrets

import pytest
from api_harness import sse_events

from assistant import config
from assistant.errors import ConfigError

HEARTBEAT = ": keep-alive"


# One app server for the module, with a heartbeat short enough to see (conftest's `server`).
pytestmark = pytest.mark.app_env(MNEMO_SSE_HEARTBEAT="0.2")


@pytest.fixture
def client(server):
    with server.client(server.token("b-" + secrets.token_urlsafe(18))) as c:
        yield c


def conversation(client) -> str:
    return client.post("/conversations", json={}).json()["id"]


def messages(client, cid: str) -> list[dict]:
    return client.get(f"/conversations/{cid}/messages").json()["messages"]


class Lines:
    """A response's lines as they arrive, for sse_events (which must skip comments)."""

    def __init__(self, response):
        self.lines = list(response.iter_lines())

    def iter_lines(self):
        return iter(self.lines)

    def kinds(self) -> list[str]:
        """'beat' for a heartbeat, the event name for an event line."""
        return [
            "beat" if line == HEARTBEAT else line.removeprefix("event:").strip()
            for line in self.lines
            if line == HEARTBEAT or line.startswith("event:")
        ]


def test_a_silent_model_gets_heartbeats_and_the_reply_arrives_whole(client, gemini):
    cid = conversation(client)
    gemini.reply("Thought it over. ", "Here it is.", first_delay=1.0, chunk_delay=0.8)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "hm?"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = Lines(r)
    kinds = lines.kinds()
    first, second = kinds.index("delta"), len(kinds) - 1 - kinds[::-1].index("delta")
    assert "beat" in kinds[:first]  # before the model said anything
    assert "beat" in kinds[first:second]  # and between its two chunks
    assert kinds[-1] == "done"
    events = [(e, json.loads(d)) for e, d in sse_events(lines)]
    assert [d["text"] for e, d in events if e == "delta"] == ["Thought it over. ", "Here it is."]
    assert events[-1][1]["reply"] == "Thought it over. Here it is."
    assert [m["content"] for m in messages(client, cid)] == ["hm?", "Thought it over. Here it is."]


def test_a_model_failing_after_a_silence_ends_the_started_stream_with_an_error(client, gemini):
    """Past the first heartbeat the response is a stream (200): the failure is its last event,
    and the question stays saved, marked unanswered."""
    cid = conversation(client)
    gemini.reply("never sent", first_delay=1.0, break_after=0)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "still?"}) as r:
        assert r.status_code == 200
        lines = Lines(r)
    kinds = lines.kinds()
    assert kinds[0] == "beat" and kinds[-1] == "error" and "done" not in kinds
    (event, data) = list(sse_events(lines))[-1]
    assert event == "error" and json.loads(data)["type"].endswith("model-unavailable")
    saved = messages(client, cid)
    assert [(m["role"], m["content"]) for m in saved][:1] == [("user", "still?")]
    assert saved[0]["outcome"] == "failed"
    # The note is stored coded (for the UI's languages); the API gives its English sentence.
    assert saved[0]["outcome_note"] == json.loads(data)["detail"]


def test_a_client_gone_between_heartbeats_loses_nothing(server, client, gemini):
    cid = conversation(client)
    gemini.reply("Slow ", "but saved.", first_delay=0.6, chunk_delay=0.6)
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": "go"}) as r:
        assert next(r.iter_lines()) == HEARTBEAT
    # hung up during the silence; the reply goes on and is saved complete
    server.wait_idle(timeout_s=15)
    saved = messages(client, cid)
    assert [(m["content"], m["incomplete"]) for m in saved] == [
        ("go", False),
        ("Slow but saved.", False),
    ]


def test_json_replies_have_no_heartbeat(client, gemini):
    cid = conversation(client)
    gemini.reply("Late ", "answer.", first_delay=0.5)
    r = client.post(f"/conversations/{cid}/messages?stream=false", json={"text": "json"})
    assert r.status_code == 200 and r.json()["reply"] == "Late answer."


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 15.0), ("0.2", 0.2), ("30", 30.0), ("0", ConfigError), ("-1", ConfigError),
     ("301", ConfigError), ("soon", ConfigError)],
)  # fmt: skip
def test_the_heartbeat_setting(monkeypatch, value, expected):
    if value is not None:
        monkeypatch.setenv("MNEMO_SSE_HEARTBEAT", value)
    if expected is ConfigError:
        with pytest.raises(ConfigError, match="MNEMO_SSE_HEARTBEAT"):
            config.sse_heartbeat_s()
    else:
        assert config.sse_heartbeat_s() == expected
