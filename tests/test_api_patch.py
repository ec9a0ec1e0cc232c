"""PATCH /conversations/{id} changes title, persona and retention together or not at all, over
real HTTP, on SQLite and on PostgreSQL (issue 14). The database refusing one of the changes is
a real trigger in the real database, not a mock."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from api_harness import api_server

SQLITE_REFUSES_RETENTION = (
    "CREATE TRIGGER refuse_retention BEFORE UPDATE OF retention_minutes ON conversations "
    "BEGIN SELECT RAISE(ABORT, 'the disk refused'); END"
)
POSTGRES_REFUSES_RETENTION = (
    "CREATE FUNCTION refuse_retention() RETURNS trigger AS $$ BEGIN "
    "RAISE EXCEPTION 'the disk refused'; END $$ LANGUAGE plpgsql",
    "CREATE TRIGGER refuse_retention BEFORE UPDATE OF retention_minutes ON conversations "
    "FOR EACH ROW EXECUTE FUNCTION refuse_retention()",
)
KEPT = {"title": "Kept", "persona_id": "assistant", "retention_minutes": 60}


@pytest.fixture
def server(backend, tmp_path, fake, request, monkeypatch):
    url = None
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        monkeypatch.setenv("MNEMO_SECRET", "one-secret-for-the-replicas")
    with api_server(tmp_path / "data", fake.url, database_url=url) as s:
        s.backend, s.database_url = backend, url
        yield s


@pytest.fixture
def ana(server):
    with server.client(server.token("ana")) as client:
        yield client


def settings(client, cid: str) -> dict:
    doc = client.get(f"/conversations/{cid}").json()
    return {name: doc[name] for name in KEPT}


def refuse_retention_changes(server) -> None:
    """From now on the database itself refuses to change a conversation's retention."""
    if server.backend == "sqlite":
        with sqlite3.connect(server.rt.data_dir / "mnemo.db") as db:
            db.execute(SQLITE_REFUSES_RETENTION)
        return
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        for statement in POSTGRES_REFUSES_RETENTION:
            conn.execute(statement)


def test_title_persona_and_retention_change_together(ana):
    cid = ana.post("/conversations", json=KEPT).json()["id"]
    body = {"title": "Budget review", "persona_id": "finance", "retention_minutes": None}
    response = ana.patch(f"/conversations/{cid}", json=body)
    assert response.status_code == 200, response.text
    assert {k: response.json()[k] for k in KEPT} == body
    assert response.json()["expires_at"] is None
    assert settings(ana, cid) == body
    assert ana.patch(f"/conversations/{cid}", json={}).json()["title"] == "Budget review"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"title": "A good title", "persona_id": "no-such-persona"}, 404),
        ({"title": "A good title", "retention_minutes": 5, "persona_id": "../etc"}, 404),
        ({"persona_id": "roundtable:no-such-board", "title": "Another good one"}, 404),
    ],
)
def test_an_unknown_persona_leaves_the_other_changes_unmade(ana, body, status):
    cid = ana.post("/conversations", json=KEPT).json()["id"]
    response = ana.patch(f"/conversations/{cid}", json=body)
    assert response.status_code == status, response.text
    assert settings(ana, cid) == KEPT


def test_the_database_refusing_one_change_leaves_the_others_unmade(server, ana):
    """Title and persona are fine, the retention is refused by the database: nothing of the
    three is kept."""
    cid = ana.post("/conversations", json=KEPT).json()["id"]
    refuse_retention_changes(server)
    body = {"title": "Budget review", "persona_id": "finance", "retention_minutes": 30}
    response = ana.patch(f"/conversations/{cid}", json=body)
    assert response.status_code == 503, response.text
    assert response.json()["type"].endswith("#storage-unavailable")
    assert "could not change the conversation" in response.json()["detail"]
    assert settings(ana, cid) == KEPT
    # Changes that do not touch retention still go through.
    assert ana.patch(f"/conversations/{cid}", json={"title": "Renamed"}).status_code == 200
    assert settings(ana, cid) == {**KEPT, "title": "Renamed"}


def test_another_owners_conversation_is_not_found_and_unchanged(server, ana):
    cid = ana.post("/conversations", json=KEPT).json()["id"]
    with server.client(server.token("bob")) as bob:
        response = bob.patch(f"/conversations/{cid}", json={"title": "Mine now"})
    assert response.status_code == 404, response.text
    assert settings(ana, cid) == KEPT
