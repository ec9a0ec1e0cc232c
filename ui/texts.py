"""What the server writes for the page — the badge, notices, errors, greetings, the inspector,
search results — in English and 繁體中文.

Labels that never change are translated by the frontend (ui/i18n.py); text composed here holds
numbers, names and user text, so it is written on the server in the language of the browser the
event came from (`ui.i18n.current_language()`). `tr("key", n=3)` formats the entry of that
language; `count("key", n)` picks the English singular (`key_one`) or plural (`key_many`), which
Chinese does not need. Every key exists in both languages with the same placeholders: a test
checks that. The HTTP API keeps its own English messages (clients parse them, people read the
docs in English).
"""

from __future__ import annotations

import re
import string
import time
from typing import Any

from ui import panel_texts
from ui.i18n import CHINESE, current_language

EN: dict[str, str] = {
    # the memory badge
    "badge_degraded": "⚠️ Memory unavailable — answering without history",
    "badge_summarizing": "🗜️ Summarizing…",
    "badge_nothing": "💤 Nothing remembered yet",
    "badge_remembering_one": "Remembering {n} message",
    "badge_remembering_many": "Remembering {n} messages",
    "badge_summary_of": "summary of {n} earlier",
    "badge_edited": " (edited by you)",
    "badge_pinned": "📌 {n} pinned",
    "badge_about_me": "👤 About me on",
    "badge_chars": "{used}/{budget} chars",
    "badge_forgets": "⏳ Forgets after {idle} idle",
    "idle_days_one": "{n} day",
    "idle_days_many": "{n} days",
    "idle_hours": "{n} h",
    "idle_minutes": "{n} min",
    "model_local": "SmolLM2-135M (tiny offline model)",
    # the sidebar
    "retention_keep": "Keep until I delete it",
    "retention_30m": "Forget after 30 min idle",
    "retention_1d": "Forget after 1 day idle",
    "retention_7d": "Forget after 7 days idle",
    "untitled": "New chat",
    "just_now": "just now",
    "minutes_ago": "{n} min ago",
    "hours_ago": "{n} h ago",
    "yesterday": "yesterday",
    "days_ago": "{n} days ago",
    "date": "{month} {day:02d}, {year}",
    "search_unavailable": "⚠️ Search needs memory, which is unavailable right now.",
    "search_none": "No matches.",
    "search_hint": " Type a word or a name.",
    "search_found_one": "{n} conversation — newest first",
    "search_found_many": "{n} conversations — newest first",
    "hit_you": "You",
    "hit_assistant": "Assistant",
    "hit_summary": "Summary",
    "hit_matches": "{n} matching messages",
    "hit_title": "title matches",
    "this_conversation": "this conversation",
    "delete_question": "Delete **{title}**? Its messages and memory are removed for good.",
    # notes in the chat
    "stopped_note": "_⏹ Stopped — this reply is incomplete._",
    "hidden_one": "_… {n} earlier message is not shown here._",
    "hidden_many": "_… {n} earlier messages are not shown here._",
    "stopped_before": "Stopped before the reply began.",
    "not_answered": "⚠️ **Not answered.**",
    "broke_off": "_⚠️ Broke off — this reply is incomplete._",
    "incomplete": "_⚠️ Incomplete: {why}_",
    "did_not_finish": "this reply did not finish.",
    "folded_one": (
        "🗜️ _Summarized: the model now gets this message above as a summary, not word for word "
        "(the inspector shows it)._"
    ),
    "folded_many": (
        "🗜️ _Summarized: the model now gets these {n} messages above as a summary, not word for "
        "word (the inspector shows it)._"
    ),
    "reset_empty": "🧹 Nothing to forget: this conversation's memory was already empty.",
    "reset_done": "🧹 Memory cleared: forgot {what} ({chars} characters).",
    "reset_both": "{messages} and {summaries}",
    "reset_pins": "{what}, {pins}",
    "reset_title": "{what} and the title",
    "pins_one": "{n} pinned fact",
    "pins_many": "{n} pinned facts",
    "messages_one": "{n} message",
    "messages_many": "{n} messages",
    "summaries_one": "{n} summary",
    "summaries_many": "{n} summaries",
    # roundtables
    "board_greeting": (
        "{avatar} **{name}** — ask one question: each member answers in turn, then {chair} "
        "decides.\n\n{members}"
    ),
    "board_offline": (
        "_The offline model answers {n} times per message, one after another (15–25 s each on"
        " 2 cores): expect a minute or more, and weak answers._"
    ),
    "veto_note": (
        "{speaker} must veto: {reason} (threshold {threshold}%), decided from the "
        "business-metrics table."
    ),
    # the system's ⛔ lines on a roundtable's replies (assistant.outcome_notes.veto_line)
    "veto_member": (
        "⛔ **{label}**: {reason}, below the {threshold}% threshold — decided by the "
        "business-metrics table, not by the model."
    ),
    "veto_chair": (
        "⛔ **{label}** stands ({member}: {reason}, threshold {threshold}%): the proposal is "
        "not approved."
    ),
    # the inspector
    "insp_empty": "_Start a conversation to see what the model receives._",
    "insp_memory": (
        "Memory in the context: **{chars}** of **{budget}** characters; your next message "
        "comes after it."
    ),
    "insp_system_instruction": "#### System instruction",
    "insp_system_prompt": "#### System prompt",
    "insp_summary": "#### Memory summary",
    "insp_none_yet": "_None yet._",
    "insp_recalled_one": "_{n} older message recalled for this draft — in the memory note above._",
    "insp_recalled_many": (
        "_{n} older messages recalled for this draft — in the memory note above._"
    ),
    "insp_waiting": "_{n} older messages wait to be summarized; they are not sent._",
    "insp_recent": "#### Recent turns ({n})",
    "insp_fresh": "_None: the model starts fresh._",
    "insp_user": "user",
    "insp_assistant": "assistant",
    "insp_speakers": "#### What each speaker receives ({n})",
    "insp_vetoes": " · ⛔ told to veto",
    "insp_user_message": "_Its user message:_",
    # notices: titles, then messages
    "t_veto": "Veto",
    "t_memory_cleared": "Memory cleared",
    "t_not_answered": "The assistant could not answer",
    "t_incomplete": "Reply incomplete",
    "t_reply_still_coming": "A reply is still coming",
    "t_persona_changed": "Persona changed",
    "t_nothing_to_forget": "Nothing to forget",
    "t_conversation_gone": "Conversation not found",
    "t_nothing_to_rename": "Nothing to rename yet",
    "t_no_name": "No name given",
    "t_renamed": "Renamed",
    "t_nothing_deleted": "Nothing deleted",
    "t_deleted": "Deleted",
    "t_persona_not_saved": "Persona not saved",
    "t_persona_saved": "Persona saved",
    "t_no_version": "No version picked",
    "t_version_restored": "Version restored",
    "t_builtin_restored": "Built-in restored",
    "t_nothing_revoked": "Nothing revoked",
    "t_token_revoked": "Token revoked",
    "t_reload": "Reload the page",
    "t_unexpected": "Unexpected error",
    "t_could_not": "Could not {action}",
    "persona_changed": "{name} answers from your next message.",
    "nothing_to_forget": "Nothing to forget yet: this chat is new.",
    "conversation_gone": "That conversation no longer exists; showing a new chat instead.",
    "reply_still_coming": "A reply is still coming: send this once it has finished, or press "
    "Stop first.",
    "new_chat_after_reply": "Your message is being answered in this chat: start a new chat "
    "once the reply has finished, or press Stop first.",
    "save_before_rename": "Send a first message before renaming: new chats are saved then.",
    "type_a_name": "Type a new name in the box first.",
    "renamed": "Renamed to “{title}”.",
    "nothing_to_delete": "Nothing to delete: this chat has not been saved yet.",
    "deleted": "Conversation deleted.",
    "no_session": (
        "This page has not identified itself yet, so there is nothing of yours to show or "
        "change. Reload the page and try again."
    ),
    "unexpected": (
        "Something unexpected went wrong while trying to {action}. Try again; if it keeps "
        "happening, the server log has the details."
    ),
    "reply_cut": "The reply was cut at {limit} characters, the message limit.",
    "stopped_stored": "Stopped — this reply is incomplete.",
    "interrupted": (
        "Mnemo stopped before this reply finished (the server restarted or crashed). Retry for "
        "a full answer."
    ),
    "failed_unexpectedly": "Something went wrong while answering. Retry in a moment.",
    "reply_max_tokens": "The reply hit the model's length limit. Ask it to continue.",
    # the personas tab
    "version_in_use": "Version **v{version}** is in use.",
    "builtin_in_use": "Version **v{version}** is in use (built-in).",
    "disk_broken": "⚠️ The built-in file on disk is broken; the last good version is used:",
    "valid_unsaved": "✏️ Valid, not saved yet.",
    "valid": "✅ Valid: **{name}** (`{id}`). Save to use it.",
    "fix_problems": "The persona was not saved: fix the problems listed under the editor.",
    "persona_saved": "Saved {name} v{version}: used from the next message.",
    "saved_as": "✅ Saved as **v{version}**; used from the next message.",
    "pick_version": "Pick a version in the list first.",
    "back_to_version": "{name} is back to v{version}.",
    "back_to_builtin": "{name} is back to its built-in version.",
    "problems_not_saved": "❌ **Not saved** — the version in use is unchanged. Fix these first:",
    "board_version_in_use": "Version **v{version}** of this roundtable is in use.",
    "board_builtin_in_use": "Version **v{version}** of this roundtable is in use (built-in).",
    "board_valid": (
        "✅ Valid: **{name}** (`{id}`), speaking in this order: {speakers}. Save to use it."
    ),
    "board_fix_problems": "The roundtable was not saved: fix the problems listed under the editor.",
    "t_board_not_saved": "Roundtable not saved",
    "t_board_saved": "Roundtable saved",
    "problems": "❌ **The YAML has problems:**",
    "problem_at": "line {line}, column {column}: ",
    # API tokens
    "no_tokens": "_No tokens yet._",
    "tokens_head": "| name | ends in | created | last used |",
    "token_revoked_mark": "(revoked)",
    "never": "never",
    "pick_token": "Pick the token to revoke first.",
    "token_revoked": "Token “{name}” revoked: it stops working now.",
}

