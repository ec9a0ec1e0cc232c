"""A roundtable over the HTTP API, for real: uvicorn on a free port, real SQLite, the real
google-genai client against the fake Gemini server, whose replies name the persona that was
asked (read from the system instruction). Each speaker streams separately — its start, its
deltas tagged with it, its end — then the final event; the JSON form returns every reply; the
quota counts each speaker's reply."""

from __future__ import annotations

import json
import secrets

import pytest
from api_harness import ApiServer, sse_events
from fake_gemini import Recorded, Reply

BOARD = "roundtable:erp_board"
ORDER = ["sales", "production", "finance", "general_manager"]
NIKE = "Should we take the Nike order at the current price?"
PLAIN = "Should we hire two more planners?"


def seat_reply(request: Recorded) -> Reply:
    """'<persona> speaking: ...' in three chunks, the persona from the system instruction's
    first line ("Persona: Finance Controller")."""
    first = (request.system_text or "").split("\n")[0].removeprefix("Persona: ")
    return Reply(chunks=[f"{first} ", "speaking: ", "my view."], prompt_tokens=10)


# The module's fake Gemini answers as the seat it was asked (conftest's `gemini`).
pytestmark = pytest.mark.gemini_default(reply=seat_reply)


def board_conversation(client) -> str:
    response = client.post("/conversations", json={"persona_id": BOARD})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def stream(client, cid: str, text: str) -> list[tuple[str, dict]]:
    with client.stream("POST", f"/conversations/{cid}/messages", json={"text": text}) as r:
        assert r.status_code == 200, r.read()
        return [(event, json.loads(data)) for event, data in sse_events(r)]


def test_each_speaker_streams_separately_then_the_final_event(server, gemini):
    owner = "b-" + secrets.token_urlsafe(18)
    with server.client(server.token(owner)) as client:
        cid = board_conversation(client)
        events = stream(client, cid, NIKE)
        # speaker_start, its deltas, speaker_end — per speaker, in order — then done.
        kinds = [event for event, _ in events]
        assert kinds == ["speaker_start", "delta", "delta", "delta", "speaker_end"] * 4 + ["done"]
        starts = [data for event, data in events if event == "speaker_start"]
        assert [s["persona_id"] for s in starts] == ORDER
        assert [s["role"] for s in starts] == ["member"] * 3 + ["chair"]
        assert [s["index"] for s in starts] == [0, 1, 2, 3] and starts[0]["total"] == 4
        names = [s["name"] for s in starts]
        assert names[:3] == ["Sales Director", "Production Manager", "Finance Controller"]
        # The veto, decided by the metrics table, is announced to finance and the chair only.
        assert [s["veto"] is not None for s in starts] == [False, False, True, True]
        assert starts[2]["veto"]["below"] == ["Nike"] and starts[2]["veto"]["threshold_pct"] == 15
        ends = [data for event, data in events if event == "speaker_end"]
        for start, end in zip(starts, ends, strict=True):
            deltas = [
                data["text"]
                for event, data in events
                if event == "delta" and data["speaker"] == start["persona_id"]
            ]
            assert "".join(deltas) == end["reply"] == f"{start['name']} speaking: my view."
            assert end["persona_id"] == start["persona_id"] and end["status"] == "ok"
            assert end["saved"] is True and end["usage"]["input_tokens"] == 10
        done = events[-1][1]
        assert done["roundtable"] == "erp_board" and done["reply"] == ends[-1]["reply"]
        assert [s["reply"] for s in done["speakers"]] == [e["reply"] for e in ends]
        assert done["usage"]["input_tokens"] == 40  # every speaker's tokens
        assert done["veto"]["member"] == "finance" and "Nike: 12% < 15%" in done["veto"]["reason"]
        assert done["memory"]["messages"] == 5
        # Saved as the stream said: one user message, then each reply with its speaker.
        server.wait_idle()
        stored = client.get(f"/conversations/{cid}/messages").json()["messages"]
        assert [(m["role"], m["speaker"]) for m in stored] == [("user", None)] + [
            ("assistant", pid) for pid in ORDER
        ]
        assert [m["content"] for m in stored[1:]] == [e["reply"] for e in ends]
        # Search names who said a reply, as the messages do.
        found = client.get("/search", params={"q": "Controller"}).json()["results"]
        assert [h["speaker"] for h in found[0]["hits"]] == ["finance"]


