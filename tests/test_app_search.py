"""The sidebar search, called as plain functions: a real store in a tmp dir, no browser."""

from __future__ import annotations

import gradio as gr
import pytest

from assistant.gemini import GeminiModel
from assistant.runtime import Runtime
from ui import sidebar, views

OWNER = "b-owner-aaaaaaaaaaaaaaaa"
OTHER = "b-other-bbbbbbbbbbbbbbbb"


async def chat(rt, owner, *messages, title=None):
    """A saved conversation: alternating user and assistant messages."""
    store = await rt.store()
    conversation = await store.create_conversation(owner, title=title)
    for i, text in enumerate(messages):
        await store.append(owner, conversation.id, "user" if i % 2 == 0 else "assistant", text)
    return conversation.id


def shown(view):
    """The result rows' HTML, as the sidebar renders them."""
    return [sample[0] for sample in view.results["samples"]]


async def test_finds_messages_with_marked_snippets_newest_first(rt):
    older = await chat(rt, OWNER, "We ate ramen at Menya Musashi", "Noted: Menya Musashi.")
    await chat(rt, OWNER, "Plan a weekend in Tainan", "Start at Anping.")
    newer = await chat(rt, OWNER, "My sister loves ramen", "Ramen it is.")
    view = await sidebar.search_conversations(rt, OWNER, "  ramen ")
    assert view.hit_ids == [newer, older]
    rows = shown(view)
    assert "<mark>Ramen</mark> it is." in rows[0] and "2 matching messages" in rows[0]
    assert "We ate <mark>ramen</mark> at Menya Musashi" in rows[1]
    assert view.results["visible"] is True
    assert view.status["value"] == "2 conversations — newest first"
    assert view.status["visible"] is True
    assert view.conversations["visible"] is False  # results take the list's place


async def test_finds_a_title_and_marks_it(rt):
    renamed = await chat(rt, OWNER, "Hello", title="Trip to Kyoto")
    view = await sidebar.search_conversations(rt, OWNER, "kyoto")
    assert view.hit_ids == [renamed]
    assert "Trip to <mark>Kyoto</mark>" in shown(view)[0]
    assert "title matches" in shown(view)[0]


async def test_no_matches_says_so(rt):
    await chat(rt, OWNER, "About apples")
    view = await sidebar.search_conversations(rt, OWNER, "bananas")
    assert view.hit_ids == [] and view.results["visible"] is False
    assert view.status["value"].startswith("No matches") and view.status["visible"] is True


async def test_an_empty_box_brings_the_list_back(rt):
    await chat(rt, OWNER, "About apples")
    for query in ("", "   ", None):
        view = await sidebar.search_conversations(rt, OWNER, query)
        assert view.hit_ids == [] and view.results["visible"] is False
        assert view.status["visible"] is False
        assert view.conversations["visible"] is True


HOSTILE = [
    '"', '""', "*", "ramen*", "NEAR(", "NEAR(ramen", "OR", "ramen OR", "AND NOT", "^ramen",
    "title:ramen", "-ramen", "(", ")", "?!.,;", "'; DROP TABLE turns; --", "\x00",
    "ramen " * 2_000, "x" * 10_001,
]  # fmt: skip


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_raise(rt, query):
    await chat(rt, OWNER, "We ate ramen")
    view = await sidebar.search_conversations(rt, OWNER, query)
    assert view.status["visible"] is True
    assert view.status["value"].startswith("No matches") or view.results["visible"] is True


async def test_user_text_is_escaped_in_results(rt):
    nasty = await chat(rt, OWNER, "<img src=x onerror=alert(1)> ramen & <b>bold</b>")
    view = await sidebar.search_conversations(rt, OWNER, "ramen")
    assert view.hit_ids == [nasty]
    row = shown(view)[0]
    assert "<img" not in row and "<b>" not in row
    assert "&lt;img src=x onerror=alert(1)&gt; <mark>ramen</mark> &amp; &lt;b&gt;" in row


async def test_another_owners_text_never_shows(rt):
    theirs = await chat(rt, OTHER, "Their secret ramen place", title="Secret ramen")
    mine = await chat(rt, OWNER, "My own ramen")
    view = await sidebar.search_conversations(rt, OWNER, "secret ramen")
    assert view.hit_ids == [mine]
    assert all("ecret" not in row for row in shown(view))
    none = await sidebar.search_conversations(rt, OWNER, "secret")
    assert none.hit_ids == [] and none.status["value"].startswith("No matches")
    # A stale or forged row id still goes through the owner: nothing of theirs opens.
    with pytest.warns(UserWarning, match="no longer exists"):
        opened = await sidebar.open_search_hit(rt, OWNER, [theirs], 0)
    assert opened.conversation_id is None
    assert all("secret" not in m["content"] for m in opened.chat)


