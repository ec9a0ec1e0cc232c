"""The memory panel in a real browser (issue 16): pinned facts, the user's summary, export and
import between two browsers, and a reset that leaves nothing to find. Same set-up as
tests/test_browser.py: `python app.py` in a subprocess, the fake Gemini server in this process,
Playwright in Debian's Chromium; each test's browser context is its own owner."""

# ruff: noqa: F811 (the fixtures imported from test_browser are the tests' parameters)
from __future__ import annotations

import json
import re
import threading

import pytest
from test_browser import (  # noqa: F401 - its fixtures, used here by name
    _browser_available,
    badge,
    bot_messages,
    browser,
    context,
    expect,
    fake,
    open_app,
    send,
    server,
    turn_over,
    user_messages,
)

pytestmark = pytest.mark.browser

FIRST = "My passport number is K7734 and I fly to Lisbon on 3 May."


def long_export(messages: int) -> str:
    """An export holding one conversation of `messages` alternating messages."""
    turns = [{"role": "user", "content": FIRST, "created_at": 1_764_000_000}]
    for i in range(1, messages):
        role = "assistant" if i % 2 else "user"
        turns.append(
            {"role": role, "content": f"{role} message {i}", "created_at": 1_764_000_000 + i}
        )
    return json.dumps(
        {
            "format": "mnemo-export",
            "version": 1,
            "conversations": [
                {
                    "title": "Trip planning",
                    "persona": {"id": "assistant", "version": None},
                    "created_at": 1_764_000_000,
                    "turns": turns,
                }
            ],
        }
    )


def sent(fake):
    """The last chat request (the summarizer's own requests are generateContent)."""
    return fake.of("streamGenerateContent")[-1]


def send_any(page, text: str, pattern: str) -> None:
    """Send, and wait until the badge matches `pattern` (a summary may land any moment)."""
    box = page.locator("#chat-input textarea")
    box.fill(text)
    box.press("Enter")
    expect(badge(page)).to_contain_text(re.compile(pattern))
    turn_over(page)


def open_panel(page):
    page.locator("#memory-panel").click()
    expect(page.locator("#pinned-facts")).to_be_visible()


def import_text(page, tmp_path, text: str, name: str = "export.json") -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    page.locator("#import-file input[type=file], input[type=file]").first.set_input_files(str(path))


def test_a_pinned_fact_survives_summarization_and_goes_when_deleted(
    context, server, fake, tmp_path
):
    page = open_app(context, server)
    open_panel(page)
    import_text(page, tmp_path, long_export(120))  # past summarize_at (101)
    expect(badge(page)).to_contain_text("Remembering 120 messages")
    page.locator("#new-fact textarea").fill("I'm vegetarian")
    page.locator("#pin-fact").click()
    expect(page.locator("#pinned-facts")).to_contain_text("I'm vegetarian")
    expect(badge(page)).to_contain_text("📌 1 pinned")

    # 122 active messages: after this reply the oldest 102 fold into a summary.
    send_any(page, "What should I cook tonight?", r"Remembering (122|20) messages")
    send(page, "And for dessert?", remembered=22)
    system = sent(fake).system_text
    assert "Summary of the earlier conversation" in system
    assert "- I'm vegetarian" in system
    assert ("user", "user message 2") not in sent(fake).turns  # folded away

    page.locator("#pinned-facts label", has_text="I'm vegetarian").click()
    page.locator("#unpin").click()
    expect(page.locator("#pinned-facts")).not_to_contain_text("I'm vegetarian")
    send(page, "Any other ideas?", remembered=24)
    assert "I'm vegetarian" not in sent(fake).system_text

    # The summary, edited: the next request carries the edit, marked as the user's.
    expect(page.locator("#summary-note")).to_contain_text("Written by the summarizer")
    page.locator("#summary-text textarea").fill("The user flies to Lisbon on 3 May.")
    page.locator("#summary-save").click()
    expect(page.locator("#summary-note")).to_contain_text("Edited by you")
    expect(badge(page)).to_contain_text("edited by you")
    # The panel shows what recall would bring back for the draft being typed.
    draft = page.locator("#chat-input textarea")
    draft.fill("what was my passport number")
    draft.press_sequentially("?")  # Gradio's input event follows typing, not fill()
    expect(page.locator("#recall-preview")).to_contain_text("K7734")
    send(page, "When do I fly?", remembered=26)
    system = sent(fake).system_text
    start = system.find("Summary of")
    assert "(written by the user):\nThe user flies to Lisbon on 3 May." in system, system[
        start : start + 300
    ]


