"""The UI's labels in English and 繁體中文, for `gr.I18n`, and which language a browser reads.

The browser picks the language (navigator.language: zh-TW, zh-HK and zh-Hant get Traditional
Chinese, anything else English); the footer's Settings has Gradio's language switch. The
frontend translates a component's label, placeholder, info and value — one `t("key")` per
string, which may have plain text after it (`t("answering") + " **Gemini**"`). Every key exists
in every language: a test checks that.

Text the server composes (the badge, notices, errors, greetings, the inspector: ui/texts.py)
cannot be translated by the frontend, so the server has to know the language of the page each
event comes from. `current_language()` takes it from the request: the language this page last
reported (after the Settings switch, `LANG_HEAD` clicks a hidden button whose event sends the
`lang` Gradio set on <html>; kept per page session), else the browser's Accept-Language — the
same list navigator.language, Gradio's own choice, comes from — else English.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import gradio as gr
from gradio.context import LocalContext

EN: dict[str, str] = {
    "brand": "## 🧠 Mnemo\nA chat assistant that remembers.",
    "new_chat": "➕ New chat",
    "search": "🔍 Search conversations",
    "conversations": "Conversations",
    "manage": "Rename · memory · delete",
    "name": "Name",
    "name_placeholder": "A new name",
    "rename": "Rename",
    "delete": "🗑️ Delete",
    "memory": "Memory",
    "delete_for_good": "Delete for good",
    "cancel": "Cancel",
    "answering": "Answering:",
    "answering_local": "Answering: **SmolLM2-135M (tiny offline model)**",
    "tab_chat": "💬 Chat",
    "tab_personas": "🎭 Personas",
    "reset": "🧹 Reset memory",
    "inspector": "🔍 What the model receives next",
    "chat_placeholder": "Say something to start a conversation.",
    "persona": "Persona",
    "input_placeholder": "Type a message — Enter to send, Shift+Enter for a new line",
    "versions": "Versions",
    "use_version": "↩️ Use this version",
    "revert": "Revert to built-in",
    "validate": "Validate",
    "save": "💾 Save as new version",
    "prompt_preview": "Composed system prompt (live preview)",
    "f_display_name": "Display name",
    "f_avatar": "Avatar",
    "f_role": "Role",
    "f_language": "Language",
    "f_personality": "Personality",
    "f_focus": "Focus areas (one per line)",
    "f_rules": "Rules (one per line)",
    "f_temperature": "Temperature (0–2; empty = model default)",
    "f_parameters": "Parameters (name: value, one per line)",
    "tokens": "🔑 API tokens",
    "token_name": "New token's name",
    "create_token": "Create token",
    "revoke_token": "Revoke a token",
    "revoke": "Revoke",
    "mp_panel": "🧠 Memory — see and steer what is remembered",
    "mp_summary": "#### Summary of the earlier conversation",
    "mp_summary_placeholder": "Written when the conversation grows long.",
    "mp_summary_save": "Save my summary",
    "mp_summary_clear": "Clear it",
    "mp_recall": "#### Recall for the message you are typing",
    "mp_pins": "#### Pinned facts — always sent, never summarized away",
    "mp_unpin": "Delete ticked facts",
    "mp_new_fact": "A fact to keep, e.g. I'm vegetarian — or click a message",
    "mp_pin_about_me": "About me (all my chats)",
    "mp_pin": "📌 Pin",
    "mp_about_me": "#### About me, across conversations",
    "mp_about_me_toggle": "Send my “about me” facts in every conversation (off by default)",
    "mp_sent": "#### What each reply was sent",
    "mp_take": "#### Take your memory with you",
    "mp_export_one": "⬇️ Export this conversation",
    "mp_export_all": "⬇️ Export all",
    "mp_import": "⬆️ Import",
    "mp_delete_all": "🗑️ Delete all my data",
    "mp_export_file": "Your export",
    "mp_delete_everything": "Delete everything",
    "forget_it": "Forget it",
    "offline_note": (
        "A tiny model that runs on this machine: expect weak answers. "
        "Set `GEMINI_API_KEY` to answer with Gemini."
    ),
    "tokens_intro": (
        "For scripts and bots: the HTTP API at `/api/v1` ([docs](/api/v1/docs)). A token acts "
        "as you — it sees your conversations and personas. It is shown once; Mnemo keeps only a "
        "hash."
    ),
    "token_placeholder": "e.g. my-bot",
    "no_tokens": "_No tokens yet._",
    "shown_once": "Your new token — copy it now, it is not shown again",
    "roundtables": "👥 Roundtables — members, chair, rules, veto and metrics as YAML",
    "roundtable": "Roundtable",
}

ZH_TW: dict[str, str] = {
    "brand": "## 🧠 Mnemo\n會記得對話的聊天助理。",
    "new_chat": "➕ 新對話",
    "search": "🔍 搜尋對話",
    "conversations": "對話",
    "manage": "重新命名 · 記憶 · 刪除",
    "name": "名稱",
    "name_placeholder": "新的名稱",
    "rename": "重新命名",
    "delete": "🗑️ 刪除",
    "memory": "記憶",
    "delete_for_good": "永久刪除",
    "cancel": "取消",
    "answering": "回答模型：",
    "answering_local": "回答模型：**SmolLM2-135M（本機的小型離線模型）**",
    "tab_chat": "💬 對話",
    "tab_personas": "🎭 角色",
    "reset": "🧹 清除記憶",
    "inspector": "🔍 模型下一次收到的內容",
    "chat_placeholder": "說點什麼，開始一段對話。",
    "persona": "角色",
    "input_placeholder": "輸入訊息 — Enter 送出，Shift+Enter 換行",
    "versions": "版本",
    "use_version": "↩️ 使用這個版本",
    "revert": "還原為內建版本",
    "validate": "檢查",
    "save": "💾 另存新版本",
    "prompt_preview": "組合後的系統提示（即時預覽）",
    "f_display_name": "顯示名稱",
    "f_avatar": "頭像",
    "f_role": "角色說明",
    "f_language": "語言",
    "f_personality": "個性",
    "f_focus": "關注重點（每行一項）",
    "f_rules": "規則（每行一條）",
    "f_temperature": "溫度（0–2；留空＝模型預設）",
    "f_parameters": "參數（名稱: 值，每行一個）",
    "tokens": "🔑 API 權杖",
    "token_name": "新權杖的名稱",
    "create_token": "建立權杖",
    "revoke_token": "撤銷權杖",
    "revoke": "撤銷",
    "mp_panel": "🧠 記憶 — 查看並調整記住的內容",
    "mp_summary": "#### 先前對話的摘要",
    "mp_summary_placeholder": "對話變長時會自動寫下。",
    "mp_summary_save": "儲存我的摘要",
    "mp_summary_clear": "清除摘要",
    "mp_recall": "#### 為正在輸入的訊息喚起的記憶",
    "mp_pins": "#### 釘選的事實 — 每次都會送出，不會被摘要掉",
    "mp_unpin": "刪除勾選的事實",
    "mp_new_fact": "要記住的事實，例如：我吃素 — 或點一則訊息",
    "mp_pin_about_me": "關於我（所有對話）",
    "mp_pin": "📌 釘選",
    "mp_about_me": "#### 關於我，跨對話共用",
    "mp_about_me_toggle": "在每段對話中送出「關於我」的事實（預設關閉）",
    "mp_sent": "#### 每次回覆送出的內容",
    "mp_take": "#### 帶走你的記憶",
    "mp_export_one": "⬇️ 匯出這段對話",
    "mp_export_all": "⬇️ 全部匯出",
    "mp_import": "⬆️ 匯入",
    "mp_delete_all": "🗑️ 刪除我的所有資料",
    "mp_export_file": "你的匯出檔",
    "mp_delete_everything": "全部刪除",
    "forget_it": "忘掉它",
    "offline_note": (
        "在這台機器上執行的小型模型：回答品質有限。設定 `GEMINI_API_KEY` 就改由 Gemini 回答。"
    ),
    "tokens_intro": (
        "給腳本與機器人使用：HTTP API 位於 `/api/v1`（[文件](/api/v1/docs)）。權杖代表你本人 — "
        "能看到你的對話與角色。權杖只顯示一次；Mnemo 只保存它的雜湊值。"
    ),
    "token_placeholder": "例如 my-bot",
    "no_tokens": "_還沒有權杖。_",
    "shown_once": "你的新權杖 — 請立刻複製，之後不會再顯示",
    "roundtables": "👥 圓桌會議 — 以 YAML 編輯成員、主席、規則、否決與指標",
    "roundtable": "圓桌會議",
}

# Traditional Chinese for every browser language that reads it.
I18N = gr.I18n(en=EN, **{"zh-TW": ZH_TW, "zh-HK": ZH_TW, "zh-Hant": ZH_TW})

ENGLISH, CHINESE = "en", "zh-TW"
LANGUAGES = (ENGLISH, CHINESE)
_CHINESE_TAGS = {tag.lower() for tag in I18N.translations if tag != "en"}

# In <head> (Gradio inserts it once the app runs): when Gradio changes <html lang> to another
# language than the page shows — the Settings switch — click the hidden #lang-changed button,
# whose event tells the server the new language (`REPORT_LANG`) and writes the page's
# server-side text again. Gradio's own first setting (from navigator.language, which the server
# also reads, via Accept-Language) is no change: `reads` maps a tag as `language()` does.
LANG_HEAD = """<script>
(() => {
  const reads = (tag) => /^zh-(tw|hk|hant)\\b/i.test(tag || "") ? "zh-TW" : "en";
  let shown = reads(navigator.language || (navigator.languages || [])[0]);
  new MutationObserver(() => {
    const lang = reads(document.documentElement.lang);
    if (document.documentElement.lang && lang !== shown) {
      shown = lang;
      document.getElementById("lang-changed")?.click();
    }
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["lang"] });
})();
</script>"""
# The #lang-changed event's inputs, the last one replaced by the page's language.
REPORT_LANG = "(...inputs) => [...inputs.slice(0, -1), document.documentElement.lang]"

_CHOSEN: ContextVar[str | None] = ContextVar("mnemo_language", default=None)
# Page sessions (Gradio's session hash: one per tab and load) whose language was switched;
# bounded, the oldest forgotten first (they fall back to Accept-Language).
_SWITCHED: OrderedDict[str, str] = OrderedDict()
MAX_SWITCHED = 10_000


def language(tag: str | None) -> str:
    """The UI language for a browser language tag, as Gradio's frontend matches it: the tag,
    then its shorter prefixes (zh-Hant-TW, zh-Hant, zh). Anything not Chinese is English."""
    parts = (tag or "").strip().split("-")
    for end in range(len(parts), 0, -1):
        if "-".join(parts[:end]).lower() in _CHINESE_TAGS:
            return CHINESE
    return ENGLISH


def _accepted(header: str | None) -> str | None:
    """The first language of an Accept-Language header ("zh-TW,zh;q=0.9,en;q=0.8")."""
    first = (header or "").split(",")[0].split(";")[0].strip()
    return first or None


def _request() -> Any:
    return LocalContext.request.get(None)


def current_language() -> str:
    """The language of the page whose event is being handled (English outside one)."""
    chosen = _CHOSEN.get()
    if chosen:
        return chosen
    request = _request()
    if request is None:
        return ENGLISH
    switched = _SWITCHED.get(getattr(request, "session_hash", None) or "")
    if switched:
        return switched
    try:
        return language(_accepted(request.headers.get("accept-language")))
    except AttributeError:  # a request without headers (Gradio's own examples, caching)
        return ENGLISH


def remember_language(tag: str | None) -> str:
    """This page now reads `tag` (the Settings switch): its later events are answered in it."""
    chosen = language(tag)
    session = getattr(_request(), "session_hash", None)
    if session:
        _SWITCHED[session] = chosen
        _SWITCHED.move_to_end(session)
        while len(_SWITCHED) > MAX_SWITCHED:
            _SWITCHED.popitem(last=False)
    return chosen


@contextlib.contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Handle events as if the browser read `lang` (tests, and code outside a request)."""
    token = _CHOSEN.set(language(lang))
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def t(key: str) -> Any:
    """The translatable label for `key` (KeyError for a key no language has)."""
    if key not in EN:
        raise KeyError(f"No UI label {key!r}: add it to ui/i18n.py in every language.")
    return I18N(key)
