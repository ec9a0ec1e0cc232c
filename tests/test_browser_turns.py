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


def type_message(page, text: str):
    box = page.locator("#chat-input textarea")
    box.press_sequentially(text)
    return box


def click_new_chat_now(page) -> None:
    """Click New chat in this instant, without waiting for it to be enabled (as a quick hand
    does before the lock arrives)."""
    page.evaluate("document.querySelector('#new-chat').click()")


# New chat clicked, then Enter pressed in the same instant: the new chat cannot have shown yet.
NEW_CHAT_THEN_ENTER = """() => {
  document.querySelector('#new-chat').click();
  const box = document.querySelector('#chat-input textarea');
  for (const type of ['keydown', 'keypress', 'keyup']) {
    box.dispatchEvent(new KeyboardEvent(type, {key: 'Enter', code: 'Enter', keyCode: 13,
                                               which: 13, bubbles: true, cancelable: true}));
  }
}"""


@pytest.mark.parametrize("new_chat_first", [False, True], ids=["enter-then-new", "new-then-enter"])
def test_a_message_goes_to_the_conversation_shown_when_enter_was_pressed(
    context, server, fake, new_chat_first
):
    """New chat clicked just after Enter (before the lock), or just before it (before the new
    chat showed): the reply step read the server's conversation id, which New chat had already
    emptied, so the message was saved into a new conversation, not the one on screen."""
    page = open_app(context, server)
    send(page, "Zebras first", remembered=2)
    box = type_message(page, "Then lions")
    if new_chat_first:
        page.evaluate(NEW_CHAT_THEN_ENTER)
    else:
        box.press("Enter")
        click_new_chat_now(page)
    turn_over(page)
    expect(badge(page)).to_contain_text("Remembering 4 messages")
    expect(user_messages(page)).to_have_count(2)
    expect(user_messages(page).first).to_contain_text("Zebras first")
    expect(user_messages(page).last).to_contain_text("Then lions")
    expect(bot_messages(page).last).to_contain_text("earlier you said: Zebras first")
    expect(page.locator("#conversations label")).to_have_count(1)
    expect(page.locator("#conversations label:has(input:checked)")).to_contain_text("Zebras first")


def test_the_reset_question_left_open_counts_the_latest_reply(context, server, fake):
    """Reset asked, then a message sent: once the reply was in, the question still said
    "2 messages" and Forget it cleared 4."""
    page = open_app(context, server)
    send(page, "Zebras first", remembered=2)
    page.locator("#reset-btn").click()
    expect(page.locator("#reset-confirm-text")).to_contain_text("2 messages")
    type_message(page, "Then lions").press("Enter")
    turn_over(page)
    expect(badge(page)).to_contain_text("Remembering 4 messages")
    expect(page.locator("#reset-confirm-text")).to_contain_text("4 messages")
