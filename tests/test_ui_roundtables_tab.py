"""The roundtable editor's handlers, called as plain functions over a real runtime in a tmp dir
(real files for saved versions): open, validate with located problems, save a version for this
owner only, use an earlier one, make a roundtable of one's own — and the next message uses it."""

from __future__ import annotations

import gradio as gr
import pytest

from ui import page, roundtables_tab
from ui.i18n import speaking

OWNER = "b-owner-aaaaaaaaaaaaaaaa"
OTHER = "b-other-bbbbbbbbbbbbbbbb"


async def test_it_opens_the_shipped_board_as_built_in(rt):
    view = await roundtables_tab.show_board(rt, OWNER, None)
    assert view.board_picker["value"] == "erp_board"
    assert ("👥 ERP decision board", "erp_board") in view.board_picker["choices"]
    assert view.board_yaml.startswith("# ERP decision board")
    assert view.board_versions["value"] == 0
    assert view.board_status == "Version **v0** of this roundtable is in use (built-in)."
    # The chat picker's value works too.
    assert (await roundtables_tab.show_board(rt, OWNER, "roundtable:erp_board")).board_yaml


@pytest.mark.parametrize(
    "yaml_text,expected",
    [
        (
            "id: erp_board\ndisplay_name: x\nmembers: [sales]\nchair: general_manager\nrounds: 9\n",
            "rounds",
        ),
        ("id: b\ndisplay_name: B\nmembers: sales\n  - bad: [\n", "line 4, column 8"),
        ("id: b\ndisplay_name: B\nmembers: [sales]\nchair: sales\ncolour: red\n", "colour"),
    ],
)
def test_validate_locates_every_problem(yaml_text, expected):
    status = roundtables_tab.validate_board(yaml_text)
    assert status.startswith("❌ **The YAML has problems:**") and expected in status


def test_a_chinese_page_says_where_in_chinese():
    with speaking("zh-TW"):
        status = roundtables_tab.validate_board(
            "id: b\ndisplay_name: B\nmembers: sales\n  - bad: [\n"
        )
    assert status.startswith("❌ **YAML 有問題：**") and "- 第 4 行第 8 欄：" in status


def test_validate_names_the_speakers_in_order():
    yaml_text = "id: duo\ndisplay_name: Duo\nmembers: [sales]\nchair: finance\n"
    status = roundtables_tab.validate_board(yaml_text)
    assert status.startswith("✅ Valid: **Duo** (`duo`)") and "sales → finance" in status
    with speaking("zh-TW"):
        assert roundtables_tab.validate_board(yaml_text).startswith("✅ 格式正確：**Duo**")


async def test_a_bad_save_changes_nothing_and_says_where(rt):
    before = await roundtables_tab.show_board(rt, OWNER, "erp_board")
    with pytest.warns(UserWarning):  # the toast, outside a running app
        view = await roundtables_tab.save_board(rt, OWNER, before.board_yaml + "rounds: 7\n")
    assert view.board_status.startswith("❌ **Not saved**") and view.board_yaml == gr.skip()
    after = await roundtables_tab.show_board(rt, OWNER, "erp_board")
    assert after.board_yaml == before.board_yaml and after.board_versions["value"] == 0


async def test_a_saved_version_is_the_owners_and_used_from_the_next_message(rt, fake):
    shipped = (await roundtables_tab.show_board(rt, OWNER, "erp_board")).board_yaml
    shorter = shipped.replace("  - production\n", "")
    view = await roundtables_tab.save_board(rt, OWNER, shorter)
    assert view.board_status == "✅ Saved as **v1**; used from the next message."
    assert view.board_versions["value"] == 1 and "  - production\n" not in view.board_yaml
    # Someone else still has the built-in.
    assert (await roundtables_tab.show_board(rt, OTHER, "erp_board")).board_yaml == shipped
    # The next roundtable message has three speakers, not four.
    facade = await rt.conversations()
    conversation = await facade.create(OWNER, persona_id="roundtable:erp_board")
    fake.reply("One.")
    fake.reply("Two.")
    fake.reply("Three.")
    events = [e async for e in facade.send(OWNER, conversation.id, "Hire two planners?")]
    assert [type(e).__name__ for e in events].count("Spoke") == 3
    # And v0 again: four speakers from the next message.
    back = await roundtables_tab.use_board_version(rt, OWNER, "erp_board", 0)
    assert back.board_yaml == shipped and back.board_versions["value"] == 0


async def test_a_roundtable_of_ones_own_joins_the_pickers(rt):
    duo = "id: duo\ndisplay_name: Sales and finance\nmembers: [sales]\nchair: finance\nrounds: 1\n"
    view = await roundtables_tab.save_board(rt, OWNER, duo)
    assert view.board_picker["value"] == "duo"
    chat = await page.refresh_chat(rt, OWNER, None, "roundtable:duo")
    assert ("👥 Sales and finance", "roundtable:duo") in chat.persona["choices"]
    other = await page.refresh_chat(rt, OTHER, None)
    assert "roundtable:duo" not in [pid for _, pid in other.persona["choices"]]


async def test_using_a_version_needs_one_picked(rt):
    with pytest.raises(gr.Error, match="Pick a version"):
        await roundtables_tab.use_board_version(rt, OWNER, "erp_board", None)
