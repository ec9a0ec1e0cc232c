"""Text the server writes (ui/texts.py, ui/errors.py) in the browser's language: the catalogs
complete and really Chinese, the language taken from the page's switch or its Accept-Language, and
the handlers — a failing rename, the badge, a model error, the inspector — in 繁體中文 with a
real store and the real google-genai client against the fake Gemini server."""

from __future__ import annotations

import html
import inspect
import re
from pathlib import Path

import gradio as gr
import pytest
from gradio.context import LocalContext
from starlette.requests import Request

import assistant.errors as assistant_errors
from assistant.errors import UserError
from memory import MemoryStatus
from ui import chat as chat_pane
from ui import errors as ui_errors
from ui import page, sidebar, texts, views
from ui.badge import badge_text, idle_text
from ui.i18n import current_language, language, remember_language, speaking

OWNER = "b-owner-aaaaaaaaaaaaaaaa"
ROOT = Path(__file__).resolve().parent.parent
# Names that stay as they are in Chinese text: the product, the model, settings, formats.
NAMES = {
    "Mnemo",
    "Gemini",
    "API",
    "HTTP",
    "YAML",
    "JSON",
    "SmolLM",
    "GEMINI_API_KEY",
    "GEMINI_MODEL",
}


def english_words(text: str) -> set[str]:
    """Words of two or more Latin letters, outside `code`, {placeholders} and names."""
    text = re.sub(r"`[^`]*`|\{[^}]*\}|\([^)]*/api/[^)]*\)", " ", text)
    words = set(re.findall(r"[A-Za-z_]{2,}", text))
    return {w for w in words if w not in NAMES and not w.startswith("GEMINI")}


# ---- the catalogs --------------------------------------------------------------------------


def test_every_text_exists_in_both_languages_with_the_same_placeholders():
    assert set(texts.EN) == set(texts.ZH_TW)
    for key, english in texts.EN.items():
        assert texts.placeholders(english) == texts.placeholders(texts.ZH_TW[key]), key


@pytest.mark.parametrize("key", sorted(texts.EN))
def test_the_chinese_texts_have_no_english_words_left(key):
    assert not english_words(texts.ZH_TW[key]), key
    assert re.search(r"[\u4e00-\u9fff]", texts.ZH_TW[key]) or not re.search(
        r"[A-Za-z]{2,}", texts.EN[key]
    ), key


def test_an_unknown_text_key_is_refused():
    with pytest.raises(KeyError, match=r"add it to ui/texts\.py"):
        texts.tr("no_such_text")


def _kinds() -> set[str]:
    classes = [c for _, c in inspect.getmembers(assistant_errors, inspect.isclass)]
    return {c.kind for c in classes if issubclass(c, UserError)}


def test_every_error_kind_has_a_chinese_sentence():
    assert _kinds() <= set(ui_errors.ZH_TW)
    for code, (title, message) in ui_errors.ZH_TW.items():
        assert not english_words(message) and not english_words(title or ""), code


def test_every_action_the_ui_names_is_translated():
    used = set()
    for path in (ROOT / "ui").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'user_errors\("([^"]+)"\)', source))
        used |= set(re.findall(r'_refused\(exc, "([^"]+)"\)', source))
    assert used and used <= set(texts.ACTIONS), used - set(texts.ACTIONS)
    assert all(not english_words(zh) for zh in texts.ACTIONS.values())


# ---- which language ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tag,expected",
    [
        ("zh-TW", "zh-TW"),
        ("zh-HK", "zh-TW"),
        ("zh-Hant", "zh-TW"),
        ("zh-Hant-TW", "zh-TW"),
        ("ZH-tw", "zh-TW"),
        ("zh-CN", "en"),  # Simplified Chinese readers get English, as Gradio's frontend does
        ("zh", "en"),
        ("en-US", "en"),
        ("fr", "en"),
        ("", "en"),
        (None, "en"),
        ("zh-TW; DROP TABLE", "en"),
    ],
)
def test_language_follows_the_browser_tag_as_gradio_does(tag, expected):
    assert language(tag) == expected


def _request(headers: dict[str, str], session: str = "s-1") -> gr.Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    scope = {"type": "http", "method": "POST", "path": "/", "headers": raw}
    return gr.Request(Request(scope), session_hash=session)


class event:
    """Inside this block, code runs as if handling an event from that page."""

    def __init__(self, headers: dict[str, str], session: str = "s-1") -> None:
        self.request = _request(headers, session)

    def __enter__(self) -> None:
        self.token = LocalContext.request.set(self.request)

    def __exit__(self, *exc: object) -> None:
        LocalContext.request.reset(self.token)


