"""A roundtable in a real browser: Playwright drives Debian's Chromium against `python app.py`
answering through the fake Gemini server, whose replies name the persona that was asked (read
from the system instruction the real google-genai client sent). Also takes the README's
screenshot of a roundtable in 繁體中文 (docs/roundtable-zh-tw.png)."""

from __future__ import annotations

import re

import pytest
import yaml
from fake_gemini import FakeGemini, Recorded, Reply
from test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    WAIT_MS,
    AppServer,
    _no_browser_reason,
    badge,
    bot_messages,
    expect,
    loaded,
    turn_over,
)

pytestmark = pytest.mark.browser

SEATS = {
    "Persona: Sales Director": ("Sales", "這是一張策略性訂單，耐吉是我們最大的客戶。"),
    "Persona: Production Manager": ("Production", "二號產線三月有產能，交期約六週。"),
    "Persona: Finance Controller": (
        "Finance",
        "毛利 12%，低於 15% 的門檻。\n{label}: 毛利 12% 低於 15%，需調價 4% 以上。",
    ),
    "Persona: 總經理": ("GM", "財務長的否決成立，本案暫緩。\n總經理決策: 暫緩，請業務重新議價。"),
}
NIKE_ZH = "我們該以目前的報價接耐吉 20,000 雙的訂單嗎？"
NIKE_EN = "Should we take the Nike order at the current price?"


# Finance starts its last line with the label its instruction names, as a model would.
LABEL = re.compile(r'The last line of your answer must start with "([^"]+):"')


def seat_reply(request: Recorded) -> Reply:
    """Answer as the persona the system instruction names, in Chinese, chunk by chunk."""
    system = request.system_text or ""
    for marker, (_, text) in SEATS.items():
        if system.startswith(marker):
            told = LABEL.search(system)
            text = text.replace("{label}", told.group(1) if told else "(no veto label)")
            return Reply(chunks=[text[i : i + 6] for i in range(0, len(text), 6)], chunk_delay=0.01)
    return Reply(chunks=["(no seat)"])


@pytest.fixture(scope="module", autouse=True)
def _browser_available():
    reason = _no_browser_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def fake():
    with FakeGemini(default=seat_reply) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory, fake):
    tmp = tmp_path_factory.mktemp("mnemo-roundtable")
    app_server = AppServer(tmp / "data", fake.url, tmp / "app.log")
    app_server.start()
    yield app_server
    app_server.stop()
    assert "Traceback" not in app_server.log(), app_server.log()[-4000:]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser, server, locale: str = "en-US"):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale=locale)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(server.url)
    loaded(page)
    return context, page


def pick_roundtable(page, zh: bool = False) -> None:
    page.locator("#chat-persona input").click()
    board = "ERP 決策委員會" if zh else "ERP decision board"
    page.get_by_role("option", name=re.compile(board)).click()
    # The badge lists the members, named as the page's language shows them.
    expect(badge(page)).to_contain_text("🧭 總經理" if zh else "🧭 General Manager")


def ask(page, text: str, saved: str = "Remembering 5 messages") -> None:
    box = page.locator("#chat-input textarea")
    box.fill(text)
    box.press("Enter")
    # The chair's bubble, complete (its conclusion line), and the turn saved.
    expect(bot_messages(page).last).to_contain_text("總經理決策", timeout=WAIT_MS * 2)
    expect(badge(page)).to_contain_text(saved, timeout=WAIT_MS)
    turn_over(page)


def test_a_roundtable_runs_end_to_end_and_reopens_as_it_was(browser, server, fake):
    context, page = open_page(browser, server)
    try:
        pick_roundtable(page)
        expect(badge(page)).to_contain_text("Sales Director → 🏭 Production Manager")
        before = len(fake.of("streamGenerateContent"))
        ask(page, NIKE_EN)
        requests = fake.of("streamGenerateContent")[before:]
        assert [r.system_text.split("\n")[0] for r in requests] == list(SEATS)
        assert 'must start with "FINANCE VETO:"' in requests[2].system_text
        assert "The veto stands" in requests[3].system_text
        assert SEATS["Persona: Sales Director"][1] in requests[1].turns[-1][1]

        bubbles = bot_messages(page)
        expect(bubbles).to_have_count(5)  # the greeting, then one bubble per speaker
        names = ["📈 Sales Director", "🏭 Production Manager", "💰 Finance Controller"]
        names.append("🧭 General Manager")
        for index, name in enumerate(names, start=1):
            expect(bubbles.nth(index)).to_contain_text(name)
        expect(bubbles.nth(3)).to_contain_text("FINANCE VETO")

        page.reload()  # reopening shows the bubbles as they were
        expect(badge(page)).to_contain_text("Remembering 5 messages")
        expect(bot_messages(page)).to_have_count(5)
        for index, name in enumerate(names, start=1):
            expect(bot_messages(page).nth(index)).to_contain_text(name)
    finally:
        context.close()