ZH_TW: dict[str, str] = {
    "badge_degraded": "⚠️ 記憶無法使用 — 目前不帶對話紀錄回答",
    "badge_summarizing": "🗜️ 摘要中…",
    "badge_nothing": "💤 還沒有記住任何內容",
    "badge_remembering_one": "記得 {n} 則訊息",
    "badge_remembering_many": "記得 {n} 則訊息",
    "badge_summary_of": "較早 {n} 則的摘要",
    "badge_edited": "（你編輯過）",
    "badge_pinned": "📌 已釘選 {n} 則",
    "badge_about_me": "👤「關於我」已開啟",
    "badge_chars": "{used}/{budget} 字元",
    "badge_forgets": "⏳ 閒置 {idle}後忘記",
    "idle_days_one": "{n} 天",
    "idle_days_many": "{n} 天",
    "idle_hours": "{n} 小時",
    "idle_minutes": "{n} 分鐘",
    "model_local": "SmolLM2-135M（本機的小型離線模型）",
    "retention_keep": "保留到我刪除為止",
    "retention_30m": "閒置 30 分鐘後忘記",
    "retention_1d": "閒置 1 天後忘記",
    "retention_7d": "閒置 7 天後忘記",
    "untitled": "新對話",
    "just_now": "剛剛",
    "minutes_ago": "{n} 分鐘前",
    "hours_ago": "{n} 小時前",
    "yesterday": "昨天",
    "days_ago": "{n} 天前",
    "date": "{year}年{month}月{day}日",
    "search_unavailable": "⚠️ 搜尋需要記憶，但記憶目前無法使用。",
    "search_none": "沒有相符的結果。",
    "search_hint": "請輸入一個詞或名稱。",
    "search_found_one": "{n} 段對話 — 最新的在前",
    "search_found_many": "{n} 段對話 — 最新的在前",
    "hit_you": "你",
    "hit_assistant": "助理",
    "hit_summary": "摘要",
    "hit_matches": "{n} 則相符的訊息",
    "hit_title": "標題相符",
    "this_conversation": "這段對話",
    "delete_question": "要刪除 **{title}** 嗎？它的訊息和記憶會永久移除。",
    "stopped_note": "_⏹ 已停止 — 這則回覆不完整。_",
    "hidden_one": "_… 較早的 {n} 則訊息沒有顯示在這裡。_",
    "hidden_many": "_… 較早的 {n} 則訊息沒有顯示在這裡。_",
    "stopped_before": "回覆開始前就停止了。",
    "not_answered": "⚠️ **沒有回答。**",
    "broke_off": "_⚠️ 中途斷了 — 這則回覆不完整。_",
    "incomplete": "_⚠️ 不完整：{why}_",
    "did_not_finish": "這則回覆沒有完成。",
    "folded_one": "🗜️ _已摘要：模型現在收到的是上面這則訊息的摘要，而不是原文（檢視器裡看得到）。_",
    "folded_many": (
        "🗜️ _已摘要：模型現在收到的是上面這 {n} 則訊息的摘要，而不是原文（檢視器裡看得到）。_"
    ),
    "reset_empty": "🧹 沒有可以忘記的：這段對話的記憶本來就是空的。",
    "reset_done": "🧹 記憶已清除：忘記了 {what}（{chars} 字元）。",
    "reset_both": "{messages}和{summaries}",
    "reset_pins": "{what}及{pins}",
    "reset_title": "{what}和標題",
    "pins_one": "{n} 則釘選的事實",
    "pins_many": "{n} 則釘選的事實",
    "messages_one": "{n} 則訊息",
    "messages_many": "{n} 則訊息",
    "summaries_one": "{n} 份摘要",
    "summaries_many": "{n} 份摘要",
    "board_greeting": (
        "{avatar} **{name}** — 提出一個問題：每位成員依序發言，最後由{chair}做出決定。\n\n{members}"
    ),
    "board_offline": (
        "_離線模型每則訊息要依序回答 {n} 次（雙核心上每次約 15–25 秒）："
        "預計需要一分鐘以上，回答品質也有限。_"
    ),
    "veto_note": "{speaker}必須否決：{reason}（門檻 {threshold}%），依業務指標表判定。",
    "veto_member": (
        "⛔ **{label}**：{reason}，低於門檻 {threshold}% — 由業務指標表判定，不是模型的意見。"
    ),
    "veto_chair": "⛔ **{label}**成立（{member}：{reason}，門檻 {threshold}%）：提案不予核准。",
    "insp_empty": "_開始對話後，這裡會顯示模型收到的內容。_",
    "insp_memory": "脈絡中的記憶：**{chars}** / **{budget}** 字元；你的下一則訊息接在後面。",
    "insp_system_instruction": "#### 系統指令",
    "insp_system_prompt": "#### 系統提示",
    "insp_summary": "#### 記憶摘要",
    "insp_none_yet": "_還沒有。_",
    "insp_recalled_one": "_為這份草稿喚起了 {n} 則較早的訊息 — 在上面的記憶附註裡。_",
    "insp_recalled_many": "_為這份草稿喚起了 {n} 則較早的訊息 — 在上面的記憶附註裡。_",
    "insp_waiting": "_有 {n} 則較早的訊息等待摘要，不會送出。_",
    "insp_recent": "#### 最近的對話（{n}）",
    "insp_fresh": "_沒有：模型從頭開始。_",
    "insp_user": "使用者",
    "insp_assistant": "助理",
    "insp_speakers": "#### 每位發言者收到的內容（{n}）",
    "insp_vetoes": " · ⛔ 被指示否決",
    "insp_user_message": "_它收到的使用者訊息：_",
    "t_veto": "否決",
    "t_memory_cleared": "記憶已清除",
    "t_not_answered": "助理無法回答",
    "t_incomplete": "回覆不完整",
    "t_reply_still_coming": "回覆還在進行中",
    "t_persona_changed": "已更換角色",
    "t_nothing_to_forget": "沒有可忘記的內容",
    "t_conversation_gone": "找不到對話",
    "t_nothing_to_rename": "還沒有可重新命名的對話",
    "t_no_name": "沒有輸入名稱",
    "t_renamed": "已重新命名",
    "t_nothing_deleted": "沒有刪除任何內容",
    "t_deleted": "已刪除",
    "t_persona_not_saved": "角色沒有儲存",
    "t_persona_saved": "角色已儲存",
    "t_no_version": "沒有選擇版本",
    "t_version_restored": "版本已還原",
    "t_builtin_restored": "已還原為內建版本",
    "t_nothing_revoked": "沒有撤銷任何權杖",
    "t_token_revoked": "權杖已撤銷",
    "t_reload": "請重新載入頁面",
    "t_unexpected": "意外錯誤",
    "t_could_not": "無法{action}",
    "persona_changed": "從你的下一則訊息起，由{name}回答。",
    "nothing_to_forget": "還沒有可以忘記的：這是新的對話。",
    "conversation_gone": "那段對話已經不存在，改為顯示新的對話。",
    "reply_still_coming": "回覆還在進行中：等它完成後再送出，或先按停止。",
    "new_chat_after_reply": "你的訊息正在這段對話中回覆：等回覆完成後再開新對話，或先按停止。",
    "save_before_rename": "請先送出第一則訊息再重新命名：新對話在那時才會儲存。",
    "type_a_name": "請先在方框中輸入新的名稱。",
    "renamed": "已重新命名為「{title}」。",
    "nothing_to_delete": "沒有可刪除的：這段對話還沒有儲存。",
    "deleted": "對話已刪除。",
    "no_session": (
        "這個頁面還沒有識別身分，所以沒有你的資料可以顯示或變更。請重新載入頁面再試一次。"
    ),
    "unexpected": (
        "嘗試{action}時發生了意外的錯誤。請再試一次；如果一直發生，伺服器記錄裡有詳細資訊。"
    ),
    "reply_cut": "回覆在 {limit} 字元處被截斷，這是訊息的長度上限。",
    "stopped_stored": "已停止 — 這則回覆不完整。",
    "interrupted": "Mnemo 在這則回覆完成前停止了（伺服器重新啟動或當機）。請重試以取得完整回答。",
    "failed_unexpectedly": "回答時出了問題。請稍後重試。",
    "reply_max_tokens": "回覆達到模型的長度上限。請它繼續。",
    "version_in_use": "使用中的是 **v{version}** 版。",
    "builtin_in_use": "使用中的是 **v{version}** 版（內建）。",
    "disk_broken": "⚠️ 磁碟上的內建檔案損壞了；改用最後一個正常的版本：",
    "valid_unsaved": "✏️ 格式正確，尚未儲存。",
    "valid": "✅ 格式正確：**{name}**（`{id}`）。儲存後即可使用。",
    "fix_problems": "角色沒有儲存：請修正編輯器下方列出的問題。",
    "persona_saved": "已儲存 {name} v{version}：從下一則訊息起使用。",
    "saved_as": "✅ 已另存為 **v{version}**；從下一則訊息起使用。",
    "pick_version": "請先在清單中選擇一個版本。",
    "back_to_version": "{name} 已回到 v{version}。",
    "back_to_builtin": "{name} 已回到內建版本。",
    "problems_not_saved": "❌ **沒有儲存** — 使用中的版本沒有變更。請先修正這些問題：",
    "board_version_in_use": "這個圓桌會議使用中的是 **v{version}** 版。",
    "board_builtin_in_use": "這個圓桌會議使用中的是 **v{version}** 版（內建）。",
    "board_valid": "✅ 格式正確：**{name}**（`{id}`），發言順序：{speakers}。儲存後即可使用。",
    "board_fix_problems": "圓桌會議沒有儲存：請修正編輯器下方列出的問題。",
    "t_board_not_saved": "圓桌會議沒有儲存",
    "t_board_saved": "圓桌會議已儲存",
    "problems": "❌ **YAML 有問題：**",
    "problem_at": "第 {line} 行第 {column} 欄：",
    "no_tokens": "_還沒有權杖。_",
    "tokens_head": "| 名稱 | 結尾 | 建立時間 | 最後使用 |",
    "token_revoked_mark": "（已撤銷）",
    "never": "從未",
    "pick_token": "請先選擇要撤銷的權杖。",
    "token_revoked": "權杖「{name}」已撤銷：立即失效。",
}