def test_a_question_in_chinese_gets_finances_chinese_veto_label(server, gemini):
    """The API has no page language: the question's decides. Asked in Chinese, the veto's
    label is finance's Chinese one, and that is what finance and the chair were told."""
    owner = "b-" + secrets.token_urlsafe(18)
    with server.client(server.token(owner)) as client:
        cid = board_conversation(client)
        before = len(gemini.of("streamGenerateContent"))
        events = stream(client, cid, "我們該以目前的報價接耐吉的訂單嗎？")
        starts = [data for event, data in events if event == "speaker_start"]
        assert [s["veto"]["label"] for s in starts[2:]] == ["財務否決", "財務否決"]
        assert events[-1][1]["veto"]["label"] == "財務否決"
        finance, chair = gemini.of("streamGenerateContent")[before + 2 : before + 4]
        assert 'must start with "財務否決:"' in finance.system_text
        assert '("財務否決": Nike: 12% < 15%' in chair.system_text
        english = stream(client, board_conversation(client), NIKE)
        assert english[-1][1]["veto"]["label"] == "FINANCE VETO"


VETO_MEMBER = (
    "⛔ FINANCE VETO: Nike: 12% < 15%, below the 15% threshold — decided by the "
    "business-metrics table, not by the model."
)
VETO_CHAIR = (
    "⛔ FINANCE VETO stands (Finance Controller: Nike: 12% < 15%, threshold 15%): the proposal "
    "is not approved."
)


def test_the_veto_line_is_in_the_stream_and_in_the_stored_messages(server, gemini):
    """The seats here never write the veto; Mnemo's line says it on finance's and the chair's
    replies, in English, as the stream ends each of them and in GET messages."""
    owner = "b-" + secrets.token_urlsafe(18)
    with server.client(server.token(owner)) as client:
        cid = board_conversation(client)
        events = stream(client, cid, NIKE)
        ends = [data["veto_note"] for event, data in events if event == "speaker_end"]
        assert ends == [None, None, VETO_MEMBER, VETO_CHAIR]
        assert [s["veto_note"] for s in events[-1][1]["speakers"]] == ends
        server.wait_idle()
        stored = client.get(f"/conversations/{cid}/messages").json()["messages"]
        assert [m["veto_note"] for m in stored] == [None, *ends]
        assert all(m["outcome"] is None and m["outcome_note"] is None for m in stored)
        plain = stream(client, board_conversation(client), PLAIN)
        assert all(d["veto_note"] is None for e, d in plain if e == "speaker_end")


def test_the_json_form_returns_each_speakers_reply(server, gemini):
    owner = "b-" + secrets.token_urlsafe(18)
    with server.client(server.token(owner)) as client:
        cid = board_conversation(client)
        response = client.post(f"/conversations/{cid}/messages?stream=false", json={"text": PLAIN})
        assert response.status_code == 200, response.text
        body = response.json()
        assert [s["persona_id"] for s in body["speakers"]] == ORDER
        assert all(s["reply"].endswith("speaking: my view.") for s in body["speakers"])
        assert body["reply"] == body["speakers"][-1]["reply"] and body["status"] == "ok"
        assert body["veto"] is None and body["roundtable"] == "erp_board"
        assert body["memory"]["messages"] == 5 and body["saved"] is True


def test_a_single_persona_keeps_its_plain_events(server, gemini):
    owner = "b-" + secrets.token_urlsafe(18)
    with server.client(server.token(owner)) as client:
        cid = client.post("/conversations", json={}).json()["id"]
        events = stream(client, cid, "hello")
        assert {event for event, _ in events} == {"delta", "done"}
        assert all("speaker" not in data for event, data in events if event == "delta")
        done = events[-1][1]
        assert done["speakers"] is None and done["roundtable"] is None and done["veto"] is None


