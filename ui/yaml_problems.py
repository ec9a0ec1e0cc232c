"""What is wrong in persona and roundtable YAML, in 繁體中文 for a zh-TW page.

The validators (personas/loader.py, roundtable.py, form.py) write each problem in English as
`field: message`, the message built from a fixed sentence with values in it. A Chinese page gets
the same problem with the sentence translated and the values kept: `translate()` matches the
message against the English sentences below (each `{name}` stands for a value) and writes the
Chinese one. The field and any code (`id: my_persona`, `- id`) stay as written — they are what
the user types. PyYAML's own words for a syntax error are kept, quoted, after the translated
advice. A message no sentence matches is shown as the validator wrote it; a test runs every
problem the validators' tables produce through this and checks that none is left in English.
"""

from __future__ import annotations

import re
import string

from ui.texts import sentence_pattern

_EG_I18N = "e.g. `zh-TW: {{display_name: 業務總監}}`"
_ZH_EG_I18N = "例如 `zh-TW: {{display_name: 業務總監}}`"

# (English as the validators write it, Chinese), most specific first: the first match wins.
SENTENCES: list[tuple[str, str]] = [
    # document and syntax (personas/loader.py)
    ("is not UTF-8 text — save the file as UTF-8", "不是 UTF-8 文字 — 請以 UTF-8 儲存檔案"),
    (
        "is {size} KB; the limit is {limit} KB — shorten it",
        "有 {size} KB；上限是 {limit} KB — 請縮短",
    ),
    (
        "is empty — start with `id:`, `display_name:` and `role_description:`",
        "是空的 — 請從 `id:`、`display_name:` 與 `role_description:` 開始",
    ),
    (
        "expected a mapping of `field: value` lines at the top, got {what} — start with "
        "`id: my_persona`",
        "最上層應是 `欄位: 值` 的對應，卻是{what} — 請從 `id: my_persona` 開始",
    ),
    (
        "alias *{name} — aliases and merge keys are not allowed in persona files; write the "
        "value out in full",
        "別名 *{name} — 角色檔不能使用別名與合併鍵；請把值完整寫出",
    ),
    (
        "nested more than {n} levels deep — a persona needs at most two (a list or `parameters` "
        "inside the top-level mapping)",
        "巢狀超過 {n} 層 — 角色最多只需要兩層（最上層對應裡的清單或 `parameters`）",
    ),
    ("nested more than {n} levels deep — flatten it", "巢狀超過 {n} 層 — 請減少層數"),
    (
        "unreadable character {char} — remove it or retype the text",
        "無法讀取的字元 {char} — 請刪除或重新輸入",
    ),
    (
        "{problem} — a value containing ': ' must be in quotes, or this line is indented "
        "differently from its neighbours",
        "含有「: 」的值必須加上引號，或是這一行的縮排和上下行不同（{problem}）",
    ),
    ("{problem} — indent with spaces, not tabs", "請用空格縮排，不要用 Tab（{problem}）"),
    (
        "{problem} — each line of a mapping needs `key: value`",
        "對應的每一行都需要 `key: value`（{problem}）",
    ),
    (
        "{problem} — check the indentation: keys of one mapping line up",
        "請檢查縮排：同一個對應的鍵要對齊（{problem}）",
    ),
    (
        "{problem} — list items line up under each other, each starting with '- '",
        "清單的項目要上下對齊，每項以「- 」開頭（{problem}）",
    ),
    ("{problem} — a quote or bracket is not closed", "有引號或括號沒有關閉（{problem}）"),
    (
        "{problem} — keep one persona per file: remove the `---` separator",
        "一個檔案只放一個角色：請刪除 `---` 分隔線（{problem}）",
    ),
    (
        "{problem} — tags such as !!python/... are not allowed",
        "不能使用 !!python/... 之類的標籤（{problem}）",
    ),
    ("{problem} — tags are not allowed in persona files", "角色檔不能使用標籤（{problem}）"),
    ("{problem} — fix the YAML at this position", "請修正這個位置的 YAML（{problem}）"),
    ("{problem} — fix the YAML", "請修正 YAML（{problem}）"),
    # fields (personas/loader.py)
    (
        "duplicate key (first set on line {line}) — keep only one",
        "重複的鍵（第 {line} 行已設定過）— 只保留一個",
    ),
    (
        "required — add `id: my_persona` (1-40 of a-z, 0-9, '_' or '-')",
        "必填 — 請加上 `id: my_persona`（1–40 個 a-z、0-9、'_' 或 '-'）",
    ),
    (
        "required — add `display_name: ...`, the name shown in the picker",
        "必填 — 請加上 `display_name: ...`，也就是選單中顯示的名稱",
    ),
    (
        "required — add `role_description: ...` saying who the persona is and what it does",
        "必填 — 請加上 `role_description: ...`，說明這個角色是誰、做什麼",
    ),
    (
        "must not be empty — write an id such as `my_persona` (1-40 of a-z, 0-9, '_' or '-')",
        "不能是空的 — 請寫一個 id，例如 `my_persona`（1–40 個 a-z、0-9、'_' 或 '-'）",
    ),
    (
        "must not be empty — write the name shown in the picker",
        "不能是空的 — 請寫下選單中顯示的名稱",
    ),
    (
        "must not be empty — say who the persona is and what it does",
        "不能是空的 — 請說明這個角色是誰、做什麼",
    ),
    (
        "must not be empty — write the item or remove its line",
        "不能是空的 — 請寫下這一項，或刪除這一行",
    ),
    (
        "must not be empty — write a value or remove the line",
        "不能是空的 — 請寫一個值，或刪除這一行",
    ),
    (
        "unknown field — did you mean `{name}`? Rename or remove it",
        "未知的欄位 — 是不是要寫 `{name}`？請改名或刪除",
    ),
    (
        "unknown field — remove it; the fields are: {names}",
        "未知的欄位 — 請刪除；可用的欄位有：{names}",
    ),
    (
        "unknown field — a roundtable's {tag} entry has {names}; rename or remove it",
        "未知的欄位 — 圓桌會議的 {tag} 項目只有 {names}；請改名或刪除",
    ),
    (
        "{what} is not a field name — use one of the persona fields or remove it",
        "{what}不是欄位名稱 — 請使用角色的欄位，或刪除它",
    ),
    (
        "parameter names are text such as `veto_threshold_pct`, got {what} — rename it",
        "參數名稱應是像 `veto_threshold_pct` 的文字，卻是{what} — 請改名",
    ),
    (
        "expected a text, got {what} — write a single text (use `|` for several lines)",
        "應是文字，卻是{what} — 請寫成一段文字（多行請用 `|`）",
    ),
    (
        "expected a text, got {what} — put the value in quotes",
        "應是文字，卻是{what} — 請把值加上引號",
    ),
    (
        "is {n} characters; the limit is {limit} — shorten it",
        "有 {n} 個字元；上限是 {limit} — 請縮短",
    ),
    (
        "{value} is not a valid id — use 1-40 characters of a-z, 0-9, '_' or '-', e.g. "
        "`sales_lead`",
        "{value} 不是有效的 id — 請用 1–40 個 a-z、0-9、'_' 或 '-'，例如 `sales_lead`",
    ),
    (
        "expected a list, got {what} — write each item on its own line starting with '- '",
        "應是清單，卻是{what} — 每一項各寫一行，以「- 」開頭",
    ),
    (
        "expected a mapping, got {what} — write `name: value` lines, e.g. `veto_threshold_pct: 15`",
        "應是對應，卻是{what} — 請寫成 `名稱: 值` 的行，例如 `veto_threshold_pct: 15`",
    ),
    (
        "has {n} entries; the limit is {limit} — merge or remove some",
        "有 {n} 項；上限是 {limit} — 請合併或刪除一些",
    ),
    (
        "expected a number such as 0.7, got {what} — write it without quotes",
        "應是數字（例如 0.7），卻是{what} — 請不要加引號",
    ),
    ("is {value}; it must be between 0 and 2", "是 {value}；必須介於 0 到 2 之間"),
    (
        "must be a number or a text, e.g. `veto_threshold_pct: 15`",
        "必須是數字或文字，例如 `veto_threshold_pct: 15`",
    ),
    ("must be a finite number", "必須是有限的數字"),
    (
        "text parameters are limited to 200 characters — shorten it",
        "文字參數最多 200 個字元 — 請縮短",
    ),
    ("must fit on one line — remove the line break", "必須寫在一行內 — 請刪除換行"),
    (
        "parameter names are letters, digits and '_' (not starting with a digit), at most 40 "
        "characters, e.g. `veto_threshold_pct`",
        "參數名稱由字母、數字與 '_' 組成（不以數字開頭），最多 40 個字元，例如 "
        "`veto_threshold_pct`",
    ),
    (
        "unknown placeholder {{{name}}} — add `{name}: <value>` under parameters (known: "
        "{known}), or write {{{{{name}}}}} for a literal {{{name}}}",
        "未知的佔位符 {{{name}}} — 請在 parameters 下加上 `{name}: <值>`（已有：{known}），"
        "或寫成 {{{{{name}}}}} 表示字面上的 {{{name}}}",
    ),
    (
        "{value} is not a language the app is shown in — use {tags}, " + _EG_I18N,
        "{value} 不是介面提供的語言 — 請用 {tags}，" + _ZH_EG_I18N,
    ),
    (
        "expected a mapping of languages, got {what} — write one language per line, " + _EG_I18N,
        "應是語言的對應，卻是{what} — 每種語言寫一行，" + _ZH_EG_I18N,
    ),
    (
        "expected the fields shown in {tag}, got {what} — write `display_name: ...` (and "
        "`description: ...`) under it, " + _EG_I18N,
        "應是 {tag} 顯示的欄位，卻是{what} — 請在它底下寫 `display_name: ...`（以及 "
        "`description: ...`），" + _ZH_EG_I18N,
    ),
    # the editor's form (personas/form.py)
    (
        "write one `name: value` per line, e.g. `veto_threshold_pct: 15`",
        "每行寫一個 `名稱: 值`，例如 `veto_threshold_pct: 15`",
    ),
    ("Fix the YAML first — the form follows it.", "請先修正 YAML — 表單跟著 YAML。"),
    (
        "not on the form (it has {names}); edit it in the YAML",
        "不在表單上（表單有 {names}）；請在 YAML 中編輯",
    ),
    # roundtables (personas/roundtable.py)
    (
        "required — add `id: my_board` (1-40 of a-z, 0-9, '_' or '-')",
        "必填 — 請加上 `id: my_board`（1–40 個 a-z、0-9、'_' 或 '-'）",
    ),
    (
        "required — add `members:` with the persona ids in speaking order, one `- id` per line",
        "必填 — 請加上 `members:`，依發言順序列出角色 id，每行一個 `- id`",
    ),
    (
        "required — add `chair: general_manager`, the persona who concludes",
        "必填 — 請加上 `chair: general_manager`，也就是做結論的角色",
    ),
    (
        "required — add `name: ...`, the brand or customer as a question names it",
        "必填 — 請加上 `name: ...`，也就是問題中提到的品牌或客戶",
    ),
    ("required — add `gross_margin_pct: 12.5`", "必填 — 請加上 `gross_margin_pct: 12.5`"),
    (
        "required — add `member: finance`, the member who vetoes",
        "必填 — 請加上 `member: finance`，也就是有否決權的成員",
    ),
    ("required — add it", "必填 — 請加上"),
    ("is {value}; use 1 to {limit} rounds", "是 {value}；請用 1 到 {limit} 輪"),
    ("is {value}; a margin is between -100 and 100 (%)", "是 {value}；毛利介於 -100 到 100（%）"),
    (
        "needs at least one member — list persona ids, one `- id` per line",
        "至少需要一位成員 — 請列出角色 id，每行一個 `- id`",
    ),
    (
        "expected a whole number of rounds (1 to {limit}), got {value}",
        "輪數應是整數（1 到 {limit}），卻是 {value}",
    ),
    (
        "expected a number such as 12.5, got {value} — write it without quotes",
        "應是數字（例如 12.5），卻是 {value} — 請不要加引號",
    ),
    (
        "each persona speaks once per round — remove the repeat",
        "每位角色每輪只發言一次 — 請刪除重複的",
    ),
    (
        "{chair} is also a member — the chair speaks last on its own; remove it from members",
        "{chair} 也是成員 — 主席獨自最後發言；請把它從 members 中刪除",
    ),
    (
        "{member} is not a member — add it to members or name a member",
        "{member} 不是成員 — 請把它加進 members，或改寫一位成員",
    ),
    (
        "a veto is decided from the metrics table — add rows such as "
        "`- {{name: Nike, gross_margin_pct: 12}}`, or remove `veto`",
        "否決是依指標表判定的 — 請加上像 `- {{name: Nike, gross_margin_pct: 12}}` 的列，"
        "或刪除 `veto`",
    ),
]