@pytest.mark.parametrize(
    "headers,expected",
    [
        ({}, "en"),
        ({"Accept-Language": "zh-TW,zh;q=0.9,en;q=0.8"}, "zh-TW"),
        ({"Accept-Language": "zh-HK"}, "zh-TW"),
        ({"Accept-Language": "en-US,en;q=0.9"}, "en"),
        ({"Accept-Language": "zh-CN,zh;q=0.9"}, "en"),
    ],
)
def test_current_language_follows_the_browser_of_the_event(headers, expected):
    with event(headers):
        assert current_language() == expected


def test_after_the_switch_the_page_reads_its_new_language_and_only_that_page():
    with event({"Accept-Language": "zh-TW"}, session="tab-a"):
        assert remember_language("en") == "en"
        assert current_language() == "en"
    with event({"Accept-Language": "zh-TW"}, session="tab-b"):  # another tab keeps its own
        assert current_language() == "zh-TW"
    with event({"Accept-Language": "en"}, session="tab-a"):
        assert remember_language("zh-Hant-TW") == "zh-TW"
        assert current_language() == "zh-TW"


def test_outside_an_event_the_language_is_english():
    assert current_language() == "en"
    with speaking("zh-Hant"):
        assert current_language() == "zh-TW"
    assert current_language() == "en"


# ---- composed text -------------------------------------------------------------------------


def status(**overrides):
    fields = dict(
        active=14,
        total=101,
        summaries=1,
        summary_covers=87,
        context_chars=3100,
        budget=12000,
        degraded=False,
        summarizing=False,
        retention_minutes=1440,
        compacted=0,
        expires_at=None,
    )
    fields.update(overrides)
    return MemoryStatus(**fields)


def test_the_badge_reads_in_chinese():
    with speaking("zh-TW"):
        text = badge_text(status(), "Gemini 2.5 Flash")
        nothing = badge_text(status(active=0, summaries=0, retention_minutes=None), "Gemini")
        offline = badge_text(status(), "SmolLM2-135M (tiny offline model)")
    assert text == (
        "🧠 記得 14 則訊息 · 較早 87 則的摘要 · 3.1k/12k 字元 · Gemini 2.5 Flash"
        " · ⏳ 閒置 1 天後忘記"
    )
    assert nothing == "💤 還沒有記住任何內容 · Gemini"
    assert "本機的小型離線模型" in offline and "tiny" not in offline
    assert badge_text(status(), "Gemini 2.5 Flash").startswith("🧠 Remembering 14 messages")


@pytest.mark.parametrize(
    "minutes,zh,en", [(30, "30 分鐘", "30 min"), (120, "2 小時", "2 h"), (2880, "2 天", "2 days")]
)
def test_idle_times_in_both_languages(minutes, zh, en):
    with speaking("zh-TW"):
        assert idle_text(minutes) == zh
    assert idle_text(minutes) == en


def test_notes_times_and_search_lines_in_chinese():
    with speaking("zh-TW"):
        assert views.relative_time(1000.0, now=1000.0 + 300) == "5 分鐘前"
        assert views.relative_time(1.0, now=1.0 + 30 * 86400).endswith("日")
        assert views.search_status(3) == "3 段對話 — 最新的在前"
        assert views.folded_note(2).startswith("🗜️ _已摘要")
        assert views.retention_choices()[0] == ("保留到我刪除為止", 0)
        # A note stored in English with the reply shows in Chinese, its number kept.
        cut = "The reply was cut at 10,000 characters, the message limit."
        assert (
            views.incomplete_note("incomplete", cut)
            == "_⚠️ 不完整：回覆在 10,000 字元處被截斷，這是訊息的長度上限。_"
        )
        assert views.incomplete_note("failed", "Something else.").endswith("Something else.")
    assert views.search_status(1) == "1 conversation — newest first"


def test_an_error_in_chinese_keeps_its_numbers():
    exc = assistant_errors.InvalidMessage(
        "Your message is 10,050 characters ...",
        code="message_too_long",
        params={"length": 10050, "limit": 10000},
    )
    with speaking("zh-TW"):
        _, message = ui_errors.shown(exc)
    assert message.startswith("你的訊息有 10,050 個字元，上限是 10,000（多了 50 個）")
    assert ui_errors.shown(exc) == (exc.title, exc.message)  # English: the assistant's words


def test_an_error_without_its_numbers_falls_back_to_its_kind():
    exc = assistant_errors.QuotaExceeded("You have sent ...")  # no params given
    with speaking("zh-TW"):
        _, message = ui_errors.shown(exc)
    assert message == ui_errors.ZH_TW["quota"][1] and "{" not in message


