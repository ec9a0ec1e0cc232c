"""The memory routes over real HTTP (api/memory.py): pinned facts and "about me", the user's
summary, export and import between owners — the same facade operations as the memory panel."""

from __future__ import annotations

import json
import secrets


def client_of(server):
    return server.client(server.token("b-" + secrets.token_urlsafe(18)))


def send(client, cid: str, text: str) -> dict:
    response = client.post(f"/conversations/{cid}/messages?stream=false", json={"text": text})
    assert response.status_code == 200, response.text
    return response.json()


def test_pins_about_me_and_the_summary_over_http(server, gemini):
    with client_of(server) as ana, client_of(server) as bob:
        cid = ana.post("/conversations", json={}).json()["id"]
        created = ana.post(f"/conversations/{cid}/pins", json={"text": "I'm vegetarian"})
        assert created.status_code == 201, created.text
        fact = created.json()
        assert (fact["content"], fact["about_me"]) == ("I'm vegetarian", False)
        send(ana, cid, "What should I cook?")
        assert "- I'm vegetarian" in gemini.of("streamGenerateContent")[-1].system_text

        refused = ana.post(f"/conversations/{cid}/pins", json={"text": "  "})
        assert refused.status_code == 422 and "empty" in refused.json()["detail"]
        assert bob.get(f"/conversations/{cid}/pins").status_code == 404
        assert bob.delete(f"/pins/{fact['id']}").status_code == 422  # not bob's: no such pin

        ana.post(f"/conversations/{cid}/pins", json={"text": "I live in Porto", "about_me": True})
        listed = ana.get(f"/conversations/{cid}/pins").json()
        assert [p["content"] for p in listed["about_me"]] == ["I live in Porto"]
        assert listed["about_me_on"] is False
        assert ana.put("/about-me", json={"enabled": True}).json() == {"about_me_on": True}

        assert ana.delete(f"/pins/{fact['id']}").status_code == 204
        send(ana, cid, "And now?")
        system = gemini.of("streamGenerateContent")[-1].system_text
        assert "I'm vegetarian" not in system and "- I live in Porto" in system

        no_summary = ana.put(f"/conversations/{cid}/summary", json={"text": "made up"})
        assert no_summary.status_code == 422 and "no summary yet" in no_summary.json()["detail"]


def test_export_then_import_as_another_owner_gives_the_same_next_request(server, gemini):
    with client_of(server) as ana, client_of(server) as bob:
        cid = ana.post("/conversations", json={"persona_id": "finance"}).json()["id"]
        send(ana, cid, "Our gross-margin red line is 15%")
        ana.post(f"/conversations/{cid}/pins", json={"text": "Client: Kestrel"})
        exported = ana.get(f"/conversations/{cid}/export")
        assert exported.status_code == 200
        doc = exported.json()
        assert doc["conversations"][0]["pinned"][0]["content"] == "Client: Kestrel"

        imported = bob.post("/import", content=exported.content)
        assert imported.status_code == 201, imported.text
        (copy,) = imported.json()["conversations"]
        send(ana, cid, "What is the red line?")
        mine = gemini.of("streamGenerateContent")[-1]
        send(bob, copy["id"], "What is the red line?")
        theirs = gemini.of("streamGenerateContent")[-1]
        assert (theirs.system_text, theirs.turns) == (mine.system_text, mine.turns)

        everything = json.loads(ana.get("/export").content)
        assert len(everything["conversations"]) == 1

        before = len(bob.get("/conversations").json())
        bad = bob.post("/import", content=b'{"format": "mnemo-export", "version": 9}')
        assert bad.status_code == 422 and "Export it again" in bad.json()["detail"]
        assert len(bob.get("/conversations").json()) == before  # nothing saved