def test_a_zh_tw_page_asking_in_english_gets_the_chinese_veto_label(browser, server, fake):
    """The page's language reaches the turn: asked in English from a zh-TW page, finance is
    told to use its Chinese label, and its bubble shows it."""
    context, page = open_page(browser, server, locale="zh-TW")
    try:
        page.locator("#new-chat").click()
        pick_roundtable(page, zh=True)
        before = len(fake.of("streamGenerateContent"))
        ask(page, NIKE_EN, saved="記得 5 則訊息")
        finance = fake.of("streamGenerateContent")[before:][2]
        assert 'must start with "財務否決:"' in finance.system_text
        expect(bot_messages(page).nth(3)).to_contain_text("財務否決: 毛利 12%")
        expect(bot_messages(page).nth(3)).not_to_contain_text("FINANCE VETO")
    finally:
        context.close()


# What a weak model (the offline SmolLM2) writes: no veto, and the chair approves.
IGNORING = [
    "Sales: take it.",
    "Production: we can build it.",
    "Finance: looks fine to me.",
    "總經理決策: approved.",
]
VETO_LINES = {
    "en-US": (
        "⛔ FINANCE VETO: Nike: 12% < 15%, below the 15% threshold — decided by the "
        "business-metrics table, not by the model.",
        "⛔ FINANCE VETO stands (Finance Controller: Nike: 12% < 15%, threshold 15%): the "
        "proposal is not approved.",
    ),
    "zh-TW": (
        "⛔ 財務否決：耐吉: 12% < 15%，低於門檻 15% — 由業務指標表判定，不是模型的意見。",
        "⛔ 財務否決成立（財務長：耐吉: 12% < 15%，門檻 15%）：提案不予核准。",
    ),
}


@pytest.mark.parametrize("locale", ["en-US", "zh-TW"])
def test_the_veto_line_stays_on_the_bubbles_after_a_reload(browser, server, fake, locale):
    """Finance never writes its veto and the chair approves, as SmolLM2 does: Mnemo's ⛔ line
    on both bubbles says the veto anyway, in the page's language, and is still there after a
    reload (stored with the replies, not a toast)."""
    zh = locale == "zh-TW"
    context, page = open_page(browser, server, locale=locale)
    try:
        page.locator("#new-chat").click()
        pick_roundtable(page, zh=zh)
        for text in IGNORING:
            fake.reply(text)
        ask(page, NIKE_ZH if zh else NIKE_EN, saved="記得 5 則訊息" if zh else "Remembering 5")
        member, chair = VETO_LINES[locale]
        for reloaded in (False, True):
            if reloaded:
                page.reload()
                loaded(page)
            bubbles = bot_messages(page)
            expect(bubbles).to_have_count(5)
            expect(bubbles.nth(3)).to_contain_text(IGNORING[2])
            expect(bubbles.nth(3)).to_contain_text(member)
            expect(bubbles.nth(4)).to_contain_text(IGNORING[3])
            expect(bubbles.nth(4)).to_contain_text(chair)
            for index in (1, 2):
                expect(bubbles.nth(index)).not_to_contain_text("⛔")
    finally:
        context.close()


def test_screenshot_of_a_roundtable_in_traditional_chinese(browser, server):
    """docs/roundtable-zh-tw.png: a real roundtable run, as a zh-TW browser shows it."""
    context, page = open_page(browser, server, locale="zh-TW")
    try:
        page.locator("#new-chat").click()
        pick_roundtable(page, zh=True)
        ask(page, NIKE_ZH, saved="記得 5 則訊息")
        # The veto toast (in Chinese) would cover the last bubble: wait until it has closed
        # itself (clicking each close button raced the toast closing on its own).
        expect(page.locator("[data-testid=toast-body]")).to_have_count(0)
        page.mouse.move(900, 990)
        page.wait_for_timeout(500)
        out = ROOT / "docs" / "roundtable-zh-tw.png"
        page.screenshot(path=str(out))
        assert out.stat().st_size > 20_000
    finally:
        context.close()


MAIN_SCREEN_KEYS = [
    "brand",
    "new_chat",
    "search",
    "manage",
    "tokens",
    "answering",
    "tab_chat",
    "tab_personas",
    "reset",
    "inspector",
    "input_placeholder",
]


def _words(label: str) -> str:
    """A label's English words, without emoji, markdown or punctuation."""
    return " ".join(re.findall(r"[A-Za-z][A-Za-z'’]+", label.replace("## 🧠 Mnemo\n", "")))