def test_the_sentences_by_kind_need_no_numbers():
    for kind in _kinds():
        _, message = ui_errors.ZH_TW[kind]
        assert not texts.placeholders(message), kind


# ---- the handlers in a zh-TW page ----------------------------------------------------------


def _toast(error: gr.Error) -> tuple[str, str]:
    """(title, message) of a toast the app raised."""
    body = str(error.message)
    title, _, message = body.partition("</strong><br>")
    return html.unescape(re.sub("<[^>]+>", "", title)), html.unescape(message)


async def test_a_failing_rename_says_why_in_chinese(rt, fake):
    facade = await rt.conversations()
    conversation = await facade.create(OWNER)
    with speaking("zh-TW"), pytest.raises(gr.Error) as raised:
        await sidebar.rename_conversation(rt, OWNER, conversation.id, "名" * 500)
    title, message = _toast(raised.value)
    assert title == "無法重新命名對話"
    assert message.startswith("這個名稱不能使用") and not english_words(message)
    with pytest.raises(gr.Error) as english:
        await sidebar.rename_conversation(rt, OWNER, conversation.id, "名" * 500)
    assert _toast(english.value)[0] == "Could not rename the conversation"
    # Nothing was renamed.
    assert (await facade.get(OWNER, conversation.id)).title in (None, "")


async def test_renaming_a_conversation_that_is_gone_in_chinese(rt, fake):
    with speaking("zh-TW"), pytest.raises(gr.Error) as raised:
        await sidebar.rename_conversation(rt, OWNER, "c-no-such-conversation", "新名稱")
    title, message = _toast(raised.value)
    assert title == "找不到對話" and "側邊欄" in message


async def test_a_chat_in_chinese_from_greeting_to_a_model_error(rt, fake):
    with speaking("zh-TW"):
        view = await page.open_latest(rt, OWNER)
        assert view.badge.startswith("💤 還沒有記住任何內容")
        # A new chat on a Chinese page is with the persona that speaks it.
        assert view.persona["value"] == "assistant_zh_tw"
        assert view.chat[0]["content"].startswith("你好，我是小憶")
        fake.reply("好的。")
        _box, chat, pending, _notice, _done, _busy, _sending = chat_pane.accept_message(
            "你好", view.chat
        )
        updates = [u async for u in chat_pane.stream_reply(rt, OWNER, None, pending, None, chat)]
        done = page.ChatView(*updates[-1][:-1])
        assert done.badge.startswith("🧠 記得 2 則訊息")
        assert done.inspector.startswith("脈絡中的記憶：")
        assert "#### 最近的對話（2）" in done.inspector
        assert done.retention["choices"][0][0] == "保留到我刪除為止"
        fake.error(503, "Service Unavailable")
        _box, chat, pending, _notice, _done, _busy, _sending = chat_pane.accept_message(
            "再一次", done.chat
        )
        with pytest.warns(UserWarning) as toast:
            updates = [
                u
                async for u in chat_pane.stream_reply(
                    rt, OWNER, done.conversation_id, pending, None, chat
                )
            ]
    warned = next(str(w.message) for w in toast if w.category is UserWarning)
    assert warned.startswith('<strong class="notice-title">助理無法回答</strong>')
    last = page.ChatView(*updates[-1][:-1]).chat[-1]["content"]
    assert last.startswith("⚠️ **沒有回答。**") and "模型目前無法使用" in last


def test_a_message_over_the_limit_says_so_in_chinese():
    with speaking("zh-TW"):
        accepted = chat_pane.accept_message("字" * 10_001, [])
    assert accepted.input_notice["value"].startswith("⚠️ 你的訊息有 10,001 個字元")


async def test_the_switch_rewrites_the_page_but_not_what_is_being_typed(rt, fake):
    conversation = await (await rt.conversations()).create(OWNER)
    with event({"Accept-Language": "en-US"}, session="tab-switching"):
        view = await page.relabel(rt, OWNER, conversation.id, "zh-TW")
        assert current_language() == "zh-TW"  # and the page's later events too
    assert view.badge.startswith("💤 還沒有記住任何內容")
    assert view.title == gr.skip() and view.conversation_id == gr.skip()


SAVED = 1796019120.0  # 2026-11-30 06:12 UTC


def test_the_versions_lists_labels_follow_the_page():
    with speaking("zh-TW"):
        assert texts.version_label(0, None) == "v0 · 內建"
        assert texts.version_label(3, SAVED) == "v3 · 儲存於 2026-11-30 06:12 UTC"
    with speaking("en"):
        assert texts.version_label(0, None) == "v0 · built-in"
        assert texts.version_label(3, SAVED) == "v3 · saved 2026-11-30 06:12 UTC"