# The actions `ui.errors.user_errors()` names ("Could not <action>"), in each language.
ACTIONS: dict[str, str] = {
    "change how long this conversation is kept": "變更這段對話的保留時間",
    "change the persona": "更換角色",
    "delete the conversation": "刪除對話",
    "load your conversations": "載入你的對話",
    "open that conversation": "開啟那段對話",
    "open the persona": "開啟角色",
    "refresh the chat": "重新整理對話",
    "rename the conversation": "重新命名對話",
    "reset the memory": "清除記憶",
    "retry": "重試",
    "revert the persona": "還原角色",
    "roll back the persona": "回復角色版本",
    "save the persona": "儲存角色",
    "send your message": "送出你的訊息",
    "start a new chat": "開始新對話",
    "undo": "復原",
    "list your API tokens": "列出你的 API 權杖",
    "create the API token": "建立 API 權杖",
    "revoke the API token": "撤銷 API 權杖",
    "change the summary": "變更摘要",
    "change “about me”": "變更「關於我」",
    "delete the pinned fact": "刪除釘選的事實",
    "delete your data": "刪除你的資料",
    "export": "匯出",
    "import the file": "匯入檔案",
    "pin the fact": "釘選事實",
    "show the memory panel": "顯示記憶面板",
    "open the roundtable": "開啟圓桌會議",
    "save the roundtable": "儲存圓桌會議",
    "roll back the roundtable": "回復圓桌會議版本",
}

