"""What the app shows, computed from plain data: no Gradio, no database, no model.

Every function here takes the records the `assistant.Conversations` facade returns
(conversations, turns, memory status, previews, personas, search results) and returns strings
or Gradio-shaped lists, so the panels' handlers stay thin and all of this is testable without a
browser. The words come from ui/texts.py, in the language of the browser being answered
(`ui.i18n.speaking()` picks one in tests).
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from assistant.outcome_notes import decode as decode_note
from ui import yaml_problems
from ui.badge import compact_number, model_label
from ui.errors import condition_shown
from ui.i18n import CHINESE, current_language
from ui.texts import STORED, count, date, known, tr

TITLE_CHARS = 24
AVATAR_CHARS = 4  # 👩🏽‍💻 is 4 code points; a word is clipped to 3 letters and "…"
# How long a conversation is kept: (text key, minutes idle; 0 = until deleted).
RETENTION = [
    ("retention_keep", 0),
    ("retention_30m", 30),
    ("retention_1d", 1440),
    ("retention_7d", 10080),
]
STOPPED_NOTE = "_⏹ Stopped — this reply is incomplete._"  # tr("stopped_note") in English
SEARCH_ROWS = 20  # conversations a sidebar search lists
# The store wraps matches in these; control characters, so no message text can fake one.
SEARCH_MARK = ("\x02", "\x03")
_MARKED = re.compile("\x02([^\x02\x03]*)\x03")


# ---- user text shown as typed --------------------------------------------------------------

# Code, where Markdown shows text literally: fenced blocks (closed, or open to the end while a
# reply streams) and inline code spans.
_CODE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^(?P=fence)[ \t]*$|\Z)"
    r"|(?P<ticks>`+)(?!`).*?(?<!`)(?P=ticks)(?!`)",
    re.S | re.M,
)
# What starts an HTML tag, comment or declaration; "a < b" is left alone.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def retention_choices() -> list[tuple[str, int]]:
    """The "forget after" picker's (label, minutes) choices."""
    return [(tr(key), minutes) for key, minutes in RETENTION]


def message_markdown(text: str) -> str:
    """A chat message (the user's or the model's) for the Chatbot, which renders Markdown and
    then strips unsafe HTML: `<script>…</script>` vanished from the bubble with everything in
    it. Outside code, every `<` that would open a tag becomes `&lt;`, so the text shows exactly
    as typed and no HTML is ever rendered; Markdown formatting and code blocks still work."""
    out, pos = [], 0
    for code in _CODE.finditer(text):
        out.append(_TAG_START.sub("&lt;", text[pos : code.start()]))
        out.append(code.group())
        pos = code.end()
    out.append(_TAG_START.sub("&lt;", text[pos:]))
    return "".join(out)


def plain_markdown(text: str) -> str:
    """User text (a title, a persona's name, a problem quoting YAML) inside a Markdown
    component, shown as typed: Markdown punctuation backslash-escaped, HTML escaped."""
    escaped = _MD_PUNCT.sub(r"\\\1", text)
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip_avatar(avatar: str | None) -> str:
    """An avatar as the sidebar, search results and pickers show it: a few characters at most
    (one emoji, even a combined one), so a long avatar cannot push the title out of its row."""
    text = " ".join((avatar or "").split()) or "💬"
    return text if len(text) <= AVATAR_CHARS else text[: AVATAR_CHARS - 1] + "…"


