"""The HTTP API over real HTTP: every route, auth, owners kept apart, bad input refused.

One server (API + UI, uvicorn on a free port) for the module; each test uses owners of its
own, so tests do not see each other's data. Streaming, disconnects and the quota are in
test_api_stream.py.
"""

from __future__ import annotations

import secrets

import httpx
import pytest
from api_harness import ApiServer

from assistant.chat import check_message
from assistant.errors import InvalidMessage

ROUTES = [
    ("GET", "/personas"),
    ("GET", "/personas/assistant"),
    ("PUT", "/personas/assistant"),
    ("POST", "/personas/refresh"),
    ("GET", "/personas/assistant/versions"),
    ("POST", "/personas/assistant/rollback"),
    ("GET", "/conversations"),
    ("POST", "/conversations"),
    ("GET", "/conversations/{id}"),
    ("PATCH", "/conversations/{id}"),
    ("DELETE", "/conversations/{id}"),
    ("GET", "/conversations/{id}/messages"),
    ("POST", "/conversations/{id}/messages"),
    ("GET", "/conversations/{id}/memory"),
    ("POST", "/conversations/{id}/reset"),
    ("GET", "/search"),
    ("GET", "/conversations/{id}/pins"),
    ("POST", "/conversations/{id}/pins"),
    ("DELETE", "/pins/{fact_id}"),
    ("PUT", "/about-me"),
    ("PUT", "/conversations/{id}/summary"),
    ("GET", "/conversations/{id}/export"),
    ("GET", "/export"),
    ("POST", "/import"),
]


def new_owner() -> str:
    return "b-" + secrets.token_urlsafe(18)


@pytest.fixture
def ana(server):
    with server.client(server.token(new_owner())) as client:
        yield client


@pytest.fixture
def bob(server):
    with server.client(server.token(new_owner())) as client:
        yield client