EN |= panel_texts.EN
ZH_TW |= panel_texts.ZH_TW
CATALOGS = {"en": EN, CHINESE: ZH_TW}
# Sentences the assistant stores with a reply, as it wrote them (assistant/chat.py's notices).
STORED = (
    "reply_cut",
    "reply_max_tokens",
    "stopped_before",
    "stopped_stored",
    "interrupted",
    "failed_unexpectedly",
)
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


# The persona a new chat starts with when none is picked, by language (None: the app's default).
DEFAULT_PERSONAS = {CHINESE: "assistant_zh_tw"}


def default_persona() -> str | None:
    """The persona a new chat on this page starts with: the one that speaks its language."""
    return DEFAULT_PERSONAS.get(current_language())


def chinese() -> bool:
    """Whether this event's browser reads Traditional Chinese."""
    return current_language() == CHINESE


def tr(key: str, **params: Any) -> str:
    """The text for `key` in this event's language, formatted with `params`."""
    if key not in EN:
        raise KeyError(f"No text {key!r}: add it to ui/texts.py in every language.")
    return CATALOGS[current_language()][key].format(**params)


def count(key: str, n: int, **params: Any) -> str:
    """`key_one` for 1, else `key_many`, with `n` formatted as 1,234."""
    return tr(f"{key}_one" if n == 1 else f"{key}_many", n=f"{n:,}", **params)