def message_text(content: Any) -> str:
    """The text of a chat message as Gradio hands it over: a string, a dict with "text", or a
    list of parts ({"type": "text", "text": ...}); files become their names."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"] or "")
        if "path" in content or "file" in content:
            file = content.get("file") or content
            name = file.get("orig_name") or file.get("path") if isinstance(file, dict) else file
            return f"[file: {name}]"
        return ""
    if isinstance(content, Sequence):
        return "".join(message_text(part) for part in content)
    return str(content)


def speaker_header(avatar: str | None, name: str) -> str:
    """The first line of a roundtable speaker's bubble: its avatar and name (the same while
    streaming and when the conversation is reopened)."""
    return f"{plain_markdown(avatar or '💬')} **{plain_markdown(name)}**"


def chat_messages(
    turns: Iterable[Any],
    greeting: str | None = None,
    hidden: int = 0,
    speakers: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Transcript turns (oldest first) -> Chatbot messages.

    The persona's greeting opens every chat; it is shown, never stored or sent to the model.
    Summary turns stay out of the chat (the badge and the inspector show them); an assistant
    reply that was stopped or broke off says so. When the oldest `hidden` messages are left
    out (long conversations), a note takes the greeting's place. Messages folded into a summary
    (always the oldest) are followed by a note saying the model no longer gets their words.
    """
    messages: list[dict[str, Any]] = []
    if hidden > 0:
        messages.append({"role": "assistant", "content": count("hidden", hidden)})
    elif greeting:
        messages.append({"role": "assistant", "content": message_markdown(greeting)})
    folded = 0
    for turn in turns:
        if getattr(turn, "is_summary", False) or turn.role not in ("user", "assistant"):
            continue
        if folded and not getattr(turn, "compacted", False):
            messages.append({"role": "assistant", "content": folded_note(folded)})
            folded = 0
        elif getattr(turn, "compacted", False):
            folded += 1
        if getattr(turn, "is_tool_note", False):
            messages.append(tool_message(turn.content))
            continue
        content = message_markdown(turn.content)
        outcome = getattr(turn, "outcome", None)
        note = getattr(turn, "outcome_note", None)
        if turn.role == "assistant" and (outcome or getattr(turn, "incomplete", False)):
            content = f"{content}\n\n{incomplete_note(outcome, note)}"
        line = veto_line(note, speakers) if turn.role == "assistant" and note else None
        if line:
            content = f"{content}\n\n{line}"
        speaker = getattr(turn, "speaker", None)
        if turn.role == "assistant" and speaker:
            info = (speakers or {}).get(speaker)  # None: that persona is gone; show its id
            header = speaker_header(info.avatar if info else None, shown(info) if info else speaker)
            content = f"{header}\n\n{content}"
        messages.append({"role": turn.role, "content": content})
        if turn.role == "user" and outcome in ("failed", "stopped"):
            # Nobody answered it: the note the chat showed when it happened, after a reload too.
            messages.append({"role": "assistant", "content": unanswered_note(outcome, note)})
    if folded:
        messages.append({"role": "assistant", "content": folded_note(folded)})
    return messages


def stored_note(stored: str | None) -> str | None:
    """Why a turn ended, as stored with it, in this page's language: by its code and numbers
    (one of the chat's own sentences, or an error's); an older note stored as an English
    sentence through the sentences the app wrote (`known`), else as stored."""
    note = decode_note(stored)
    if note is None or note.code is None:
        return known(note.text) if note is not None else None
    if note.code in STORED:
        params = {k: f"{v:,}" if isinstance(v, int) else v for k, v in note.params.items()}
        try:
            return tr(note.code, **params)
        except (KeyError, ValueError, IndexError):
            return known(note.text)
    return condition_shown(note.code, note.kind, note.params, note.text)[1]


def veto_line(stored: str | None, speakers: dict[str, Any] | None = None) -> str | None:
    """The ⛔ line the system stored with a roundtable reply (the vetoing member's, the
    chair's), in this page's language; None when the reply has none."""
    note = decode_note(stored)
    return system_line(note.veto, speakers) if note is not None and note.veto else None


def system_line(line: Any, speakers: dict[str, Any] | None = None) -> str:
    """A SystemLine in this page's language, the vetoing member named as this page names it
    (`speakers`: persona id -> the speaker's record); its English sentence if unknown."""
    params = {k: plain_markdown(str(v)) for k, v in line.params.items()}
    for key in ("label", "reason"):  # in this page's language when the line keeps it
        params[key] = params.get(f"{key}_{current_language()}", params.get(key, ""))
    info = (speakers or {}).get(str(line.params.get("member")))
    params["member"] = plain_markdown(shown(info)) if info else params.get("member_name", "")
    try:
        return tr(line.code, **params)
    except (KeyError, ValueError, IndexError):
        return message_markdown(line.text)


def unanswered_note(outcome: str | None, note: str | None) -> str:
    """Under a user message with no reply: why (the failure's message), live and on reopen;
    `note` as stored (or, live, the message shown)."""
    note = stored_note(note)
    if outcome == "stopped":
        return f"_⏹ {message_markdown(note or tr('stopped_before'))}_"
    reason = f" {message_markdown(note)}" if note else ""
    return tr("not_answered") + reason


def incomplete_note(outcome: str | None, note: str | None) -> str:
    """Under a reply that did not finish: stopped, broke off (why), or cut at a limit."""
    if outcome in (None, "stopped"):
        return tr("stopped_note")
    note = stored_note(note)
    if outcome == "failed":
        why = f" {message_markdown(note)}" if note else ""
        return tr("broke_off") + why
    return tr("incomplete", why=message_markdown(note or tr("did_not_finish")))


def folded_note(folded: int) -> str:
    """The note under the messages a summary replaced in what the model receives."""
    return count("folded", folded)


