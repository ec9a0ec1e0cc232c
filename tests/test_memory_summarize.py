"""The built-in extractive summarizer: keeps facts, folds the previous summary in, stays capped."""

from __future__ import annotations

import pytest

from memory import ExtractiveSummarizer, Turn


def turns(*pairs: tuple[str, str]) -> list[Turn]:
    return [
        Turn(id=i + 1, conversation_id="c", role=role, content=text, created_at=float(i))
        for i, (role, text) in enumerate(pairs)
    ]


@pytest.mark.parametrize(
    "role,text,kept",
    [
        ("user", "My name is Ana Lima.", True),  # first person, name
        ("user", "I live in Porto and work at the harbour.", True),
        ("user", "I'm allergic to penicillin.", True),
        ("user", "The meeting moved to 14 March.", True),  # date
        ("user", "Budget is 2,400 euros.", True),  # number
        ("user", "We met Dariusz yesterday.", True),  # name
        ("user", "我叫王伟，住在上海。", True),  # first person, Chinese
        ("user", "What do you think?", False),  # a plain question carries no fact
        ("assistant", "Sure, happy to help with that.", False),  # small talk
        ("assistant", "The train leaves at 07:40 from platform 3.", True),
    ],
)
async def test_keeps_what_carries_facts(role, text, kept):
    out = await ExtractiveSummarizer().summarize(
        None, turns(("user", "Hello there, nice day."), (role, text)), 4000
    )
    assert (text in out) is kept


async def test_folds_in_the_previous_summary_and_dedupes():
    previous = "- User: My name is Ana Lima.\n- User: I live in Porto."
    new = turns(
        ("user", "My name is Ana Lima."),  # said again: not duplicated
        ("user", "My daughter Mira was born on 2 May 2019."),
    )
    out = await ExtractiveSummarizer().summarize(previous, new, 4000)
    assert out.splitlines() == [
        "- User: My name is Ana Lima.",
        "- User: I live in Porto.",
        "- User: My daughter Mira was born on 2 May 2019.",
    ]


async def test_a_model_written_previous_summary_is_kept():
    previous = "The user, Ana, is a nurse in Porto. She prefers short answers."
    out = await ExtractiveSummarizer().summarize(previous, turns(("user", "I like tea.")), 4000)
    assert "Ana, is a nurse in Porto" in out and "I like tea." in out


async def test_capped_and_old_facts_win_over_many_new_ones():
    previous = "- User: My name is Ilsa Varga and I live in Tromsø."
    summarizer = ExtractiveSummarizer()
    summary = previous
    for cycle in range(30):
        new = turns(*[("user", f"I like dish number {cycle * 50 + i} a lot.") for i in range(50)])
        summary = await summarizer.summarize(summary, new, 1000)
        assert len(summary) <= 1000
        assert "Ilsa Varga" in summary and "Tromsø" in summary
    assert "dish number 1450 " in summary  # the newest facts still get room


async def test_one_long_sentence_cannot_fill_the_summary():
    out = await ExtractiveSummarizer().summarize(
        None,
        turns(("user", "I " + "really " * 500 + "like tea."), ("user", "My cat is Miso.")),
        800,
    )
    assert "My cat is Miso." in out and len(out) <= 800


async def test_never_empty_when_there_is_something_to_summarize():
    out = await ExtractiveSummarizer().summarize(None, turns(("user", "ok?"), ("user", "hm?")), 400)
    assert out


async def test_previous_facts_are_not_dropped_for_chit_chat():
    previous = "\n".join(f"- User: My locker number {i} is by the door." for i in range(22))
    assert 900 < len(previous) <= 1000
    chatter = turns(*[("user", "ok sounds good to me then") for _ in range(40)])
    out = await ExtractiveSummarizer().summarize(previous, chatter, 1000)
    assert out.startswith(previous)  # the whole previous summary survives