def action(phrase: str) -> str:
    """An action of "Could not <action>" in this event's language."""
    return ACTIONS.get(phrase, phrase) if chinese() else phrase


def date(year: int, month: int, day: int) -> str:
    """A day as the sidebar shows an older conversation: 'Nov 03, 2026', '2026年11月3日'."""
    return tr("date", year=year, month=month if chinese() else _MONTHS[month - 1], day=day)


def placeholders(text: str) -> set[str]:
    """The `{names}` a catalog entry formats (for the test that both languages match)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def sentence_pattern(english: str) -> re.Pattern[str]:
    """A regex matching what `english.format(...)` writes, each `{name}` a group (a name
    formatted twice must be the same value both times)."""
    parts, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(english):
        parts.append(re.escape(literal))
        if name:
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
            seen.add(name)
    return re.compile("".join(parts) + r"\Z", re.S)


def version_label(version: int, saved_at: float | None) -> str:
    """A versions list's line in this event's language: "v0 · built-in" (version 0 is the
    built-in file), "v3 · saved 2026-11-30 06:12 UTC"."""
    if version == 0:
        return tr("version_builtin", version=version)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(saved_at or 0))
    return tr("version_saved", version=version, when=when)


def known(text: str) -> str:
    """Text the app wrote in English and stored (a reply's note, "The reply was cut at 10,000
    characters, ..."), in this event's language when it is one of the catalog's sentences, its
    values kept; anything else as stored."""
    if not chinese():
        return text
    for key in STORED:
        found = sentence_pattern(EN[key]).match(text)
        if found:
            return ZH_TW[key].format(**found.groupdict())
    return text