def problem(response: httpx.Response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = response.json()
    assert doc["type"] == f"/api/v1/problems#{slug}"
    assert doc["status"] == status
    assert doc["title"] and doc["detail"]
    return doc


def send(client: httpx.Client, cid: str, text: str) -> dict:
    response = client.post(f"/conversations/{cid}/messages?stream=false", json={"text": text})
    assert response.status_code == 200, response.text
    return response.json()


# ---- one server, the docs ----------------------------------------------------------------


def test_ui_and_api_are_served_by_the_same_server(server):
    page = httpx.get(server.url + "/", timeout=20)
    assert page.status_code == 200 and "gradio" in page.text.lower()
    config = httpx.get(server.url + "/config", timeout=20)
    assert config.status_code == 200 and "components" in config.json()


def test_openapi_lists_exactly_the_routes(server):
    doc = httpx.get(server.api + "/openapi.json", timeout=20).json()
    listed = {
        (method.upper(), path.replace("{conversation_id}", "{id}").replace("{persona_id}", "x"))
        for path, item in doc["paths"].items()
        for method in item
    }
    expected = {(m, p.replace("/assistant", "/x")) for m, p in ROUTES} | {("GET", "/problems")}
    assert listed == expected
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    stream = doc["paths"]["/conversations/{conversation_id}/messages"]["post"]
    assert set(stream["responses"]["200"]["content"]) == {"text/event-stream", "application/json"}
    docs = httpx.get(server.api + "/docs", timeout=20)
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_problem_types_are_listed(server):
    types = httpx.get(server.api + "/problems", timeout=20).json()
    assert types["unauthorized"]["status"] == 401
    assert types["not-found"]["status"] == 404


def test_unknown_route_and_method_are_problems(ana):
    problem(ana.get("/nowhere"), 404, "not-found")
    problem(ana.delete("/personas"), 405, "method-not-allowed")


# ---- auth --------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Bearer mnemo_not-a-real-token", "Basic dXNlcjpwYXNz", "Bearer " + "x" * 5000],
)
def test_every_route_refuses_a_missing_or_unknown_token(server, method, path, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    url = (
        server.api
        + path.replace("{id}", "some-conversation")
        + ("?q=x" if "search" in path else "")
    )
    response = httpx.request(method, url, headers=headers, json={}, timeout=20)
    doc = problem(response, 401, "unauthorized")
    assert "API tokens" in doc["detail"]
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_token_stops_working_at_once(server):
    owner = new_owner()
    secret = server.token(owner)
    other = server.token(owner, "second")
    with server.client(secret) as client, server.client(other) as still:
        assert client.get("/conversations").status_code == 200
        server.revoke(owner, secret)
        doc = problem(client.get("/conversations"), 401, "unauthorized")
        assert "revoked" in doc["detail"]
        assert still.get("/conversations").status_code == 200  # only that token goes


def test_another_owners_conversation_is_not_found_and_untouched(ana, bob):
    cid = ana.post("/conversations", json={"title": "Ana's plans"}).json()["id"]
    send(ana, cid, "My locker code is 4471.")
    for method, path, body in [
        ("GET", "", None),
        ("PATCH", "", {"title": "mine now"}),
        ("DELETE", "", None),
        ("GET", "/messages", None),
        ("GET", "/memory", None),
        ("POST", "/reset", None),
        ("POST", "/messages?stream=false", {"text": "hello"}),
    ]:
        response = bob.request(method, f"/conversations/{cid}{path}", json=body)
        problem(response, 404, "not-found")
    assert bob.get("/conversations").json() == []
    assert bob.get("/search", params={"q": "locker"}).json()["results"] == []
    mine = ana.get(f"/conversations/{cid}").json()
    assert (mine["title"], mine["message_count"]) == ("Ana's plans", 2)


def test_tokens_of_one_owner_share_its_conversations(server):
    owner = new_owner()
    with server.client(server.token(owner)) as one, server.client(server.token(owner)) as two:
        cid = one.post("/conversations", json={}).json()["id"]
        assert [c["id"] for c in two.get("/conversations").json()] == [cid]


# ---- conversations -----------------------------------------------------------------------


def test_create_list_get_patch_delete(ana):
    first = ana.post("/conversations").json()
    created = ana.post(
        "/conversations",
        json={"title": "Trip", "persona_id": "finance", "retention_minutes": 30},
    )
    assert created.status_code == 201
    second = created.json()
    assert (second["title"], second["persona_id"], second["retention_minutes"]) == (
        "Trip",
        "finance",
        30,
    )
    assert second["expires_at"] is not None
    assert first["persona_id"] == "assistant" and first["title"] is None
    assert [c["id"] for c in ana.get("/conversations").json()] == [second["id"], first["id"]]
    assert ana.get(f"/conversations/{second['id']}").json() == second

    patched = ana.patch(f"/conversations/{second['id']}", json={"title": "  Trip to Oslo "}).json()
    assert (patched["title"], patched["persona_id"], patched["retention_minutes"]) == (
        "Trip to Oslo",
        "finance",
        30,
    )
    patched = ana.patch(
        f"/conversations/{second['id']}", json={"persona_id": "sales", "retention_minutes": None}
    ).json()
    assert (patched["persona_id"], patched["retention_minutes"], patched["expires_at"]) == (
        "sales",
        None,
        None,
    )
    assert ana.delete(f"/conversations/{second['id']}").status_code == 204
    problem(ana.get(f"/conversations/{second['id']}"), 404, "not-found")
    problem(ana.delete(f"/conversations/{second['id']}"), 404, "not-found")
    assert [c["id"] for c in ana.get("/conversations").json()] == [first["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "t" * 101}, "title"),
        ({"retention_minutes": 0}, "retention_minutes"),
        ({"retention_minutes": "soon"}, "retention_minutes"),
        ({"persona_id": "no-such-persona"}, None),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_conversation_changes_are_refused_and_change_nothing(ana, body, field):
    cid = ana.post("/conversations", json={"title": "Kept", "retention_minutes": 60}).json()["id"]
    response = ana.patch(f"/conversations/{cid}", json=body)
    assert 400 <= response.status_code < 500
    doc = response.json()
    if field and doc["type"].endswith("invalid-request") and "errors" in doc:
        assert any(field in e["field"] for e in doc["errors"])
    conversation = ana.get(f"/conversations/{cid}").json()
    assert (
        conversation["title"],
        conversation["persona_id"],
        conversation["retention_minutes"],
    ) == (
        "Kept",
        "assistant",
        60,
    )


def test_creating_with_an_unknown_persona_saves_nothing(ana):
    problem(ana.post("/conversations", json={"persona_id": "nobody"}), 404, "not-found")
    problem(ana.post("/conversations", json={"persona_id": "../etc"}), 404, "not-found")
    assert ana.get("/conversations").json() == []


def test_malformed_json_bodies_are_refused(ana):
    response = ana.post(
        "/conversations", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    problem(response, 422, "invalid-request")
    assert ana.get("/conversations").json() == []


# ---- messages, memory, reset, search -----------------------------------------------------


def test_messages_page_back_from_the_newest(ana):
    cid = ana.post("/conversations").json()["id"]
    for i in range(5):
        send(ana, cid, f"message number {i}")
    everything = ana.get(f"/conversations/{cid}/messages").json()
    assert [m["role"] for m in everything["messages"]] == ["user", "assistant"] * 5
    assert everything["next_before"] is None
    ids = [m["id"] for m in everything["messages"]]
    assert ids == sorted(ids)

    page = ana.get(f"/conversations/{cid}/messages", params={"limit": 4}).json()
    assert [m["id"] for m in page["messages"]] == ids[-4:]
    assert page["next_before"] == ids[-4]
    seen = list(page["messages"])
    while page["next_before"] is not None:
        page = ana.get(
            f"/conversations/{cid}/messages", params={"limit": 4, "before": page["next_before"]}
        ).json()
        seen = page["messages"] + seen
    assert seen == everything["messages"]
    assert everything["messages"][0]["content"] == "message number 0"


@pytest.mark.parametrize(
    "params",
    [{"limit": 0}, {"limit": 201}, {"limit": "ten"}, {"before": 0}, {"before": "x"}, {"limit": -1}],
)
def test_bad_paging_is_refused_with_the_parameter_named(ana, params):
    cid = ana.post("/conversations").json()["id"]
    doc = problem(ana.get(f"/conversations/{cid}/messages", params=params), 422, "invalid-request")
    (name,) = params
    assert doc["errors"][0]["field"] == f"query parameter {name}"
    assert name in doc["detail"]


def test_memory_shows_status_and_what_the_model_receives_next(ana):
    cid = ana.post("/conversations").json()["id"]
    send(ana, cid, "My cat is called Biscuit.")
    memory = ana.get(f"/conversations/{cid}/memory").json()
    assert memory["status"]["messages"] == 2 and memory["status"]["degraded"] is False
    assert memory["summary"] is None
    nxt = memory["next"]
    assert nxt["persona_id"] == "assistant" and nxt["model"] == "Gemini 2.5 Flash"
    assert [t["content"] for t in nxt["turns"]] == [
        "My cat is called Biscuit.",
        "You said: My cat is called Biscuit.",
    ]
    assert "Mnemo" in nxt["system_instruction"]
    problem(
        ana.get(f"/conversations/{cid}/memory", params={"draft": "x" * 10_001}),
        422,
        "invalid-request",
    )


def test_reset_says_what_was_cleared(ana):
    cid = ana.post("/conversations").json()["id"]
    send(ana, cid, "Remember 12 apples.")
    cleared = ana.post(f"/conversations/{cid}/reset").json()
    assert cleared == {"messages": 2, "summaries": 0, "chars": len("Remember 12 apples.") * 2 + 10}
    assert ana.get(f"/conversations/{cid}/messages").json()["messages"] == []
    assert ana.get(f"/conversations/{cid}").json()["message_count"] == 0


def test_search_groups_hits_by_conversation(ana):
    boats = ana.post("/conversations", json={"title": "Boats"}).json()["id"]
    send(ana, boats, "The sailboat needs a new mast.")
    other = ana.post("/conversations").json()["id"]
    send(ana, other, "Buy a mast light and rope.")
    send(ana, other, "Nothing to see here.")
    found = ana.get("/search", params={"q": "mast"}).json()
    assert found["query"] == "mast"
    by_id = {r["conversation"]["id"]: r["hits"] for r in found["results"]}
    assert list(by_id) == [other, boats]  # newest activity first
    assert all("**mast**" in h["snippet"] for hits in by_id.values() for h in hits)
    assert len(by_id[other]) == 2  # the message and the echoing reply
    assert ana.get("/search", params={"q": "!!!"}).json()["results"] == []
    problem(ana.get("/search"), 422, "invalid-request")
    problem(ana.get("/search", params={"q": ""}), 422, "invalid-request")
    problem(ana.get("/search", params={"q": "x" * 201}), 422, "invalid-request")


@pytest.mark.parametrize(
    ("body", "slug"),
    [
        ({"text": "x" * 10_001}, "invalid-message"),
        ({"text": ""}, "invalid-message"),
        ({"text": "   \n "}, "invalid-message"),
        ({"text": 42}, "invalid-request"),
        ({}, "invalid-request"),
        ({"text": "hi", "role": "system"}, "invalid-request"),
    ],
)
def test_bad_messages_are_refused_and_nothing_is_saved(ana, gemini, body, slug):
    cid = ana.post("/conversations").json()["id"]
    calls = len(gemini.requests)
    doc = problem(ana.post(f"/conversations/{cid}/messages", json=body), 422, slug)
    if slug == "invalid-message":  # the very sentence the UI shows
        with pytest.raises(InvalidMessage) as shown:
            check_message(body["text"])
        assert doc["detail"] == shown.value.message
        assert "10,000" in doc["detail"] or "empty" in doc["detail"]
    assert ana.get(f"/conversations/{cid}").json()["message_count"] == 0
    assert len(gemini.requests) == calls  # the model was never called


def test_a_message_to_an_unknown_conversation_is_not_found(ana, gemini):
    calls = len(gemini.requests)
    problem(ana.post("/conversations/nope/messages", json={"text": "hi"}), 404, "not-found")
    assert len(gemini.requests) == calls


# ---- personas ----------------------------------------------------------------------------

PIRATE = """\
id: assistant
display_name: Captain Mnemo
role_description: A pirate who answers every question in pirate speech.
"""


def test_personas_list_and_read(ana):
    listed = {p["id"]: p for p in ana.get("/personas").json()}
    assert {"assistant", "finance", "sales"} <= set(listed)
    assert listed["assistant"]["version"] == 0 and listed["assistant"]["source"] == "builtin"
    one = ana.get("/personas/finance").json()
    assert one["fields"]["id"] == "finance" and "\nid: finance\n" in one["yaml"]
    assert one["fields"]["parameters"]["veto_threshold_pct"] == 15
    assert "below 15%" in one["system_prompt"]  # composed, placeholders filled
    problem(ana.get("/personas/nobody"), 404, "not-found")


def test_put_yaml_makes_a_version_for_that_owner_only(ana, bob):
    saved = ana.put(
        "/personas/assistant", content=PIRATE, headers={"Content-Type": "application/yaml"}
    )
    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert (body["version"], body["source"], body["display_name"]) == (1, "saved", "Captain Mnemo")
    assert "pirate" in body["system_prompt"]
    assert ana.get("/personas/assistant").json()["yaml"] == PIRATE
    assert bob.get("/personas/assistant").json()["version"] == 0  # bob keeps the built-in

    versions = ana.get("/personas/assistant/versions").json()
    assert [(v["version"], v["in_use"]) for v in versions] == [(1, True), (0, False)]
    back = ana.post("/personas/assistant/rollback", json={"version": 0}).json()
    assert back["version"] == 0 and back["display_name"] != "Captain Mnemo"
    versions = ana.get("/personas/assistant/versions").json()
    assert [(v["version"], v["in_use"]) for v in versions] == [(1, False), (0, True)]
    problem(ana.post("/personas/assistant/rollback", json={"version": 7}), 404, "not-found")
    problem(ana.post("/personas/assistant/rollback", json={"version": -1}), 422, "invalid-request")


def test_put_json_fields_takes_the_id_from_the_url(ana):
    fields = {"display_name": "Ledger", "role_description": "Counts everything twice."}
    saved = ana.put("/personas/bookkeeper", json=fields).json()
    assert (saved["id"], saved["version"], saved["display_name"]) == ("bookkeeper", 1, "Ledger")
    assert "bookkeeper" in {p["id"] for p in ana.get("/personas").json()}
    cid = ana.post("/conversations", json={"persona_id": "bookkeeper"}).json()["id"]
    assert ana.get(f"/conversations/{cid}").json()["persona_id"] == "bookkeeper"


@pytest.mark.parametrize(
    ("content", "content_type", "status", "slug", "located"),
    [
        (
            "id: assistant\ndisplay_name: X\nrole_description: [unclosed\n",
            "application/yaml",
            422,
            "invalid-persona",
            True,
        ),
        (
            "id: assistant\ndisplay_name: X\nrole_description: ok\ncolour: blue\n",
            "text/yaml",
            422,
            "invalid-persona",
            True,
        ),
        (
            "id: sales\ndisplay_name: X\nrole_description: ok\n",
            "application/yaml",
            422,
            "invalid-persona",
            False,
        ),
        (
            '{"display_name": 5, "role_description": "ok"}',
            "application/json",
            422,
            "invalid-persona",
            False,
        ),
        ('["not", "an", "object"]', "application/json", 422, "invalid-request", False),
        ("{broken", "application/json", 422, "invalid-request", False),
        ("id: assistant", "application/xml", 415, "unsupported-media-type", False),
        (b"id: assistant\ndisplay_name: \xff\n", "application/yaml", 422, "invalid-request", False),
    ],
)
def test_a_bad_persona_is_refused_located_and_nothing_saved(
    ana, content, content_type, status, slug, located
):
    response = ana.put(
        "/personas/assistant", content=content, headers={"Content-Type": content_type}
    )
    doc = problem(response, status, slug)
    if located:
        errors = doc["errors"]
        assert errors and errors[0]["line"] is not None and errors[0]["column"] is not None
        assert f"line {errors[0]['line']}, column {errors[0]['column']}" in doc["detail"]
    assert ana.get("/personas/assistant").json()["version"] == 0
    assert [v["version"] for v in ana.get("/personas/assistant/versions").json()] == [0]


def test_refresh_rereads_the_builtins(ana):
    report = ana.post("/personas/refresh").json()["builtins"]
    assert report["assistant"] is None and "finance" in report


def test_refresh_takes_the_admin_token_when_one_is_set(tmp_path, gemini, monkeypatch):
    admin = "admin-" + secrets.token_urlsafe(16)
    s = ApiServer(tmp_path / "data", gemini.url, admin_token=admin, monkeypatch=monkeypatch)
    try:
        with s.client(s.token(new_owner())) as user, s.client(admin) as operator:
            problem(user.post("/personas/refresh"), 403, "forbidden")
            assert user.get("/personas").status_code == 200
            assert operator.post("/personas/refresh").status_code == 200
            problem(operator.get("/conversations"), 401, "unauthorized")  # admin is no user
    finally:
        s.stop()
