"""The sidebar's API tokens panel: its handlers over a real runtime (SQLite in tmp), and a
token made there working against the HTTP API."""

from __future__ import annotations

import gradio as gr
import pytest

from ui import tokens as panel


async def test_create_shows_the_secret_once_and_lists_the_token(rt):
    secret, listing, choices, name_box = await panel.create_token(rt, "ana", "  my bot ")
    assert secret["visible"] is True and secret["value"].startswith("mnemo_")
    assert "| my bot | `…" + secret["value"][-4:] + "` |" in listing
    assert choices["choices"] == [(f"my bot (…{secret['value'][-4:]})", choices["choices"][0][1])]
    assert name_box["value"] == ""
    again, _ = await panel.show_tokens(rt, "ana")
    assert secret["value"] not in again  # never shown again
    assert "never" in again  # not used yet


async def test_revoke_stops_the_token_and_marks_it(rt):
    secret, _, choices, _ = await panel.create_token(rt, "ana", "script")
    token_id = choices["choices"][0][1]
    hidden, listing, after = await panel.revoke_token(rt, "ana", token_id)
    assert hidden["visible"] is False and hidden["value"] == ""
    assert "~~script~~ (revoked)" in listing and after["choices"] == []
    facade = await rt.conversations()
    assert await facade.check_token(secret["value"]) is None


async def test_tokens_are_per_owner(rt):
    await panel.create_token(rt, "ana", "anas")
    listing, choices = await panel.show_tokens(rt, "bob")
    assert listing == panel.NO_TOKENS and choices["choices"] == []
    _, _, anas, _ = await panel.create_token(rt, "ana", "second")
    with pytest.raises(gr.Error, match="does not exist"):
        await panel.revoke_token(rt, "bob", anas["choices"][0][1])


@pytest.mark.parametrize(("name", "message"), [("", "Give the token a name"), ("x" * 61, "limit")])
async def test_a_bad_name_is_refused_and_nothing_made(rt, name, message):
    with pytest.raises(gr.Error, match=message):
        await panel.create_token(rt, "ana", name)
    listing, _ = await panel.show_tokens(rt, "ana")
    assert listing == panel.NO_TOKENS


async def test_revoke_without_a_pick_says_so(rt):
    with pytest.raises(gr.Error, match="Pick the token"):
        await panel.revoke_token(rt, "ana", None)


async def test_a_token_name_with_markup_shows_as_typed(rt):
    _, listing, _, _ = await panel.create_token(rt, "ana", "<b>bot</b> | *x*")
    assert r"| &lt;b&gt;bot&lt;/b&gt; \| \*x\* | `…" in listing  # no bold, table intact
