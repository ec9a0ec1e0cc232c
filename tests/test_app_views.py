"""The app's plain helpers: sessions, settings for Spaces, and what the views compute."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

import app
from assistant import config
from assistant.gemini import GeminiModel
from assistant.runtime import Runtime
from memory import MemoryStatus, MetricsRow, ResetResult, Turn, TurnMetrics
from ui import sessions, views

NOW = 1_800_000_000.0
ROOT = Path(__file__).resolve().parent.parent


# ---- sessions ------------------------------------------------------------------------------


def test_browser_secret_is_made_once_and_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMO_SECRET", raising=False)
    first = sessions.browser_secret(tmp_path)
    assert len(first) >= 32
    assert sessions.browser_secret(tmp_path) == first
    mode = stat.S_IMODE(os.stat(tmp_path / sessions.SECRET_FILE).st_mode)
    assert mode == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".secret-")]


def test_browser_secret_lookup_order(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_SECRET", "from-env")
    assert sessions.browser_secret(tmp_path, "from-arg") == "from-arg"
    assert sessions.browser_secret(tmp_path) == "from-env"
    assert not (tmp_path / sessions.SECRET_FILE).exists()


def test_the_browser_secret_reaches_every_page_so_only_the_id_protects_chats(tmp_path):
    """Gradio sends BrowserState's key in the config every page loads: the encryption cannot
    protect a chat, the unguessable id must, and the README must say so."""
    import json

    rt = Runtime(tmp_path, model=GeminiModel("test-key", base_url="http://127.0.0.1:9"))
    secret = sessions.browser_secret(tmp_path)
    config = json.dumps(app.build_demo(rt).get_config_file(), default=str)
    assert secret in config
    ids = {sessions.new_browser_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) - 2 >= 24 for i in ids)  # >= 144 random bits
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "encrypted with a secret" not in readme
    assert "sent to every page" in readme and "protects nothing" in readme
    assert "sign in with Hugging Face" in readme


@pytest.mark.parametrize(
    "value,ok",
    [
        ("b-" + "a" * 24, True),
        ("b-short", False),
        ("hf:someone", False),
        ("../../etc", False),
        (None, False),
        (42, False),
    ],
)
def test_only_well_formed_browser_ids_are_kept(value, ok):
    assert sessions.is_browser_id(value) is ok


# ---- settings on a Space -------------------------------------------------------------------


def test_data_dir_on_a_space_with_persistent_storage(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMO_DATA_DIR", raising=False)
    monkeypatch.setattr(config, "SPACE_DATA_DIR", tmp_path)
    monkeypatch.setenv("SPACE_ID", "someone/mnemo")
    assert config.data_dir() == tmp_path
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path / "elsewhere"))
    assert config.data_dir() == tmp_path / "elsewhere"
    assert config.data_dir(tmp_path / "arg") == tmp_path / "arg"


def test_data_dir_on_a_space_without_storage(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMO_DATA_DIR", raising=False)
    monkeypatch.setattr(config, "SPACE_DATA_DIR", tmp_path / "missing")
    monkeypatch.setenv("SPACE_ID", "someone/mnemo")
    assert str(config.data_dir()) == "data"


def test_host_is_public_only_on_a_space(monkeypatch):
    monkeypatch.delenv("MNEMO_HOST", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert config.host() == "127.0.0.1"
    monkeypatch.setenv("SPACE_ID", "someone/mnemo")
    assert config.host() == "0.0.0.0"
    monkeypatch.setenv("MNEMO_HOST", "127.0.0.2")
    assert config.host() == "127.0.0.2"


@pytest.mark.parametrize("space", [False, True])
def test_build_demo_builds_locally_and_on_a_space(tmp_path, monkeypatch, space):
    if space:
        monkeypatch.setenv("SPACE_ID", "someone/mnemo")
    else:
        monkeypatch.delenv("SPACE_ID", raising=False)
    rt = Runtime(tmp_path, model=GeminiModel("k", base_url="http://127.0.0.1:9"))
    demo = app.build_demo(rt)
    ids = {getattr(block, "elem_id", None) for block in demo.blocks.values()}
    assert {"sidebar", "new-chat", "conversations", "chat", "chat-input", "memory-badge"} <= ids
    assert {"reset-btn", "inspector", "persona-yaml", "persona-preview", "save-btn"} <= ids
    assert "login" not in ids  # sign-in needs the Space's OAuth variables too
    assert isinstance(demo, gr.Blocks)


# ---- views ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "age,expected",
    [
        (5, "just now"),
        (120, "2 min ago"),
        (45 * 60, "45 min ago"),
        (3 * 3600, "3 h ago"),
        (30 * 3600, "yesterday"),
        (4 * 86400, "4 days ago"),
    ],
)
def test_relative_time(age, expected):
    assert views.relative_time(NOW - age, NOW) == expected


def test_relative_time_falls_back_to_a_date():
    assert views.relative_time(NOW - 30 * 86400, NOW).endswith(", 2026")


@pytest.mark.parametrize(
    "content,text",
    [
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "ab"),
        ({"text": "dict"}, "dict"),
        (None, ""),
        ({"path": "/tmp/x.png", "orig_name": "x.png"}, "[file: x.png]"),
    ],
)
def test_message_text(content, text):
    assert views.message_text(content) == text


def _turn(i, role, content, **kw):
    return Turn(id=i, conversation_id="c", role=role, content=content, created_at=NOW, **kw)


def test_chat_messages_greeting_first_summaries_hidden_stops_marked():
    turns = [
        _turn(1, "user", "hi"),
        _turn(2, "assistant", "half a rep", incomplete=True),
        _turn(3, "summary", "they said hi", is_summary=True),
        _turn(4, "user", "again"),
    ]
    messages = views.chat_messages(turns, greeting="Hello!")
    assert [m["role"] for m in messages] == ["assistant", "user", "assistant", "user"]
    assert messages[0]["content"] == "Hello!"
    assert messages[2]["content"].endswith(views.STOPPED_NOTE)
    assert all("they said hi" not in m["content"] for m in messages)


def test_conversation_label_truncates_and_adds_time():
    conversation = SimpleNamespace(
        title="A rather long title that goes on and on",
        created_at=NOW - 600,
        last_active_at=NOW - 120,
    )
    label = views.conversation_label(conversation, "💰", NOW)
    first, second = label.split("\n")
    assert first.startswith("💰 A rather long") and first.endswith("…")
    assert len(first) <= views.TITLE_CHARS + 2
    assert second == "2 min ago"


def test_preview_fences_survive_backticks_in_messages():
    preview = SimpleNamespace(
        system_prompt="p",
        system_instruction="You are X.",
        summary=None,
        turns=[{"role": "user", "content": "```python\nprint(1)\n```"}],
        chars=30,
        budget=12_000,
        recalled=[],
        not_shown=0,
    )
    text = views.preview_markdown(preview)
    assert "````text\n```python\nprint(1)\n```\n````" in text
    assert "of **12k** characters" in text


@pytest.mark.parametrize(
    "result,expected",
    [
        (ResetResult(0, 0, 0), "Nothing to forget"),
        (ResetResult(1, 0, 12), "forgot 1 message (12 characters)"),
        (ResetResult(14, 2, 3100), "forgot 14 messages and 2 summaries (3,100 characters)"),
    ],
)
def test_reset_note(result, expected):
    assert expected in views.reset_note(result)


def test_model_note_names_the_model():
    assert views.model_note("Gemini 2.5 Flash") == "Answering: **Gemini 2.5 Flash**"


def test_the_yaml_editor_cannot_be_told_an_apostrophe_is_not_a_quote():
    """Issue 15, item 9: the persona YAML editor colours the rest of a line after an
    apostrophe ("user's") as a string. gr.Code highlights YAML with CodeMirror's legacy yaml
    mode, which starts a string at any quote character, and Gradio offers no way to change
    that: `language` is a fixed list and there is no grammar, mode or extension parameter.
    The editor keeps YAML colouring (keys, comments, lists) with this flaw, as noted where the
    editor is built. This fails when Gradio changes either side: then look again."""
    import inspect

    params = set(inspect.signature(gr.Code.__init__).parameters)
    assert not params & {"grammar", "mode", "extensions", "lexer", "highlighter", "tokenizer"}
    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    [mode] = [p.read_text(encoding="utf-8") for p in assets.glob("yaml-*.js")]
    # Any ' or " (not only one that opens a value) starts a string running to its closing
    # quote or the end of the line.
    assert "t.match(/^('([^']|\\\\.)*'?|\"([^\"]|\\\\.)*\"?)/)" in mode


@pytest.mark.parametrize(
    "typed,shown",
    [
        ("before <script>alert(1)</script> after", "before &lt;script>alert(1)&lt;/script> after"),
        ("<b>bold</b> <img src=x>", "&lt;b>bold&lt;/b> &lt;img src=x>"),
        ("<!-- hidden --> <?php ?>", "&lt;!-- hidden --> &lt;?php ?>"),
        ("a < b, R&D, 3<4", "a < b, R&D, 3<4"),  # not a tag: left as typed
        ("**bold** and _it_", "**bold** and _it_"),  # Markdown still formats
        ("`<div>` inline", "`<div>` inline"),  # code shows literally already
        ("```html\n<div>\n```\n<p>", "```html\n<div>\n```\n&lt;p>"),
        ("```py\nx = '<still streaming'", "```py\nx = '<still streaming'"),  # open fence
    ],
)
def test_chat_messages_show_html_as_typed(typed, shown):
    assert views.message_markdown(typed) == shown


@pytest.mark.parametrize(
    "typed,shown",
    [
        ("<b>Bold</b>", "&lt;b&gt;Bold&lt;/b&gt;"),
        ("*star* _u_ `c` [l](u) #h", r"\*star\* \_u\_ \`c\` \[l\]\(u\) \#h"),
        ("R&D 1. x", r"R&amp;D 1\. x"),
    ],
)
def test_user_text_in_markdown_shows_as_typed(typed, shown):
    assert views.plain_markdown(typed) == shown


def test_notices_escape_user_text_and_carry_the_apps_title():
    from ui import notices

    assert notices.toast_html("Renamed to “<b>x</b>”.", "Renamed") == (
        '<strong class="notice-title">Renamed</strong><br>Renamed to “&lt;b&gt;x&lt;/b&gt;”.'
    )


@pytest.mark.parametrize(
    "avatar,shown",
    [
        ("🦉", "🦉"),
        ("👩🏽‍💻", "👩🏽‍💻"),
        ("The Great Owl of the North", "The…"),
        (None, "💬"),
        ("  ", "💬"),
    ],
)
def test_long_avatars_are_clipped(avatar, shown):
    assert views.clip_avatar(avatar) == shown


def test_the_note_after_folded_messages():
    def turn(i, compacted):
        return Turn(i, "c", "user", f"m{i}", NOW, compacted=compacted)

    shown = views.chat_messages([turn(1, True), turn(2, True), turn(3, False)], "Hi")
    assert [m["content"] for m in shown] == ["Hi", "m1", "m2", views.folded_note(2), "m3"]
    assert "not word for word" in views.folded_note(2)
    everything_folded = views.chat_messages([turn(1, True)], "Hi")
    assert everything_folded[-1]["content"] == views.folded_note(1)
    assert views.chat_messages([turn(1, False)], "Hi")[-1]["content"] == "m1"


# -- the memory panel's views ------------------------------------------------------------------


def test_a_tool_note_shows_as_a_collapsed_used_a_tool_message():
    note = 'Tool note: search_memory(query="Kestrel") → ok, 2 matches'
    turns = [
        Turn(1, "c", "user", "Find Kestrel", 1.0),
        Turn(2, "c", "user", note, 2.0, origin="tool"),
        Turn(3, "c", "assistant", "Found two.", 3.0),
    ]
    shown = views.chat_messages(turns)
    assert shown[1] == {
        "role": "assistant",
        "content": 'search_memory(query="Kestrel") → ok, 2 matches',
        "metadata": {"title": "🛠️ Used a tool: search_memory", "status": "done"},
    }
    assert [m["role"] for m in shown] == ["user", "assistant", "assistant"]


def test_the_reset_question_and_note_say_what_goes():
    status = MemoryStatus(
        total=12,
        active=12,
        compacted=0,
        summaries=1,
        summary_covers=0,
        context_chars=0,
        budget=12_000,
        summarizing=False,
        retention_minutes=None,
        expires_at=None,
        pinned=3,
        about_me_on=True,
        about_me_pins=1,
    )
    question = views.reset_question(status, "Trip to Lisbon")
    assert "12 messages, the summary, 2 pinned facts and the title “Trip to Lisbon”" in question
    assert "“about me” facts stay" in question
    note = views.reset_note(
        ResetResult(turns=12, summaries=1, chars=300, pinned=2, title_cleared=True)
    )
    assert (
        note == "🧹 Memory cleared: forgot 12 messages and 1 summary, 2 pinned facts and the title "
        "(300 characters)."
    )


def test_plot_frames_are_the_stored_numbers_one_point_per_call():
    rows = [
        MetricsRow(1, 1.0, TurnMetrics("m", 11, 4, 250, 30, "ok", None, 900, 14, 0, 0, 40, 12_000)),
        MetricsRow(2, 2.0, TurnMetrics("m", None, None, None)),  # a call measured before m009
    ]
    parts, tokens, latency = views.plot_frames(rows)
    assert parts.to_dict("records") == [
        {"turn": 1, "part": p, "chars": c}
        for p, c in [
            ("persona", 900),
            ("pinned", 14),
            ("summary", 0),
            ("recalled", 0),
            ("recent", 40),
            ("budget", 12_000),
        ]
    ]
    assert tokens.to_dict("records") == [
        {"turn": 1, "kind": "input", "tokens": 11},
        {"turn": 1, "kind": "output", "tokens": 4},
    ]
    assert latency.to_dict("records") == [{"turn": 1, "seconds": 0.25}]
    empty = views.plot_frames([])
    assert [list(f.columns) for f in empty] == [
        ["turn", "part", "chars"],
        ["turn", "kind", "tokens"],
        ["turn", "seconds"],
    ]


def test_summary_note_says_who_wrote_it():
    assert "No summary" in views.summary_note(None)
    mine = Turn(9, "c", "summary", "x", 1.0, is_summary=True, covers_count=81, origin="edited")
    assert views.summary_note(mine).startswith("✏️ **Edited by you**")
    theirs = Turn(9, "c", "summary", "x", 1.0, is_summary=True, covers_count=1)
    assert "Written by the summarizer (covers 1 earlier message)" in views.summary_note(theirs)
