"""The facade's operations added for the HTTP API: API tokens, PUT of a persona from YAML or
fields, re-reading the built-ins. Real SQLite in tmp, real personas."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from assistant.errors import InvalidInput, InvalidPersonaYaml, NotFound
from assistant.tokens import PREFIX


@pytest.fixture
async def conversations(rt):
    return await rt.conversations()


async def test_an_issued_token_is_checked_by_its_secret_and_stored_hashed(conversations, rt):
    issued = await conversations.issue_token("ana", "my bot")
    assert issued.secret.startswith(PREFIX) and len(issued.secret) > 40
    assert issued.token.hint == issued.secret[-4:]
    found = await conversations.check_token(issued.secret)
    assert found is not None and (found.owner, found.name) == ("ana", "my bot")
    with sqlite3.connect(rt.data_dir / "mnemo.db") as db:
        (stored,) = db.execute("SELECT token_hash FROM api_tokens").fetchone()
        dump = "\n".join(db.iterdump())
    assert stored == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert issued.secret not in dump


@pytest.mark.parametrize(
    "secret", ["", "mnemo_", "mnemo_wrong", "not-ours", PREFIX + "x" * 200, "mnemo_ünïcode"]
)
async def test_anything_else_is_no_token(conversations, secret):
    await conversations.issue_token("ana", "real")
    assert await conversations.check_token(secret) is None


async def test_revoked_tokens_are_listed_and_refused(conversations):
    one = await conversations.issue_token("ana", "one")
    two = await conversations.issue_token("ana", "two")
    await conversations.revoke_token("ana", one.token.id)
    assert await conversations.check_token(one.secret) is None
    assert await conversations.check_token(two.secret) is not None
    assert [(t.name, t.active) for t in await conversations.list_tokens("ana")] == [
        ("two", True),
        ("one", False),
    ]


async def test_token_errors_are_user_errors(conversations):
    issued = await conversations.issue_token("ana", "one")
    with pytest.raises(NotFound, match="does not exist"):
        await conversations.revoke_token("bob", issued.token.id)
    with pytest.raises(InvalidInput, match="Give the token a name"):
        await conversations.issue_token("ana", "  ")
    assert len(await conversations.list_tokens("ana")) == 1


async def test_put_persona_from_fields_takes_the_url_id(conversations):
    info = await conversations.put_persona(
        "ana", "ledger", None, {"display_name": "Ledger", "role_description": "Counts twice."}
    )
    assert (info.id, info.version, info.display_name) == ("ledger", 1, "Ledger")
    document = await conversations.persona("ana", "ledger")
    assert document.fields["role_description"] == "Counts twice."
    assert "id: ledger" in document.yaml_text


async def test_put_persona_yaml_with_another_id_is_refused(conversations):
    text = "id: sales\ndisplay_name: X\nrole_description: Y\n"
    with pytest.raises(InvalidPersonaYaml, match="URL names 'assistant'") as refused:
        await conversations.put_persona("ana", "assistant", text, None)
    assert refused.value.located == [{"field": "id", "message": "is 'sales', not 'assistant'"}]
    assert (await conversations.persona("ana", "assistant")).info.version == 0


async def test_bad_persona_yaml_is_located(conversations):
    text = "id: assistant\ndisplay_name: X\nrole_description: [unclosed\n"
    with pytest.raises(InvalidPersonaYaml) as refused:
        await conversations.put_persona("ana", "assistant", text, None)
    (where,) = refused.value.located
    assert where["line"] is not None and where["column"] is not None
    assert f"line {where['line']}, column {where['column']}" in refused.value.message


async def test_refresh_reports_each_builtin(conversations):
    report = await conversations.refresh_personas()
    assert {"assistant", "finance", "sales"} <= set(report)
    assert all(problem is None for problem in report.values())