def test_a_zh_tw_browser_gets_the_main_screen_in_traditional_chinese(browser, server):
    from ui.i18n import EN, ZH_TW

    context, page = open_page(browser, server, locale="zh-TW")
    try:
        expect(page.locator("#new-chat")).to_have_text(ZH_TW["new_chat"])
        expect(page.locator("#chat-tab-button")).to_contain_text("對話")
        shown = page.locator("body").inner_text()
        shown += " ".join(
            page.locator("input, textarea").evaluate_all("els => els.map(e => e.placeholder)")
        )
        for key in MAIN_SCREEN_KEYS:
            english = _words(EN[key])
            assert english and english not in shown, (key, english)
            assert ZH_TW[key].replace("## 🧠 Mnemo\n", "") in shown, key
    finally:
        context.close()


# Shown as written on a zh-TW screen: names. The app's and the model's, key names in the
# input's hint, and the names the data gives a zh-TW page — personas and roundtables as their
# `zh-TW` entries name them ("ERP 決策委員會"). The ERP board's English names ("Sales
# Director") are not among them, nor finance's English veto label: a zh-TW page must show its
# Chinese ones (the fake model repeats the label finance was told to use).
NAMES = {"Mnemo", "Gemini", "Flash", "API", "Enter", "Shift"}


def data_names() -> set[str]:
    names = set()
    for path in [*(ROOT / "personas").glob("*.yaml"), *(ROOT / "personas").glob("roundtables/*")]:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        shown = (doc.get("i18n") or {}).get("zh-TW", {}).get("display_name")
        names |= set(re.findall(r"[A-Za-z]+", shown or doc.get("display_name") or ""))
    return names


ZH_SEATS = ["📈 業務總監", "🏭 生產經理", "💰 財務長", "🧭 總經理"]