def test_export_then_import_in_another_browser_gives_the_same_memory(
    browser, server, fake, tmp_path
):
    first = browser.new_context(viewport={"width": 1400, "height": 900})
    second = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = open_app(first, server)
        send(page, "Our gross-margin red line is 15%", remembered=2)
        send(page, "The client is Kestrel", remembered=4)
        open_panel(page)
        page.locator("#new-fact textarea").fill("Kestrel pays late")
        page.locator("#pin-fact").click()
        expect(page.locator("#pinned-facts")).to_contain_text("Kestrel pays late")
        page.locator("#export-one").click()
        link = page.locator("#export-file a").first
        expect(link).to_be_visible()
        with page.expect_download() as download:
            link.click()
        exported = tmp_path / "exported.json"
        download.value.save_as(exported)
        assert json.loads(exported.read_text())["conversations"][0]["pinned"]

        other = open_app(second, server)
        open_panel(other)
        import_text(other, tmp_path, exported.read_text(), "from-first.json")
        expect(badge(other)).to_contain_text("Remembering 4 messages")
        expect(user_messages(other).first).to_contain_text("red line is 15%")

        send(page, "What is our red line?", remembered=6)
        mine = sent(fake)
        send(other, "What is our red line?", remembered=6)
        theirs = sent(fake)
        assert (theirs.system_text, theirs.turns) == (mine.system_text, mine.turns)
        assert "- Kestrel pays late" in theirs.system_text
    finally:
        first.close()
        second.close()


def test_reset_leaves_nothing_to_find(context, server, fake):
    page = open_app(context, server)
    send(page, "Zanzibar itinerary for the honeymoon", remembered=2)
    open_panel(page)
    page.locator("#new-fact textarea").fill("Zanzibar in June")
    page.locator("#pin-fact").click()
    expect(page.locator("#pinned-facts")).to_contain_text("Zanzibar in June")
    search = page.locator("#search-box input")
    search.fill("zanzibar")
    expect(page.locator("#search-results .gallery-item")).to_have_count(1)
    search.fill("")

    page.locator("#reset-btn").click()
    question = page.locator("#reset-confirm-text")
    expect(question).to_contain_text("2 messages")
    expect(question).to_contain_text("1 pinned fact")
    expect(question).to_contain_text("Zanzibar itinerary")  # the title goes too
    page.locator("#reset-yes").click()
    expect(badge(page)).to_contain_text("Nothing remembered yet")
    expect(page.locator("#pinned-facts")).not_to_contain_text("Zanzibar")
    search.fill("zanzibar")
    expect(page.locator("#search-status")).to_contain_text("No matches")
    expect(page.locator("#search-results .gallery-item")).to_have_count(0)


def test_pinning_about_me_unticks_the_box_so_the_next_fact_stays_here(context, server):
    """Issue 16's report: "About me" stayed ticked after a pin, so the next fact typed went to
    every conversation too."""
    page = open_app(context, server)
    send(page, "Planning the Kestrel visit", remembered=2)
    open_panel(page)
    about_me = page.locator("#pin-about-me input")
    about_me.check()
    page.locator("#new-fact textarea").fill("I live in Porto")
    page.locator("#pin-fact").click()
    expect(page.locator("#about-me-facts")).to_contain_text("I live in Porto")
    expect(about_me).not_to_be_checked()
    expect(page.locator("#new-fact textarea")).to_have_value("")
    page.locator("#new-fact textarea").fill("Kestrel visit on Friday")
    page.locator("#pin-fact").click()
    expect(page.locator("#pinned-facts")).to_contain_text("Kestrel visit on Friday")
    expect(page.locator("#about-me-facts")).not_to_contain_text("Kestrel visit")


