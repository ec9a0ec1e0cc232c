"""The panels' shared plumbing: outputs found by name, NamedTuples extended by name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

import gradio as gr
import pytest

from ui.page import ChatView, extended, outputs, skipped


class Pair(NamedTuple):
    left: str
    right: str


def test_outputs_follow_the_field_order_and_take_the_first_source_that_names_them():
    record = SimpleNamespace(right="R from record", left="L from record")
    assert outputs(Pair, {"right": "R from mapping"}, record) == ["L from record", "R from mapping"]


def test_a_field_without_a_component_fails_when_the_page_is_built():
    with pytest.raises(AttributeError, match=r"Pair\.right: no component of that name"):
        outputs(Pair, {"left": "L"}, SimpleNamespace(other="x"))


def test_an_extended_view_is_the_base_view_then_the_new_fields():
    Turn = extended(ChatView, "Turn", turn_done=bool)
    assert Turn._fields == (*ChatView._fields, "turn_done")
    turn = skipped(Turn)._replace(turn_done=True)
    assert turn.turn_done is True
    assert all(isinstance(v, type(gr.skip())) for v in turn[:-1])
    assert ChatView(*turn[:-1])._fields == ChatView._fields
