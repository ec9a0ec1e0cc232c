"""A turn in a real browser while its reply streams: what stays out of reach until it ends.
Same set-up as tests/test_browser.py: `python app.py` in a subprocess, the fake Gemini server
in this process, Playwright in Debian's Chromium; each test's browser context is its own owner."""

# ruff: noqa: F811 (the fixtures imported from test_browser are the tests' parameters)
from __future__ import annotations

import re

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
    start_a_slow_reply,
    turn_over,
    user_messages,
)

pytestmark = pytest.mark.browser

RUNNING = re.compile(r"\bturn-running\b")


def test_nothing_left_open_reaches_the_conversation_while_a_reply_streams(context, server, fake):
    """Reset's "Forget it" asked before the message, a search result, and Retry / Undo under
    the streaming reply: each stayed clickable while Reset, the list and the box were locked.
    "Forget it" then emptied the conversation under the reply, which was saved alone (a reply
    with no question); Retry or Undo ended the page's view of the turn at once (Stop gone, the
    controls back) while the reply went on on the server."""
    page = open_app(context, server)
    send(page, "Zebras first", remembered=2)
    page.locator("#reset-btn").click()
    expect(page.locator("#reset-confirm-text")).to_contain_text("2 messages")
    page.locator("#search-box input").press_sequentially("zebras")
    expect(page.locator("#search-results .gallery-item")).to_have_count(1)

    start_a_slow_reply(page, fake, words=40)
    expect(page.locator("#chat-input button.stop-button")).to_be_visible()
    expect(page.locator("#reset-yes")).to_be_disabled()
    expect(page.locator("#search-results")).to_have_class(RUNNING)
    last_buttons = page.locator("#chat .message-buttons").last
    expect(last_buttons.locator("button").first).to_be_visible()  # copy stays
    expect(page.locator("#chat button[aria-label=Retry]")).to_have_count(1)
    expect(page.locator("#chat button[aria-label=Retry]")).to_be_hidden()
    expect(page.locator("#chat button[aria-label=Undo]")).to_be_hidden()

    expect(bot_messages(page).last).to_contain_text("word39")
    turn_over(page)
    expect(badge(page)).to_contain_text("Remembering 4 messages")
    expect(page.locator("#reset-yes")).to_be_enabled()
    expect(page.locator("#search-results")).not_to_have_class(RUNNING)
    expect(page.locator("#chat button[aria-label=Retry]").last).to_be_visible()
    expect(user_messages(page)).to_have_count(2)
