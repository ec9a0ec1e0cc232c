"""memory/validation.py: the one place that decides what input is acceptable, and what the
error says. Table-driven; every message names the problem and what to do."""

from __future__ import annotations

import pytest

import memory
from memory import (
    MAX_MESSAGE_CHARS,
    MAX_TITLE_CHARS,
    EmptyMessage,
    InvalidInput,
    InvalidRetention,
    InvalidRole,
    InvalidTitle,
    MessageTooLong,
    check_message,
    check_owner,
    check_retention,
    clean_title,
    make_title,
    validate_message,
)


def test_the_limit_is_the_schemas():
    assert MAX_MESSAGE_CHARS == 10_000
    assert memory.policy.MAX_MESSAGE_CHARS is MAX_MESSAGE_CHARS  # older import path still works


@pytest.mark.parametrize("content", ["hi", "x" * MAX_MESSAGE_CHARS, "  padded  ", "ä" * 100])
def test_acceptable_messages(content):
    check_message(content)
    validate_message("user", content)
    validate_message("assistant", content)


@pytest.mark.parametrize(
    "content,error,message",
    [
        ("", EmptyMessage, "The message is empty. Type something before sending."),
        (" \n\t ", EmptyMessage, "The message is empty. Type something before sending."),
        (None, EmptyMessage, "The message is empty. Type something before sending."),
        (
            "x" * (MAX_MESSAGE_CHARS + 1),
            MessageTooLong,
            "Your message is 10,001 characters; the limit is 10,000 (1 too many). "
            "Shorten it or split it into several messages.",
        ),
        (
            "x" * 25_000,
            MessageTooLong,
            "Your message is 25,000 characters; the limit is 10,000 (15,000 too many). "
            "Shorten it or split it into several messages.",
        ),
    ],
)
def test_refused_messages_say_what_to_do(content, error, message):
    with pytest.raises(error) as err:
        check_message(content)
    assert str(err.value) == message
    assert isinstance(err.value, InvalidInput) and isinstance(err.value, ValueError)


def test_too_long_carries_the_numbers():
    with pytest.raises(MessageTooLong) as err:
        check_message("y" * 12_345)
    assert (err.value.length, err.value.limit) == (12_345, MAX_MESSAGE_CHARS)


@pytest.mark.parametrize("role", ["system", "summary", "", "User"])
def test_only_user_and_assistant_messages(role):
    with pytest.raises(InvalidRole, match='either "user" or "assistant"'):
        validate_message(role, "hello")


@pytest.mark.parametrize(
    "text,title",
    [
        ("  Hello,   I am Ana  ", "Hello, I am Ana"),
        ("x" * 60, "x" * 60),
        # The cut lands on a space: whole words, then the ellipsis.
        ("word " * 20, "word " * 11 + "word…"),
        # The cut lands mid-word: back to the last space, never half a word.
        ("abcdefgh " * 10, "abcdefgh " * 5 + "abcdefgh…"),
        ("y" * 80, "y" * 59 + "…"),
    ],
)
def test_make_title(text, title):
    assert make_title(text) == title
    assert len(make_title(text)) <= 60


@pytest.mark.parametrize(
    "title,expected_or_error",
    [
        ("  Trip   to Porto ", "Trip to Porto"),
        ("x" * MAX_TITLE_CHARS, "x" * MAX_TITLE_CHARS),
        ("   ", "The title is empty. Type a name for the conversation."),
        ("x" * 101, "The title is 101 characters; the limit is 100. Shorten it."),
    ],
)
def test_clean_title(title, expected_or_error):
    if expected_or_error.startswith("The title"):
        with pytest.raises(InvalidTitle) as err:
            clean_title(title)
        assert str(err.value) == expected_or_error
    else:
        assert clean_title(title) == expected_or_error


@pytest.mark.parametrize("minutes", [None, 1, 60, 525_600])
def test_acceptable_retention(minutes):
    check_retention(minutes)


@pytest.mark.parametrize("minutes", [0, -5, 1.5, "10", True, False])
def test_refused_retention(minutes):
    with pytest.raises(InvalidRetention, match="use a whole number of minutes above 0"):
        check_retention(minutes)


@pytest.mark.parametrize("owner", ["a", "browser-7f3a", "o" * 200])
def test_acceptable_owner(owner):
    check_owner(owner)


@pytest.mark.parametrize("owner", ["", "o" * 201, None, 42])
def test_refused_owner(owner):
    with pytest.raises(InvalidInput, match="non-empty string of at most 200 characters"):
        check_owner(owner)
