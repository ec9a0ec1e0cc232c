"""The UI's labels: every key in both languages, the Chinese really Chinese, unknown keys loud."""

from __future__ import annotations

import re

import pytest

import app
from ui.i18n import EN, I18N, ZH_TW, t


def test_every_label_exists_in_both_languages():
    assert set(EN) == set(ZH_TW)
    assert I18N.translations["zh-TW"] == ZH_TW == I18N.translations["zh-Hant"]


@pytest.mark.parametrize("key", sorted(EN))
def test_the_chinese_labels_have_no_english_words_left(key):
    # Brand names and key names stay as they are; everything else is translated.
    allowed = {"Mnemo", "API", "Enter", "Shift", "HTTP", "Gemini", "YAML", "my-bot", "SmolLM"}
    text = re.sub(r"`[^`]*`|\(/api/[^)]*\)|my-bot", " ", ZH_TW[key])  # code and links as they are
    words = set(re.findall(r"[A-Za-z]{2,}", text)) - allowed
    assert not words, (key, words)
    assert re.search(r"[\u4e00-\u9fff]", ZH_TW[key]), key


def test_an_unknown_label_key_is_refused():
    with pytest.raises(KeyError, match=r"add it to ui/i18n\.py"):
        t("no_such_label")


def test_the_app_builds_with_translated_labels(tmp_path):
    from assistant.gemini import GeminiModel
    from assistant.runtime import Runtime

    demo = app.build_demo(Runtime(tmp_path, model=GeminiModel("k", base_url="http://127.0.0.1:9")))
    labels = [str(getattr(block, "label", "") or "") for block in demo.blocks.values()]
    assert any(label.startswith("__i18n__") for label in labels)


def test_the_offline_models_name_in_the_sidebar_follows_the_page(tmp_path):
    # Built once for every page: its name must be a label the frontend translates, not the
    # English name the badge's tr() would translate server-side.
    from assistant.local import LocalModel
    from assistant.runtime import Runtime

    demo = app.build_demo(Runtime(tmp_path, model=LocalModel()))
    note = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "model-name")
    assert str(note.value) == str(t("answering_local"))
    assert "本機的小型離線模型" in ZH_TW["answering_local"]