# Where each plot's title and legend end up, against the plot's own box (Vega draws an SVG).
PLOT_BOXES = """(id) => {
  const plot = document.getElementById(id), box = plot.getBoundingClientRect();
  const texts = [...plot.querySelectorAll("svg text")].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, left: r.left - box.left, right: r.right - box.left};
  });
  return {width: box.width, texts};
}"""


# The x axis's tick labels, as Vega drew them.
X_TICKS = """(id) => {
  const axis = [...document.getElementById(id).querySelectorAll("g[aria-label]")]
    .find(g => (g.getAttribute("aria-label") || "").startsWith("X-axis"));
  return axis ? [...axis.querySelectorAll(".role-axis-label text")].map(t => t.textContent) : null;
}"""


def test_until_two_replies_the_panel_says_in_words_what_its_plots_will_show(context, server):
    """The plots were empty axes until a reply came, and after one reply a lone point Vega's
    line does not draw (both looked broken): a note says what they will show, then the first
    reply's figures, and the lines are drawn from the second reply on."""
    page = open_app(context, server)
    open_panel(page)
    note = page.locator("#plots-note")
    plot_ids = ("plot-parts", "plot-tokens", "plot-latency")
    expect(note).to_contain_text("No replies yet")
    for plot_id in plot_ids:
        expect(page.locator(f"#{plot_id}")).to_be_hidden()
    send(page, "Hello there", remembered=2)
    expect(note).to_contain_text("One reply so far: it was sent")
    expect(note).to_contain_text("recent 11")
    for plot_id in plot_ids:
        expect(page.locator(f"#{plot_id}")).to_be_hidden()
    send(page, "And again", remembered=4)
    for plot_id in plot_ids:
        expect(page.locator(f"#{plot_id}")).to_be_visible()
    expect(note).to_have_text("")


def test_the_plots_titles_and_legends_fit_their_plots(context, server):
    """Issue 16's report: the first plot's title was cut off (and its six-line legend too) in a
    third of the row. And the x axis counts whole turns: with two turns Vega's own ticks were
    1, 1.5, 2 (drawn "1, 2, 2" with a whole-number format alone); it now runs to turn 4."""
    page = open_app(context, server)
    send(page, "Hello there", remembered=2)
    send(page, "And again", remembered=4)
    open_panel(page)
    titles = {
        "plot-parts": "Characters sent, by part",
        "plot-tokens": "Tokens per reply",
        "plot-latency": "Seconds per reply",
    }
    for plot_id, title in titles.items():
        plot = page.locator(f"#{plot_id}")
        plot.scroll_into_view_if_needed()
        expect(plot.locator("svg text", has_text=title)).to_have_count(1)
        shown = page.evaluate(PLOT_BOXES, plot_id)
        outside = [t for t in shown["texts"] if t["left"] < 0 or t["right"] > shown["width"]]
        assert outside == [], (plot_id, shown["width"], outside)
        ticks = page.evaluate(X_TICKS, plot_id)
        assert ticks == ["1", "2", "3", "4"], (plot_id, ticks)
    legend = page.locator("#plot-parts svg text", has_text="budget")
    expect(legend).to_have_count(1)  # the last of the six lines is drawn, inside the box


def test_recall_for_the_draft_follows_typing_while_a_reply_streams(context, server, fake, tmp_path):
    """Issue 16's report: "recall for the draft" was not seen updating within 3 s of typing.
    Not reproduced (0.0-0.4 s after the last key, also during an 8 s reply); this keeps the
    preview following the draft while another event of the page is busy streaming."""
    page = open_app(context, server)
    open_panel(page)
    import_text(page, tmp_path, long_export(60))
    expect(badge(page)).to_contain_text("Remembering 60 messages")
    gate = threading.Event()
    fake.reply("Once ", "upon a time.", gate=gate)
    box = page.locator("#chat-input textarea")
    box.press_sequentially("Tell me a story.")
    box.press("Enter")
    expect(bot_messages(page).last).to_contain_text("Once")  # streaming, held by the gate
    box.press_sequentially("what was my passport number?")
    expect(page.locator("#recall-preview")).to_contain_text("K7734")
    gate.set()
    expect(badge(page)).to_contain_text("Remembering 62 messages")
