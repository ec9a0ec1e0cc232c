"""The facade's memory-panel operations (assistant/steering.py) and the panel's views: real
SQLite, real personas, the real google-genai client against the fake Gemini server."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from assistant.errors import InvalidInput, NotFound
from ui import memory_panel, views
from ui.badge import badge_text
from ui.i18n import speaking

OWNER = "ana"
OTHER = "bob"


@pytest.fixture
async def conversations(rt):
    return await rt.conversations()


async def send(conversations, conv_id, text, owner=OWNER):
    return [e async for e in conversations.send(owner, conv_id, text)]


async def test_the_plots_rows_are_the_stored_metrics_of_the_turns_sent(rt, conversations, fake):
    conv = await conversations.create(OWNER)
    await conversations.pin(OWNER, conv.id, "I'm vegetarian")
    texts = ["Hello there", "What should I cook?", "Something with lentils please"]
    for text in texts:
        await send(conversations, conv.id, text)
    await (await rt.service()).wait_background()
    panel = await conversations.memory(OWNER, conv.id)
    parts, tokens, latency = views.plot_frames(panel.metrics)
    requests = fake.of("streamGenerateContent")
    assert len(requests) == 3 and sorted(set(parts["turn"])) == [1, 2, 3]
    prompt_chars = len((await conversations.preview(OWNER, conv.id)).system_prompt)
    for turn, request in enumerate(requests, start=1):
        sent = dict(parts[parts["turn"] == turn][["part", "chars"]].itertuples(index=False))
        assert sent == {
            "persona": prompt_chars,
            "pinned": len("I'm vegetarian"),
            "summary": 0,
            "recalled": 0,
            "recent": sum(len(text) for _, text in request.turns),
            "budget": panel.budget,
        }
        assert request.system_text.startswith(
            (await conversations.preview(OWNER, conv.id)).system_prompt
        )
    assert list(tokens[tokens["kind"] == "input"]["tokens"]) == [11, 11, 11]  # the fake's count
    assert list(tokens[tokens["kind"] == "output"]["tokens"]) == [
        len(f"You said: {t}".split()) for t in texts
    ]
    assert len(latency) == 3 and (latency["seconds"] >= 0).all()
    # Every plot's x axis runs over whole turns, to turn 4 at least (ui.memory_panel.plots).
    note, *drawn = memory_panel.plots(panel.metrics)
    assert [p["x_lim"] for p in drawn] == [[1, 4]] * 3
    assert note == "" and [p["visible"] for p in drawn] == [True] * 3
    assert memory_panel.plots(panel.metrics * 3)[3]["x_lim"] == [1, 9]
    # One reply is one point, which a line plot does not draw: the note gives its figures.
    note, *drawn = memory_panel.plots(panel.metrics[:1])
    assert [p["visible"] for p in drawn] == [False] * 3
    first = panel.metrics[0].metrics
    recent = len("Hello there")
    seconds = f"{first.latency_ms / 1000:.1f}"
    assert note == (
        f"_One reply so far: it was sent {prompt_chars + 14 + recent:,} characters (persona "
        f"{prompt_chars:,}, pinned 14, recent {recent}), 11 tokens in and 4 out, {seconds} s. "
        "From the second reply on, each reply's figures are drawn here as lines._"
    )
    # Reset restarts the plots: none drawn (empty axes looked broken), a note says why.
    await conversations.reset(OWNER, conv.id)
    assert (await conversations.memory(OWNER, conv.id)).metrics == []
    view = await memory_panel.panel_view(rt, OWNER, conv.id)
    assert view.plots_note.startswith("_No replies yet: from the first one")
    assert [p["visible"] for p in (view.plot_parts, view.plot_tokens, view.plot_latency)] == [
        False
    ] * 3
    assert memory_panel.empty_panel().plots_note == view.plots_note


async def test_the_panel_shows_summary_pins_about_me_and_recall(conversations):
    conv = await conversations.create(OWNER)
    store = conversations.store
    await store.append(OWNER, conv.id, "user", "The Kestrel invoice is due on 3 May.")
    for i in range(1, 101):
        await store.append(OWNER, conv.id, "assistant" if i % 2 else "user", f"message {i}")
    assert await store.summarize_if_needed(OWNER, conv.id)
    await conversations.pin(OWNER, conv.id, "Red line is 15%")
    await conversations.pin(OWNER, None, "I live in Porto", about_me=True)
    panel = await conversations.memory(OWNER, conv.id, draft="when is the Kestrel invoice due?")
    assert "Kestrel" in panel.summary.content and not panel.summary.edited
    assert [p.content for p in panel.pinned] == ["Red line is 15%"]
    assert [p.content for p in panel.about_me] == ["I live in Porto"] and not panel.about_me_on
    assert any("Kestrel invoice" in r["content"] for r in panel.recalled)
    assert "would come back" in views.recall_markdown(panel.recalled, "Kestrel")
    assert "About me is off" in views.pins_note(
        panel.pinned, panel.about_me, panel.about_me_on, panel
    )
    assert await conversations.set_about_me(OWNER, True)
    status = await conversations.status(OWNER, conv.id)
    assert status.about_me_on and status.pinned == 2
    assert "👤 About me on" in badge_text(status, "Gemini") and "📌 2 pinned" in badge_text(
        status, "Gemini"
    )
    written = await conversations.write_summary(OWNER, conv.id, "Kestrel owes 12,400 EUR.")
    assert "Edited by you" in views.summary_note(written)
    new_chat = await conversations.memory(OWNER, None)
    assert new_chat.summary is None and [p.content for p in new_chat.about_me] == [
        "I live in Porto"
    ]


async def test_a_zh_tw_page_gets_the_panel_in_chinese(rt, conversations, fake):
    """Every note the panel's Python writes, and the plots' titles, axes and lines."""
    conv = await conversations.create(OWNER)
    await send(conversations, conv.id, "The Kestrel invoice is due on 3 May.")
    await send(conversations, conv.id, "Thanks")
    await (await rt.service()).wait_background()
    await conversations.pin(OWNER, conv.id, "Red line is 15%")
    await conversations.pin(OWNER, None, "I live in Porto", about_me=True)
    with speaking("zh-TW"):
        view = await memory_panel.panel_view(rt, OWNER, conv.id, draft="Kestrel invoice?")
        empty = memory_panel.empty_panel()
        status = await conversations.status(OWNER, conv.id)
        question = views.reset_question(status, "Kestrel")
        recalled = views.recall_markdown([{"role": "user", "content": "Kestrel is due"}], "K?")
    assert view.summary_note == "_記憶中還沒有摘要：對話變長時會自動寫下。_"
    assert view.pins_note.startswith("這段對話釘選了 1 則 · 釘選用了 15／2k 字元（記憶預算共 16k）")
    assert "「關於我」已關閉：1 則事實保留著，但不會送出。" in view.pins_note
    assert view.recall_preview == "_沒有較早的內容符合這則訊息。_"  # all four are recent
    assert recalled == "會喚起 1 則較早的訊息：\n- **你:** Kestrel is due"
    assert view.plot_parts["title"] == "送出的字元，依部分"
    assert (view.plot_parts["x_title"], view.plot_parts["y_title"]) == ("回合", "字元")
    assert set(view.plot_parts["value"]["part"]) == {
        "角色",
        "釘選",
        "摘要",
        "喚起",
        "近期",
        "記憶預算",
    }
    assert set(view.plot_tokens["value"]["kind"]) == {"輸入", "輸出"}
    assert view.plot_latency["title"] == "每次回覆的秒數"
    assert view.plots_note == ""  # two replies: the plots say it
    with speaking("zh-TW"):
        rows = (await conversations.memory(OWNER, conv.id)).metrics[:1]
        note = memory_panel.plots(rows)[0]
    first = rows[0].metrics
    assert note.startswith(
        f"_目前只有一則回覆：送出 {first.persona_chars + first.recent_chars:,} 個字元（角色 "
        f"{first.persona_chars:,}、近期 {first.recent_chars}），輸入 11 個詞元、輸出 "
    )
    assert note.endswith(
        f" 個，{first.latency_ms / 1000:.1f} 秒。從第二則起，每次回覆的數字會畫成線在這裡。_"
    )
    assert empty.summary_note == "_還沒有對話：先送出第一則訊息。_"
    assert empty.pins_note == "_釘選的事實會列在這裡。_"
    assert question.startswith("要忘掉這段對話嗎？**4 則訊息、1 則釘選的事實和標題「Kestrel」**")


async def test_panel_errors_are_user_errors_and_nothing_crosses_owners(conversations):
    conv = await conversations.create(OWNER)
    with pytest.raises(InvalidInput, match="no summary yet"):
        await conversations.write_summary(OWNER, conv.id, "made up")
    with pytest.raises(InvalidInput, match="empty"):
        await conversations.pin(OWNER, conv.id, "  ")
    with pytest.raises(InvalidInput, match="Send a first message"):
        await conversations.pin(OWNER, None, "no chat yet")
    fact = await conversations.pin(OWNER, conv.id, "mine")
    with pytest.raises(NotFound):
        await conversations.memory(OTHER, conv.id)
    with pytest.raises(InvalidInput, match="does not exist"):
        await conversations.unpin(OTHER, fact.id)
    with pytest.raises(NotFound):
        await conversations.export(OTHER, conv.id)
    assert await conversations.set_time_zone(OWNER, "Not/AZone") is None
    assert await conversations.set_time_zone(OWNER, "Asia/Taipei") == "Asia/Taipei"


async def test_export_import_between_owners_gives_the_same_next_request(conversations, fake):
    conv = await conversations.create(OWNER, persona_id="finance")
    await send(conversations, conv.id, "Our gross-margin red line is 15%.")
    await conversations.pin(OWNER, conv.id, "Client: Kestrel")
    text = await conversations.export(OWNER, conv.id)
    doc = json.loads(text)
    snapshot = doc["conversations"][0]["persona"]["snapshot"]
    assert snapshot["display_name"] and "finance" in snapshot["yaml"]

    imported = await conversations.import_file(OTHER, text.encode())
    (copy,) = imported.conversations
    assert imported.notes == [] and copy.owner == OTHER
    mine = await conversations.preview(OWNER, conv.id, draft="and the red line?")
    theirs = await conversations.preview(OTHER, copy.id, draft="and the red line?")
    assert (theirs.system_instruction, theirs.turns) == (mine.system_instruction, mine.turns)
    fake.reply("15%.")
    await send(conversations, conv.id, "What is the red line?")
    fake.reply("15%.")
    await send(conversations, copy.id, "What is the red line?", owner=OTHER)
    first, second = fake.requests[-2:]
    assert (first.system_text, first.turns) == (second.system_text, second.turns)


@pytest.mark.parametrize(
    "raw,error",
    [
        (b"\xff\xfe not json", "not valid JSON"),
        (b'{"format": "mnemo-export", "version": 2, "conversations": []}', "version 1"),
        (b" " * 20_000_001, "at most 20 MB"),
    ],
)
async def test_a_bad_import_is_refused_clearly_and_saves_nothing(conversations, raw, error):
    with pytest.raises(InvalidInput, match=error):
        await conversations.import_file(OWNER, raw)
    assert await conversations.list(OWNER) == []


async def test_an_edited_persona_in_the_file_is_reported(conversations):
    conv = await conversations.create(OWNER, persona_id="finance")
    doc = json.loads(await conversations.export(OWNER, conv.id))
    doc["conversations"][0]["persona"]["snapshot"]["yaml"] += "\n# edited elsewhere\n"
    imported = await conversations.import_file(OTHER, json.dumps(doc))
    assert len(imported.notes) == 1 and "another version" in imported.notes[0]


async def test_delete_everything_removes_all_of_the_owner_and_nothing_else(conversations):
    mine = await conversations.create(OWNER)
    await send(conversations, mine.id, "Kestrel owes us money")
    await conversations.pin(OWNER, None, "I live in Porto", about_me=True)
    document = await conversations.persona(OWNER, "assistant")
    await conversations.save_persona(OWNER, document.yaml_text.replace("Mnemo", "Mnemo Plus", 1))
    theirs = await conversations.create(OTHER)
    await send(conversations, theirs.id, "Kestrel is my cat", owner=OTHER)
    assert await conversations.delete_everything(OWNER) == 1
    assert await conversations.list(OWNER) == []
    assert (await conversations.memory(OWNER, None)).about_me == []
    assert [v.version for v in await conversations.persona_versions(OWNER, "assistant")] == [0]
    assert (await conversations.search(OWNER, "Kestrel")).results == []
    assert len((await conversations.search(OTHER, "Kestrel")).results) == 1


async def test_a_refresh_after_a_reply_leaves_unchanged_lists_and_their_ticks(rt, conversations):
    # A reply finishing refreshes the panel; a list of facts that has not changed is left as
    # it is on screen (a fact just ticked for deletion stays ticked), a changed one is redrawn.
    from ui.memory_panel import panel_view, refresh_panel

    conv = await conversations.create(OWNER)
    keep = await conversations.pin(OWNER, conv.id, "I'm vegetarian")
    gone = await conversations.pin(OWNER, conv.id, "Allergic to nuts")
    about = await conversations.pin(OWNER, None, "I live in Porto", about_me=True)
    shown = await panel_view(rt, OWNER, conv.id)
    assert (shown.pins_shown, shown.about_me_shown) == ((keep.id, gone.id), (about.id,))
    await send(conversations, conv.id, "What should I cook?")
    view = await refresh_panel(rt, OWNER, conv.id, shown.pins_shown, shown.about_me_shown)
    assert view.pinned_facts == gr.skip()
    assert view.about_me_facts == gr.skip()
    await conversations.unpin(OWNER, gone.id)  # e.g. in another tab
    view = await refresh_panel(rt, OWNER, conv.id, shown.pins_shown, shown.about_me_shown)
    assert view.pinned_facts["choices"] == [("I'm vegetarian", keep.id)]
    assert view.pinned_facts["value"] == [] and view.pins_shown == (keep.id,)


def test_the_one_reply_note_says_only_what_was_measured():
    # A call recorded before its parts were measured, or whose model reported no tokens, had
    # read "it was sent 0 characters ()".
    from memory.records import MetricsRow, TurnMetrics

    bare = TurnMetrics(model="m")
    assert memory_panel.first_reply_note(bare) == (
        "_One reply so far, with nothing measured to draw. From the second reply on, each "
        "reply's figures are drawn here as lines._"
    )
    timed = TurnMetrics(model="m", latency_ms=1500, input_tokens=12)  # no output tokens
    assert memory_panel.first_reply_note(timed) == (
        "_One reply so far: 1.5 s. From the second reply on, each reply's figures are drawn "
        "here as lines._"
    )
    parts = TurnMetrics(model="m", persona_chars=900, summary_chars=0, recent_chars=1_200)
    note, *drawn = memory_panel.plots([MetricsRow(1, 0.0, parts)])
    assert note.startswith("_One reply so far: it was sent 2,100 characters (persona 900, recent")
    assert [p["visible"] for p in drawn] == [False] * 3
    with speaking("zh-TW"):
        assert memory_panel.first_reply_note(bare).startswith("_目前只有一則回覆，沒有量到")
