"""Which slots of a recalled fact a later turn can rename (memory/renames.py)."""

from __future__ import annotations

import pytest

from memory.recall import query_terms
from memory.renames import asked_slots, named_slots, new_names

ASKED = [  # (the hit, the question, its slots tied to the question)
    ("I work at Marlow as a data analyst.", "Where do I work now?", {("at", "Marlow")}),
    ("I have worked for years at Marlow.", "Where do I work now?", {("at", "Marlow")}),
    ("I live in Leeds with two roommates.", "Which city do I live in now?", {("in", "Leeds")}),
    ("My manager Reginald is great.", "Who is my manager now?", {("manager", "Reginald")}),
    ("My phone is an ancient Nokia.", "Which phone do I have now?", {("ancient", "Nokia")}),
    # The question's word is there, but not before the slot, or too far before it.
    ("Dinner with Marta after work was lovely.", "Where do I work now?", set()),
    ("Work was fine. Then at Marlow's party I met Joel.", "Where do I work now?", set()),
    ("I worked a lot of hours at Marlow.", "Where do I work now?", set()),
    ("I work at Marlow.", "", set()),
]


@pytest.mark.parametrize("hit,question,slots", ASKED)
def test_a_slot_counts_when_it_follows_a_word_the_question_shares(hit, question, slots):
    assert asked_slots(hit, query_terms(question)) == slots


@pytest.mark.parametrize(
    "fact,later,names",
    [
        ("I work at Marlow.", "First week at Quillon went well.", {"Quillon"}),
        ("I work at Marlow.", "Lunch at Marlow's canteen again.", set()),  # the same name
        ("I work at Marlow.", "Flying to Paris with Joel.", set()),  # other slot words
    ],
)
def test_a_later_turn_renames_a_slot_with_a_name_after_the_same_word(fact, later, names):
    assert new_names(asked_slots(fact, ["work"]), named_slots(later)) == names
