"""The long-memory benchmark: its generator keeps its rules, and its scoring sees real text.

Not a timing test. The generator's checks are exercised both ways: generated conversations
pass, and a conversation broken on purpose (a leaked answer, a paraphrase that reuses a word,
a filler turn with a relative date) fails with a message naming the rule.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from bench import long_memory
from bench.config import BenchConfig
from bench.long_conversations import (
    KINDS,
    GenerationError,
    annotate,
    check,
    contains,
    content_terms,
    corpus,
    day_of,
)
from bench.long_phrases_en import ENGLISH
from bench.long_phrases_zh import CHINESE


@pytest.fixture(scope="module")
def small_corpus():
    return corpus(seed=7, n_conversations=2, n_messages=160, per_kind=2)


def test_conversations_have_every_kind_in_both_languages(small_corpus):
    en, zh = small_corpus
    assert (en.language, zh.language) == (ENGLISH, CHINESE)
    for conv in small_corpus:
        assert {q.kind for q in conv.questions} == set(KINDS)
        roles = [m.role for m in conv.messages]
        assert roles[::2] == ["user"] * (len(roles) // 2)
        assert roles[1::2] == ["assistant"] * (len(roles) // 2)
        assert len({day_of(m.created_at) for m in conv.messages}) >= 2  # several sessions
        # Nothing planted near the end: the recent window never holds an answer by luck.
        assert max(i for q in conv.questions for i in q.evidence) < len(conv.messages) - 70


def test_full_size_conversations_are_long(small_corpus):
    (conv,) = corpus(seed=3, n_conversations=1, n_messages=600, per_kind=4)
    assert len(conv.messages) >= 600
    assert len(conv.questions) == 4 * len(KINDS)


def test_generation_is_seeded(small_corpus):
    again = corpus(seed=7, n_conversations=2, n_messages=160, per_kind=2)
    assert again == small_corpus
    other = corpus(seed=8, n_conversations=2, n_messages=160, per_kind=2)
    assert other[0].messages != small_corpus[0].messages


def test_when_gold_is_the_date_the_relative_words_mean(small_corpus):
    for conv in small_corpus:
        for q in (q for q in conv.questions if q.kind == "when"):
            turn = conv.messages[q.evidence[0]]
            word = max((w for w in conv.language.relative_days if w in turn.content), key=len)
            written = dt.datetime.fromtimestamp(turn.created_at, dt.UTC).date()
            if word in conv.language.week_words:  # the Monday of the week before
                meant = written - dt.timedelta(days=written.weekday() + 7)
                assert meant.weekday() == 0 and 7 <= (written - meant).days <= 13
            else:
                meant = written - dt.timedelta(days=conv.language.relative_days[word])
            assert q.gold == (meant.isoformat(),)
            assert q.gold[0] in annotate(turn.content, turn.created_at, conv.language)


def test_a_date_counts_in_any_unambiguous_form():
    for text in ("2026-03-04", "Wednesday, 4 March 2026", "March 4, 2026", "2026年3月4日（星期三）",
                 "week of 4 March 2026", "約2026年3月4日"):  # fmt: skip
        assert contains(text, "2026-03-04"), text
    for text in ("14 March 2026", "2026-03-14", "March 14, 2026", "2026年3月14日", "4 March"):
        assert not contains(text, "2026-03-04"), text


def test_paraphrase_shares_no_content_word(small_corpus):
    for conv in small_corpus:
        for q in (q for q in conv.questions if q.kind == "paraphrase"):
            assert not content_terms(q.text) & content_terms(conv.messages[q.evidence[0]].content)


def test_content_terms_stem_like_the_keyword_index():
    assert content_terms("I was running to the bikes") == {"run", "bike"}
    assert content_terms("我在學樂器") == {"我在", "在學", "學樂", "樂器"}


def test_contains_matches_whole_words_only():
    assert contains("I play Squash on Mondays", "squash")
    assert not contains("squashed flat", "squash")
    assert contains("昨天 (2026-03-14)", "2026-03-14")


def _with_message(conv, index, content):
    messages = list(conv.messages)
    messages[index] = dataclasses.replace(messages[index], content=content)
    return dataclasses.replace(conv, messages=tuple(messages))


def test_check_catches_a_leaked_answer(small_corpus):
    conv = small_corpus[0]
    q = conv.questions[0]
    filler = next(i for i in range(0, 60, 2) if all(i not in x.evidence for x in conv.questions))
    broken = _with_message(conv, filler, f"Random thought about {q.gold[0]}.")
    with pytest.raises(GenerationError, match="appears outside its evidence"):
        check(broken, min_messages=100)


def test_check_catches_a_paraphrase_that_reuses_a_word(small_corpus):
    conv = small_corpus[0]
    q = next(q for q in conv.questions if q.kind == "paraphrase")
    fact = conv.messages[q.evidence[0]].content
    broken = _with_message(conv, q.evidence[0], fact + " " + q.text)
    with pytest.raises(GenerationError, match="shares"):
        check(broken, min_messages=100)


def test_check_catches_a_relative_date_in_filler(small_corpus):
    conv = small_corpus[1]
    planted = {i for q in conv.questions for i in (*q.evidence, *q.distractors)}
    filler = next(i for i in range(0, 60, 2) if i not in planted)
    broken = _with_message(conv, filler, "我明天要去看牙醫。")
    with pytest.raises(GenerationError, match="relative date"):
        check(broken, min_messages=100)


def test_check_catches_short_and_misordered_conversations(small_corpus):
    conv = small_corpus[0]
    with pytest.raises(GenerationError, match="fewer than 600"):
        check(conv)
    swapped = list(conv.messages)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    with pytest.raises(GenerationError, match="alternate"):
        check(dataclasses.replace(conv, messages=tuple(swapped)), min_messages=100)


def test_outcome_counts_an_update_with_only_the_old_value_as_stale(small_corpus):
    conv = small_corpus[0]
    q = next(q for q in conv.questions if q.kind == "updated")
    old_only = long_memory.outcome("x", conv, q, f"I live with {q.stale[0]}", 10)
    assert not old_only.found and old_only.stale
    both = long_memory.outcome("x", conv, q, f"{q.stale[0]} then {q.gold[0]}", 10)
    assert both.found and not both.stale


async def test_benchmark_scores_real_requests(tmp_path):
    """Tiny end to end: full history finds everything (the answers are all in the transcript
    the generator checked, so anything less is a scoring or rendering bug); Mnemo's requests
    come from the real service and are far smaller."""
    config = BenchConfig(size="tiny", out_dir=tmp_path / "results", work_dir=tmp_path)
    outcomes, notes = await long_memory.measure(config)
    by = long_memory.summarize(outcomes)
    assert {long_memory.FULL, long_memory.MNEMO, long_memory.DROP} <= set(by)
    full = by[long_memory.FULL]
    for column in (*KINDS, long_memory.ZH_COLUMN, "overall"):
        assert long_memory.share(full[column]) == 1.0, column
    mnemo = by[long_memory.MNEMO]["overall"]
    assert len(mnemo) == len(full["overall"])
    assert long_memory.mean_chars(mnemo) < long_memory.mean_chars(full["overall"])
    # The preview the bench scores is what the model was really sent.
    checked = [n for n in notes if "checked against the preview" in n]
    assert checked and all("2/2 identical" in n for n in checked), notes
    if long_memory.PREVIOUS in by:  # absent only when git lacks the commit (shallow clone)
        assert len(by[long_memory.PREVIOUS]["overall"]) == len(full["overall"])
    else:
        assert any("not measured" in n for n in notes), notes
    path = long_memory.report(outcomes, notes, config)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("## Long memory")
    for kind in KINDS:
        assert f"| {kind} " in text
    assert "| full history | 2/2 (100%)" in text


def test_relative_dates_are_annotated_from_the_turns_own_time():
    wednesday = dt.datetime(2026, 3, 18, 10, tzinfo=dt.UTC).timestamp()
    assert annotate("我昨天去換了護照", wednesday, CHINESE) == "我昨天 (2026-03-17)去換了護照"
    assert annotate("上週跑完半馬", wednesday, CHINESE) == "上週 (week of 2026-03-09)跑完半馬"
    assert annotate("Last week was long, two days ago too", wednesday, ENGLISH) == (
        "Last week (week of 2026-03-09) was long, two days ago (2026-03-16) too"
    )
    assert annotate("nothing relative here", wednesday, ENGLISH) == "nothing relative here"


def test_memorys_own_date_annotation_leaks_no_answer(small_corpus):
    """Mnemo's renderer annotates relative dates in every turn it shows: in turns that are not
    a question's evidence, those annotations must never spell out that question's answer."""
    timeref = pytest.importorskip("memory.timeref")
    for conv in small_corpus:
        for q in conv.questions:
            for i, m in enumerate(conv.messages):
                if i not in q.evidence:
                    shown = timeref.annotate(m.content, m.created_at)
                    assert not any(contains(shown, t) for t in q.gold), (q.id, shown)


def test_the_reply_to_a_turn_does_not_say_whether_it_holds_a_fact():
    # Were a planted fact always answered by an acknowledgement, and nothing else, "user turns
    # answered by 'Got it, I'll keep that in mind.'" would find every answer without memory.
    for conv in corpus(seed=3, n_conversations=2, n_messages=600, per_kind=4):
        acks = set(conv.language.acks)
        planted = {i for q in conv.questions for i in (*q.evidence, *q.distractors)}
        facts = [i for q in conv.questions for i in q.evidence]
        replies = {i: conv.messages[i + 1].content for i in range(0, len(conv.messages), 2)}
        filler_acked = [i for i, r in replies.items() if r in acks and i not in planted]
        facts_not_acked = [i for i in facts if replies[i] not in acks]
        assert len(filler_acked) >= 10, conv.id  # everyday turns answered the same way
        assert facts_not_acked, conv.id  # and facts answered otherwise


def test_everyday_chat_seldom_repeats_itself_word_for_word():
    # Real chat rarely says the same sentence twice; a generator that did flattered recall's
    # skipping of repeats (issue 11). A topic has a few stock lines, so most turns add a
    # passing remark and the reply answers it: whole turns differ though lines recur.
    for conv in corpus(seed=42, n_conversations=2, n_messages=720, per_kind=4):
        users = [m.content for m in conv.messages if m.role == "user"]
        long_replies = [
            m.content for m in conv.messages if m.role == "assistant" and len(m.content) > 60
        ]
        assert len(users) - len(set(users)) <= 0.1 * len(users), conv.id
        assert len(long_replies) - len(set(long_replies)) <= 0.05 * len(long_replies), conv.id