def test_the_quota_counts_every_speakers_reply(tmp_path, gemini):
    """Quota 6 an hour: the first roundtable message takes 4; the second gets two speakers,
    then the stream ends with the quota's error (what was said is saved); the third is refused
    before any speaker, with a 429 problem document."""
    s = ApiServer(tmp_path / "data", gemini.url, quota_per_hour=6)
    try:
        owner = "b-" + secrets.token_urlsafe(18)
        with s.client(s.token(owner)) as client:
            cid = board_conversation(client)
            first = stream(client, cid, PLAIN)
            assert first[-1][0] == "done"
            second = stream(client, cid, PLAIN)
            said = [data["persona_id"] for event, data in second if event == "speaker_end"]
            assert said == ORDER[:2]
            assert second[-1][0] == "error" and second[-1][1]["status"] == 429
            assert "6 messages in the last hour" in second[-1][1]["detail"]
            s.wait_idle()
            third = client.post(f"/conversations/{cid}/messages", json={"text": PLAIN})
            assert third.status_code == 429, third.text
            assert third.headers["content-type"].startswith("application/problem+json")
            stored = client.get(f"/conversations/{cid}/messages").json()["messages"]
            replies = [m for m in stored if m["role"] == "assistant"]
            assert len(replies) == 6  # 4 + 2: nothing past the quota reached the model
    finally:
        s.stop()


def problem(response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = response.json()
    assert doc["type"] == f"/api/v1/problems#{slug}" and doc["status"] == status
    return doc


@pytest.mark.parametrize("ref", ["roundtable:no_such_board", "roundtable:", "roundtable:../erp"])
def test_an_unknown_roundtable_is_not_found_and_nothing_is_saved(server, gemini, ref):
    """As an unknown persona: 404 with what to do, no conversation created or changed, and
    the model never asked (it used to be a 502, as if the model had failed)."""
    calls = len(gemini.requests)
    with server.client(server.token("b-" + secrets.token_urlsafe(18))) as client:
        doc = problem(client.post("/conversations", json={"persona_id": ref}), 404, "not-found")
        assert doc["title"] == "Roundtable not found"
        assert "pick another one, or a single persona" in doc["detail"]
        assert client.get("/conversations").json() == []
        cid = client.post("/conversations", json={"title": "Kept"}).json()["id"]
        body = {"persona_id": ref, "title": "Renamed"}
        problem(client.patch(f"/conversations/{cid}", json=body), 404, "not-found")
        kept = client.get(f"/conversations/{cid}").json()
        assert (kept["title"], kept["persona_id"]) == ("Kept", "assistant")
    assert len(gemini.requests) == calls


def test_a_roundtable_naming_a_missing_persona_is_refused_before_anything_is_saved(server, gemini):
    """A roundtable of the owner's own (saved as in the Personas tab) that names a persona they
    lack: the message is a 409 that says what to edit, and neither it nor a reply is saved."""
    owner = "b-" + secrets.token_urlsafe(18)
    with server.client(server.token(owner)) as client:
        cid = board_conversation(client)
        document = server.server.call(server.facade.roundtable(owner, "erp_board"))
        yaml_text = document.yaml_text.replace("  - production\n", "  - marketing\n")
        server.server.call(server.facade.save_roundtable(owner, yaml_text))
        calls = len(gemini.requests)
        for stream in ("true", "false"):
            response = client.post(
                f"/conversations/{cid}/messages?stream={stream}", json={"text": NIKE}
            )
            doc = problem(response, 409, "roundtable-unavailable")
            assert "marketing. Edit the roundtable's members" in doc["detail"]
        assert client.get(f"/conversations/{cid}/messages").json()["messages"] == []
    assert len(gemini.requests) == calls