# What a value was, as `_describe()` in personas/loader.py words it.
WHATS: list[tuple[str, str]] = [
    ("nothing", "空的"),
    ("a list", "清單"),
    ("a mapping", "對應"),
    ("a text", "文字"),
    ("the number {n}", "數字 {n}"),
    (
        "{b} (YAML reads yes/no/on/off/true/false as true or false)",
        "{b}（YAML 把 yes/no/on/off/true/false 讀成真假值）",
    ),
    ("a {kind} value", "{kind} 值"),
]

_COMPILED = [(sentence_pattern(en), zh) for en, zh in SENTENCES]
_WHATS = [(sentence_pattern(en), zh) for en, zh in WHATS]
# "focus_areas item 2", "metrics item 1.gross_margin_pct", "i18n.zh-TW.display_name", "yaml"
_FIELD = re.compile(r"^([^:\n]+?): ")
_ITEM = re.compile(r" item (\d+)")


def _what(text: str) -> str:
    for pattern, zh in _WHATS:
        found = pattern.match(text)
        if found:
            return zh.format(**found.groupdict())
    return text


# Values that are words of the validator's rather than the user's.
_VALUES = {
    "what": _what,
    "known": lambda known: "無" if known == "none defined" else known,
    "tags": lambda tags: tags.replace(" or ", " 或 "),
}


def sentence(message: str) -> str | None:
    """The Chinese for one validator sentence (values kept), or None when none matches."""
    for pattern, zh in _COMPILED:
        found = pattern.match(message)
        if found:
            values = {k: _VALUES.get(k, str)(v) for k, v in found.groupdict().items()}
            return zh.format(**values)
    return None


def translate(problem: str) -> str:
    """`field: message` (the place already taken off) with the message in Chinese; a message
    no sentence matches stays as written."""
    found = _FIELD.match(problem)
    field, message = (found.group(1), problem[found.end() :]) if found else ("", problem)
    chinese = sentence(message)
    if chinese is None:
        return problem
    return _ITEM.sub(r" 第 \1 項", field) + "：" + chinese if field else chinese


def names(english: str) -> set[str]:
    """The `{names}` a sentence formats (for the test that both languages match)."""
    return {name for _, name, _, _ in string.Formatter().parse(english) if name}
