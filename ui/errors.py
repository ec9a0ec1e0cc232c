"""The UI's error boundary: lower layers raise `assistant.errors.UserError`s carrying a message a
person can act on; `user_errors()` turns them into `gr.Error`s, in one place, and nothing else
reaches the browser.

The assistant writes its messages in English (the HTTP API sends them as they are). For a page
in 繁體中文, `ZH_TW` says the same by the error's `code` (its condition, or its kind), with the
numbers from its `params`; a code missing there falls back to its kind's sentence, so a
Chinese page never shows an English error.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping

import gradio as gr

from assistant.errors import UserError
from ui import notices
from ui.texts import action, chinese, tr

log = logging.getLogger("mnemo.app")

# code -> (title or None: "無法<action>", message); {names} come from the error's params.
ZH_TW: dict[str, tuple[str | None, str]] = {
    # by condition
    "message_too_long": (
        None,
        "你的訊息有 {length:,} 個字元，"
        "上限是 {limit:,}（多了 {excess:,} 個）。請縮短，或分成幾則訊息。",
    ),
    "empty_message": (None, "訊息是空的。請先輸入內容再送出。"),
    "invalid_title": (None, "這個名稱不能使用：名稱不可空白，也不能太長。請縮短後再試一次。"),
    "invalid_retention": (None, "保留時間必須是大於 0 的整數分鐘數，或選擇一直保留。"),
    "invalid_token_name": (
        None,
        "請給權杖一個名稱（不可太長），例如會使用它的腳本或機器人的名字。",
    ),
    "too_many_tokens": (None, "你的有效權杖已達上限。請先撤銷一個不用的權杖。"),
    "token_not_found": ("找不到 API 權杖", "那個 API 權杖不存在。請重新整理權杖清單。"),
    "quota_unknown": (None, "Mnemo 目前無法檢查你的訊息額度，所以暫不回答。請一分鐘後再試。"),
    "quota_hour": (
        None,
        "你在過去一小時內已送出 {quota} 則訊息，達到這台伺服器的上限。"
        "請稍後再試，或自己架設 Mnemo 就沒有限制。",
    ),
    # by kind (no placeholders: the sentence when a raise gave no code or numbers)
    "error": (None, "發生了錯誤，沒有完成。請再試一次。"),
    "quota": (
        None,
        "你已達到這台伺服器每小時的訊息上限。請稍後再試，或自己架設 Mnemo 就沒有限制。",
    ),
    "not_found": (
        "找不到對話",
        "這段對話已經不存在（在另一個分頁刪除了？）。請在側邊欄選擇其他對話，或開始新對話。",
    ),
    "invalid_input": (None, "輸入的內容不被接受，沒有任何變更。請修改後再試一次。"),
    "invalid_message": (None, "這則訊息無法送出。請檢查內容後再試一次。"),
    "persona_not_found": ("找不到角色", "你沒有這個角色。請選擇其他角色，或把它還原為內建版本。"),
    "invalid_persona": (
        "角色沒有儲存",
        "角色的 YAML 有問題，沒有儲存。請修正編輯器下方列出的問題。",
    ),
    "persona": (None, "這個角色操作無法完成（可能已達上限，或沒有可還原的版本）。"),
    "roundtable": (
        "無法使用圓桌會議",
        "這個圓桌會議目前無法使用：它可能不存在、列出了你沒有的角色，或否決規則無法套用。"
        "請編輯圓桌會議，或改用單一角色。",
    ),
    "roundtable_not_found": (
        "找不到圓桌會議",
        "你沒有這個圓桌會議。請選擇其他圓桌會議，或改用單一角色。",
    ),
    "config": ("設定有誤", "伺服器的設定有誤，助理無法回答。請管理員檢查設定與伺服器記錄。"),
    "rate_limited": (
        None,
        "Gemini 正在限制請求頻率（429：請求太多或金鑰額度用完）。請稍候再重試。",
    ),
    "invalid_key": (None, "Gemini 拒絕了 API 金鑰。請設定有效的 GEMINI_API_KEY 後重新啟動。"),
    "invalid_request": (None, "Gemini 拒絕了這個請求。請檢查 GEMINI_MODEL 設定，或換個說法再試。"),
    "unavailable": (None, "模型目前無法使用或連線中斷；已收到的內容會保留。請稍後重試。"),
    "safety": (None, "Gemini 的安全過濾器擋下了這則訊息或回覆。請換個說法再試。"),
    "empty_reply": (None, "模型沒有寫出任何內容就結束了。請重試，或換個說法。"),
    "nothing_to_retry": (None, "還沒有可以重新回答的訊息：請先送出一則。"),
    "reply_streaming": (
        "回覆還在進行中",
        "這段對話的回覆還在進行中：請先按停止，或等它完成後再試。",
    ),
    "shutting_down": (
        "Mnemo 正在重新啟動",
        "Mnemo 正在重新啟動，所以這則訊息沒有送出。請幾秒後重新載入頁面再送一次。",
    ),
    "storage": (
        "儲存空間無法使用",
        "對話資料庫目前無法使用，所以沒能完成。請確認資料目錄可寫入且有剩餘空間，再試一次。",
    ),
}
# Shown for a kind the table lacks (a new error class): still Chinese, still an error.
_ZH_FALLBACK = ZH_TW["error"]


def shown(exc: UserError) -> tuple[str | None, str]:
    """(title, message) of `exc` in this event's language; title None: the caller's action."""
    return condition_shown(exc.code, exc.kind, exc.params, exc.message, exc.title)


def condition_shown(
    code: str | None,
    kind: str | None,
    params: Mapping[str, object],
    message: str,
    title: str | None = None,
) -> tuple[str | None, str]:
    """(title, message) of an error by its code, kind and numbers, in this event's language
    (`message` and `title` are its English ones); also what a stored failure note shows."""
    if not chinese():
        return title, message
    params = dict(params)
    if {"length", "limit"} <= params.keys():
        params["excess"] = params["length"] - params["limit"]  # type: ignore[operator]
    for key in (code, kind):  # the kind's sentence when the numbers are missing
        title, message = ZH_TW.get(key or "", (None, ""))
        try:
            if message:
                return title, message.format(**params)
        except (KeyError, ValueError, TypeError):
            continue
    return _ZH_FALLBACK


def message_of(exc: UserError) -> str:
    """The message of `exc` in this event's language."""
    return shown(exc)[1]


def error_for(exc: UserError, doing: str) -> gr.Error:
    """The gr.Error for `exc`; `doing` completes "Could not ..." when it has no title."""
    title, message = shown(exc)
    return notices.error(message, title=title or tr("t_could_not", action=action(doing)))


def require_owner(owner: str | None) -> None:
    """Every handler's first check: a request from a page that never ran its load event (only
    a script can send one) has no owner; it gets a clear error, not a 500 and a traceback."""
    if not owner:
        raise notices.error(tr("no_session"), title=tr("t_reload"))


@contextlib.contextmanager
def user_errors(doing: str) -> Iterator[None]:
    """Turn an exception from a lower layer into a gr.Error saying what to do next; `doing`
    (a key of ui.texts.ACTIONS) completes "Could not ..." when the error has no title."""
    try:
        yield
    except gr.Error:
        raise
    except UserError as exc:
        raise error_for(exc, doing) from exc
    except Exception as exc:
        log.exception("unexpected error while trying to %s", doing)
        raise notices.error(
            tr("unexpected", action=action(doing)), title=tr("t_unexpected")
        ) from exc