async def test_opening_a_hit_switches_to_that_conversation(rt):
    older = await chat(rt, OWNER, "We ate ramen at Menya Musashi", "Noted.")
    await chat(rt, OWNER, "Plan a weekend in Tainan", "Start at Anping.")
    view = await sidebar.search_conversations(rt, OWNER, "musashi")
    opened = await sidebar.open_search_hit(rt, OWNER, view.hit_ids, 0)
    expected = await sidebar.switch_conversation(rt, OWNER, older)
    assert opened.conversation_id == older
    assert opened.chat == expected.chat and opened.badge == expected.badge
    assert opened.inspector == expected.inspector and opened.persona == expected.persona
    assert opened.conversations["value"] == older
    assert ("user", "We ate ramen at Menya Musashi") in [
        (m["role"], m["content"]) for m in opened.chat
    ]


@pytest.mark.parametrize("index", [None, -1, 1, 99])
async def test_a_click_outside_the_results_changes_nothing(rt, index):
    only = await chat(rt, OWNER, "We ate ramen")
    view = await sidebar.open_search_hit(rt, OWNER, [only], index)
    assert all(isinstance(part, type(gr.skip())) for part in view)


async def test_search_with_memory_unavailable_says_so(tmp_path, fake):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mnemo.db").write_bytes(b"this is not a database" * 100)
    rt = Runtime(data, model=GeminiModel("test-key", base_url=fake.url))
    try:
        view = await sidebar.search_conversations(rt, OWNER, "ramen")
        assert view.hit_ids == [] and view.results["visible"] is False
        assert "unavailable" in view.status["value"]
    finally:
        await rt.aclose()


def test_marked_html_escapes_and_marks():
    start, end = views.SEARCH_MARK
    assert views.marked_html(f"a <b> {start}x&y{end} {start}open") == (
        "a &lt;b&gt; <mark>x&amp;y</mark> open"
    )


@pytest.mark.parametrize(
    "query,found",
    [
        ("高", True),  # one character, first of its run: a normal search in Chinese
        ("雄", True),  # one character, last of its run (no index pair starts with it)
        ("高雄", True),
        ("吃", True),
        ("京", False),
        ("高 OR 京", True),
        ('"高', True),
        ("高*", True),
        ("NEAR(高 雄)", True),
        ("^雄", True),
        ("%", False),  # LIKE syntax is not syntax here either
        ("_", False),
    ],
)
async def test_single_cjk_characters_are_searchable_and_syntax_is_harmless(rt, query, found):
    """Issue 15, item 10: 高 found nothing while 高雄 found the conversation."""
    kaohsiung = await chat(rt, OWNER, "我們下週去高雄吃飯", "好的，高雄見。")
    await chat(rt, OTHER, "我也去高雄")  # someone else's: never shown
    view = await sidebar.search_conversations(rt, OWNER, query)
    assert view.hit_ids == ([kaohsiung] if found else [])
    if found and query in ("高", "雄"):
        assert f"<mark>{query}</mark>" in shown(view)[0]
        assert "2 matching messages" in shown(view)[0]


async def test_a_single_cjk_character_finds_a_title(rt):
    trip = await chat(rt, OWNER, "hello", title="台北旅行")
    view = await sidebar.search_conversations(rt, OWNER, "北")
    assert view.hit_ids == [trip] and "台<mark>北</mark>旅行" in shown(view)[0]


async def test_a_roundtable_reply_is_labelled_with_its_speaker(rt):
    """Issue 13: the sidebar names who said it — the speaker persona, not "Assistant"."""
    store = await rt.store()
    board = await store.create_conversation(OWNER, persona_id="roundtable:erp_board")
    await store.append(OWNER, board.id, "user", "Should we take the Nike order by Tuesday?")
    await store.append(OWNER, board.id, "assistant", "Sales wants the Nike order.", speaker="sales")
    await store.append(
        OWNER, board.id, "assistant", "The Nike margin is too thin.", speaker="finance"
    )
    await store.append(OWNER, board.id, "assistant", "Nike: gone persona.", speaker="ghost")
    view = await sidebar.search_conversations(rt, OWNER, "margin")
    row = shown(view)[0]
    assert '<span class="hit-who">Finance Controller:</span>' in row
    assert "Assistant" not in row and row.startswith('<div class="hit"><div class="hit-title">👥')
    # A persona that no longer exists: its id, as the chat's bubbles show it.
    view = await sidebar.search_conversations(rt, OWNER, "gone persona")
    assert '<span class="hit-who">ghost:</span>' in shown(view)[0]
    # The user's own message is still "You".
    view = await sidebar.search_conversations(rt, OWNER, "tuesday")
    assert '<span class="hit-who">You:</span>' in shown(view)[0]