def relative_time(ts: float | None, now: float | None = None) -> str:
    """'just now', '5 min ago', '3 h ago', 'yesterday', '4 days ago', or a date."""
    if not ts:
        return ""
    now = time.time() if now is None else now
    age = max(0.0, now - ts)
    if age < 45:
        return tr("just_now")
    if age < 90 * 60:
        return tr("minutes_ago", n=max(1, round(age / 60)))
    if age < 24 * 3600:
        return tr("hours_ago", n=round(age / 3600))
    if age < 48 * 3600:
        return tr("yesterday")
    if age < 7 * 86400:
        return tr("days_ago", n=int(age // 86400))
    day = time.localtime(ts)
    return date(day.tm_year, day.tm_mon, day.tm_mday)


def conversation_label(conversation: Any, avatar: str, now: float | None = None) -> str:
    """One row of the sidebar: persona avatar and title, then (on a second line, which the
    sidebar's CSS keeps) the relative time of the last activity."""
    title = " ".join((conversation.title or tr("untitled")).split())
    if len(title) > TITLE_CHARS:  # one line of the 300px sidebar
        title = title[: TITLE_CHARS - 1].rstrip() + "…"
    when = relative_time(conversation.last_active_at or conversation.created_at, now)
    return f"{avatar} {title}\n{when}" if when else f"{avatar} {title}"


def conversation_choices(
    conversations: Iterable[Any], avatars: dict[str, str], now: float | None = None
) -> list[tuple[str, str]]:
    """(label, id) pairs for the sidebar list, in the order given (newest activity first)."""
    return [
        (conversation_label(c, clip_avatar(avatars.get(c.persona_id)), now), c.id)
        for c in conversations
    ]


def model_note(model_name: str, lead: Any = "Answering:") -> str:
    """The sidebar's footnote on who answers (`lead` may be a translatable label)."""
    return f"{lead} **{model_name}**"


def draft_badge(model_name: str) -> str:
    """The badge before a new chat's first message."""
    lead = tr("badge_nothing")
    return f"{lead} · {model_label(model_name)}" if model_name else lead


def _fence(text: str, lang: str = "text") -> str:
    """A fenced block that no backtick run inside `text` can close early."""
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def preview_markdown(preview: Any | None) -> str:
    """The inspector: exactly what the model receives with the next message."""
    if preview is None:
        return tr("insp_empty")
    turns = list(preview.turns or [])
    chars = getattr(preview, "chars", None)
    budget = getattr(preview, "budget", None)
    lines = []
    if chars is not None and budget:
        lines.append(tr("insp_memory", chars=compact_number(chars), budget=compact_number(budget)))
    system = getattr(preview, "system_instruction", None)
    # A roundtable: every speaker receives its own system text, shown below; the shared
    # recent turns follow once.
    members = list(getattr(preview, "members", None) or [])
    if members:
        lines.append(members_markdown(members))
    elif system:
        # The exact system text: the persona's prompt plus the memory note with the summary.
        lines.append(tr("insp_system_instruction"))
        lines.append(_fence(system))
    else:
        lines.append(tr("insp_system_prompt"))
        lines.append(_fence(preview.system_prompt or ""))
        lines.append(tr("insp_summary"))
        lines.append(_fence(preview.summary) if preview.summary else tr("insp_none_yet"))
    recalled = list(getattr(preview, "recalled", None) or [])
    if recalled:
        lines.append(count("insp_recalled", len(recalled)))
    waiting = getattr(preview, "not_shown", 0) or 0
    if waiting:
        lines.append(tr("insp_waiting", n=waiting))
    lines.append(tr("insp_recent", n=len(turns)))
    if not turns:
        lines.append(tr("insp_fresh"))
    for turn in turns:
        role = turn.get("role", "?") if isinstance(turn, dict) else getattr(turn, "role", "?")
        content = (
            turn.get("content", "") if isinstance(turn, dict) else getattr(turn, "content", "")
        )
        lines.append(f"**{tr('insp_' + role) if role in ('user', 'assistant') else role}**")
        lines.append(_fence(str(content)))
    return "\n\n".join(lines)


def reset_note(result: Any) -> str:
    """What a reset cleared, as one sentence."""
    turns = getattr(result, "turns", 0) or 0
    summaries = getattr(result, "summaries", 0) or 0
    chars = getattr(result, "chars", 0) or 0
    pinned = getattr(result, "pinned", 0) or 0
    if not turns and not summaries and not pinned:
        return tr("reset_empty")
    what = count("messages", turns)
    if summaries:
        what = tr("reset_both", messages=what, summaries=count("summaries", summaries))
    if pinned:
        what = tr("reset_pins", what=what, pins=count("pins", pinned))
    if getattr(result, "title_cleared", False):
        what = tr("reset_title", what=what)
    return tr("reset_done", what=what, chars=f"{chars:,}")


ROUNDTABLE_AVATAR = "👥"


def shown(record: Any, field: str = "display_name") -> str:
    """A persona's, roundtable's or speaker's `field` as this page's language shows it (its
    YAML's `i18n` entry for that language, else its own text)."""
    return record.shown(field, current_language())


def members_markdown(members: Sequence[Any]) -> str:
    """The inspector's part for a roundtable: what each speaker receives, in order."""
    lines = [tr("insp_speakers", n=len(members))]
    for n, member in enumerate(members, 1):
        speaker = member.speaker
        veto = tr("insp_vetoes") if member.veto is not None and speaker.role != "chair" else ""
        who = plain_markdown(f"{speaker.avatar or '💬'} {shown(speaker)}")
        lines.append(f"##### {n}. {who}{veto}")
        lines.append(_fence(member.system_instruction))
        lines.append(tr("insp_user_message"))
        lines.append(_fence(member.user_message))
    return "\n\n".join(lines)


def persona_label(persona: Any) -> str:
    return f"{clip_avatar(persona.avatar)} {shown(persona)}"


_LOCATED = re.compile(r"^line (\d+), column (\d+): ")


def located(problem: str) -> str:
    """A YAML problem in the page's language: its place ("第 4 行第 3 欄："), then what is
    wrong (ui/yaml_problems.py translates the validators' sentences for a Chinese page)."""
    found = _LOCATED.match(problem)
    rest = problem[found.end() :] if found else problem
    if current_language() == CHINESE:
        rest = yaml_problems.translate(rest)
    if not found:
        return rest
    line, column = found.groups()
    return tr("problem_at", line=line, column=column) + rest


def problems_markdown(problems: Iterable[str], saved: bool | None = None) -> str:
    """Persona problems as a list; `saved=False` adds that the version in use is unchanged."""
    head = tr("problems_not_saved") if saved is False else tr("problems")
    items = "\n".join(f"- {plain_markdown(located(p))}" for p in problems)
    return f"{head}\n\n{items}"


def marked_html(text: str) -> str:
    """Store text with `SEARCH_MARK`-wrapped matches -> HTML: everything escaped, matches in
    <mark>. Stray marker characters are dropped."""
    escaped = _MARKED.sub(r"<mark>\1</mark>", html.escape(text, quote=True))
    return escaped.replace(SEARCH_MARK[0], "").replace(SEARCH_MARK[1], "")


def search_result(result: Any, now: float | None = None) -> str:
    """One search result in the sidebar, as HTML: the conversation's title (matches marked),
    the newest matching message's snippet, when, and how many of its messages match.

    `result` is a facade `SearchResult` whose title and snippets are marked with `SEARCH_MARK`;
    user text is escaped here, so the HTML is safe to render.
    """
    conversation, hits, persona = result.conversation, result.hits, result.persona
    board = (conversation.persona_id or "").startswith("roundtable:")
    avatar = (persona.avatar if persona else None) or (ROUNDTABLE_AVATAR if board else "💬")
    title = marked_html(result.title) if result.title else html.escape(tr("untitled"))
    parts = [f'<div class="hit-title">{html.escape(clip_avatar(avatar))} {title}</div>']
    if hits:
        assistant_name = shown(persona) if persona else tr("hit_assistant")
        who = {"user": tr("hit_you"), "assistant": assistant_name, "summary": tr("hit_summary")}
        newest = hits[0]
        # A roundtable reply is labelled with its speaker (its id when that persona is gone).
        said_by = getattr(newest, "speaker", None)
        if newest.role == "assistant" and said_by:
            info = (getattr(result, "speakers", None) or {}).get(said_by)
            who["assistant"] = shown(info) if info else said_by
        speaker = html.escape(who.get(newest.role, newest.role))
        parts.append(
            f'<div class="hit-snippet"><span class="hit-who">{speaker}:</span> '
            f"{marked_html(newest.snippet)}</div>"
        )
    meta = [relative_time(conversation.last_active_at or conversation.created_at, now)]
    if len(hits) > 1:
        meta.append(tr("hit_matches", n=len(hits)))
    elif not hits:
        meta.append(tr("hit_title"))
    parts.append(f'<div class="hit-meta">{html.escape(" · ".join(m for m in meta if m))}</div>')
    return f'<div class="hit">{"".join(parts)}</div>'


def search_status(found: int, searchable: bool = True, available: bool = True) -> str:
    """The line above the search results."""
    if not available:
        return tr("search_unavailable")
    if not found:
        return tr("search_none") + ("" if searchable else tr("search_hint"))
    return count("search_found", found)


# ---- the memory panel ----------------------------------------------------------------------

TOOL_TITLE = "🛠️ Used a tool: {name}"
PLOT_PARTS = ("persona", "pinned", "summary", "recalled", "recent")


def tool_message(note: str) -> dict[str, Any]:
    """A tool note as a collapsed "used a tool" message (Gradio message metadata)."""
    body = note.removeprefix("Tool note: ")
    name = body.split("(", 1)[0] or "tool"
    return {
        "role": "assistant",
        "content": message_markdown(body),  # its arguments are the model's text: as typed
        "metadata": {"title": TOOL_TITLE.format(name=name), "status": "done"},
    }


def summary_note(summary: Any | None) -> str:
    """Who wrote the summary the model gets, and what it covers."""
    if summary is None:
        return tr("mp_no_summary")
    what = count("mp_covers", summary.covers_count or 0)
    return tr("mp_edited" if summary.edited else "mp_written", what=what)


def fact_choices(facts: Iterable[Any]) -> list[tuple[str, int]]:
    return [(f.content, f.id) for f in facts]


def pins_note(pinned: Sequence[Any], about_me: Sequence[Any], about_me_on: bool, panel: Any) -> str:
    """How much of the memory budget pinned facts take, and whether "about me" is sent."""
    sent = sum(len(f.content) for f in pinned)
    if about_me_on:
        sent += sum(len(f.content) for f in about_me)
    lines = [
        tr(
            "mp_pins_used",
            n=len(pinned),
            sent=compact_number(sent),
            pin_budget=compact_number(panel.pin_budget),
            budget=compact_number(panel.budget),
        )
    ]
    if about_me_on:
        lines.append(count("mp_about_on", len(about_me)))
    elif about_me:
        lines.append(count("mp_about_off", len(about_me)))
    return "  \n".join(lines)


def recall_markdown(recalled: Sequence[dict[str, str]], draft: str | None) -> str:
    """The older turns recall would bring back for the draft."""
    if not (draft or "").strip():
        return tr("mp_type_draft")
    if not recalled:
        return tr("mp_nothing_older")
    lines = [count("mp_come_back", len(recalled))]
    for turn in recalled:
        who = tr("hit_you") if turn["role"] == "user" else tr("hit_assistant")
        text = " ".join(turn["content"].split())
        lines.append(f"- **{who}:** {html.escape(text[:300])}")
    return "\n".join(lines)


def plot_frames(rows: Sequence[Any]) -> tuple[Any, Any, Any]:
    """The panel's plots from stored metrics (numbers, never text), one point per model call
    since the last reset: characters by part and the memory budget they share (the persona's
    prompt comes on top of it), tokens, and seconds; the lines named in the page's language."""
    import pandas as pd

    parts, tokens, latency = [], [], []
    for turn, row in enumerate(rows, start=1):
        m = row.metrics
        for part in (*PLOT_PARTS, "budget"):  # the memory budget is a line of its own
            value = getattr(m, f"{part}_chars")
            if value is not None:
                parts.append({"turn": turn, "part": tr(f"part_{part}"), "chars": value})
        for kind, value in (("input", m.input_tokens), ("output", m.output_tokens)):
            if value is not None:
                tokens.append({"turn": turn, "kind": tr(f"kind_{kind}"), "tokens": value})
        if m.latency_ms is not None:
            latency.append({"turn": turn, "seconds": m.latency_ms / 1000})
    return (
        pd.DataFrame(parts, columns=["turn", "part", "chars"]),
        pd.DataFrame(tokens, columns=["turn", "kind", "tokens"]),
        pd.DataFrame(latency, columns=["turn", "seconds"]),
    )


def reset_question(status: Any, title: str | None) -> str:
    """The Reset confirmation: what will go."""
    gone = [count("messages", status.total)]
    if status.summaries:
        gone.append(tr("reset_the_summary"))
    own_pins = status.pinned - (status.about_me_pins if status.about_me_on else 0)
    if own_pins:
        gone.append(count("pins", own_pins))
    if title:
        gone.append(tr("reset_the_title", title=plain_markdown(title)))
    what = tr("reset_list").join(gone[:-1]) + (tr("reset_and") if len(gone) > 1 else "")
    return tr("reset_question", what=what + gone[-1])