# Text a person can see: text nodes that take up room and have a size (the toast's level word,
# which app.css shrinks to nothing in favour of "Mnemo", and screen-reader-only labels do not).
VISIBLE_TEXT = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!el || !node.textContent.trim()) continue;
    const style = getComputedStyle(el), box = el.getBoundingClientRect();
    if (style.visibility === "hidden" || parseFloat(style.fontSize) === 0) continue;
    if (box.width <= 1 || box.height <= 1 || !el.getClientRects().length) continue;
    out.push(node.textContent);
  }
  // Text that CSS writes (content: "..."), on elements that are shown.
  for (const el of document.body.querySelectorAll("*")) {
    if (!el.getClientRects().length) continue;
    for (const part of ["::before", "::after"]) {
      const style = getComputedStyle(el, part);
      const text = style.content;
      if (text && text.startsWith('"') && parseFloat(style.fontSize) > 0) out.push(text);
    }
  }
  return out.join(" ");
}"""


def english_on_screen(page) -> set[str]:
    """The English words a person sees: visible text and the placeholders of visible boxes."""
    shown = page.evaluate(VISIBLE_TEXT)
    shown += " " + " ".join(
        page.locator("input:visible, textarea:visible").evaluate_all(
            "els => els.map(e => e.placeholder || '')"
        )
    )
    words = set(re.findall(r"[A-Za-z][A-Za-z'’]+", shown))
    return words - NAMES - data_names()


def test_a_zh_tw_browser_sees_no_english_after_a_roundtable(browser, server):
    """The whole main screen — labels, badge, sidebar rows, greetings, the members line,
    bubbles, notices — after a real roundtable turn and a rename that fails."""
    context, page = open_page(browser, server, locale="zh-TW")
    try:
        page.locator("#new-chat").click()
        expect(badge(page)).to_contain_text("還沒有記住任何內容")
        # A first visit: no conversations yet, the default persona's greeting.
        expect(page.locator("#conversations")).to_contain_text("", timeout=WAIT_MS)
        assert english_on_screen(page) == set(), english_on_screen(page)
        pick_roundtable(page, zh=True)
        expect(bot_messages(page).first).to_contain_text("每位成員依序發言")
        expect(badge(page)).to_contain_text("ERP 決策委員會: " + " → ".join(ZH_SEATS))
        # The rename box opens before the turn: text typed into a box its accordion has just
        # mounted can be replaced by the value Gradio is still filling in (see test_browser's
        # test_new_chat_switch_rename_and_delete).
        page.locator("#manage").get_by_text("重新命名 · 記憶 · 刪除").click()
        ask(page, NIKE_ZH, saved="記得 5 則訊息")
        expect(page.locator(".toast-body").last).to_contain_text("財務長必須否決")
        expect(badge(page)).to_contain_text("字元")
        for index, name in enumerate(ZH_SEATS, start=1):  # each bubble opens with its name
            expect(bot_messages(page).nth(index)).to_contain_text(name)
        # A rename the store refuses (too long) says why, in Chinese.
        name = page.locator("#rename-box input, #rename-box textarea").first
        expect(name).not_to_have_value("")  # the turn has named the conversation
        name.fill("名" * 300)
        page.locator("#rename-btn").click()
        toast = page.locator(".toast-body").last
        expect(toast).to_contain_text("無法重新命名對話")
        expect(toast).to_contain_text("名稱不能使用")
        assert english_on_screen(page) == set(), english_on_screen(page)
        # The same screen in English has English words: the scan can see them.
        english, en_page = open_page(browser, server, locale="en-US")
        try:
            expect(badge(en_page)).to_contain_text("Nothing remembered yet")
            # ("conversations": the empty sidebar's line, which CSS writes)
            assert {"Nothing", "remembered", "Answering", "conversations"} <= english_on_screen(
                en_page
            )
        finally:
            english.close()
    finally:
        context.close()


def test_the_language_switch_rewrites_what_the_server_wrote(browser, server):
    """Gradio's Settings switch turns a zh-TW page to English: the labels (the frontend) and the
    badge and greeting (the server, told by the page) follow; another tab stays in Chinese."""
    context, page = open_page(browser, server, locale="zh-TW")
    try:
        page.locator("#new-chat").click()
        expect(badge(page)).to_contain_text("還沒有記住任何內容")
        other = context.new_page()  # a second tab of the same browser
        other.goto(server.url)
        loaded(other)
        expect(badge(other)).to_contain_text("還沒有記住任何內容")
        page.get_by_text("設定", exact=True).click()
        expect(page.get_by_text("語言", exact=True)).to_be_visible()
        # Gradio's language picker shows its value in an input: open it, pick English.
        page.evaluate(
            """() => { const box = [...document.querySelectorAll("input")]
                 .find(e => e.value === "繁體中文"); box.focus(); box.click(); }"""
        )
        page.get_by_role("option", name="English").click()
        page.keyboard.press("Escape")
        expect(page.locator("#new-chat")).to_have_text("➕ New chat")
        expect(badge(page)).to_contain_text("Nothing remembered yet")
        other.locator("#new-chat").click()
        expect(badge(other)).to_contain_text("還沒有記住任何內容")
    finally:
        context.close()


def switch_language(page, shown: str, to: str) -> None:
    """Gradio's Settings switch: from the language shown (`shown`, as its picker names it) to
    `to`."""
    chinese = shown == "繁體中文"
    page.get_by_text("設定" if chinese else "Settings", exact=True).click()
    expect(page.get_by_role("heading", name="語言" if chinese else "Language")).to_be_visible()
    page.evaluate(
        """(shown) => { const box = [...document.querySelectorAll("input")]
             .find(e => e.value === shown); box.focus(); box.click(); }""",
        shown,
    )
    page.get_by_role("option", name=to).click()
    page.keyboard.press("Escape")  # closes the picker's list
    dialog = page.locator("[role=dialog][aria-modal=true]")
    dialog.locator("button").first.click()  # the dialog's close button (an ✕ drawn in SVG)
    expect(dialog).to_have_count(0)


def test_two_browsers_switching_languages_keep_their_own(browser, server):
    """The language is per page session, not per process: a zh-TW browser switched to English
    and an English one switched to 繁體中文 each keep theirs — labels (the frontend) and what the
    server writes afterwards (a new chat's badge and greeting, the board's names)."""
    zh_context, zh_page = open_page(browser, server, locale="zh-TW")
    en_context, en_page = open_page(browser, server, locale="en-US")
    try:
        switch_language(zh_page, "繁體中文", "English")
        expect(zh_page.locator("#new-chat")).to_have_text("➕ New chat")
        switch_language(en_page, "English", "繁體中文")
        expect(en_page.locator("#new-chat")).to_have_text("➕ 新對話")
        # Each switched after the other: the server writes for each in its own language.
        for page in (zh_page, en_page):
            page.locator("#new-chat").click()
        expect(badge(zh_page)).to_contain_text("Nothing remembered yet")
        expect(badge(en_page)).to_contain_text("還沒有記住任何內容")
        pick_roundtable(zh_page)
        pick_roundtable(en_page, zh=True)
        expect(bot_messages(zh_page).first).to_contain_text("Sales Director")
        expect(bot_messages(en_page).first).to_contain_text("業務總監")
        expect(zh_page.locator("#new-chat")).to_have_text("➕ New chat")
        expect(en_page.locator("#new-chat")).to_have_text("➕ 新對話")
    finally:
        zh_context.close()
        en_context.close()
