"""Roundtable YAML, its registry and the veto check: plain tests, no model anywhere."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from personas import (
    ROUNDTABLE_DIR,
    InvalidRoundtable,
    PersonaRegistry,
    RoundtableRegistry,
    VetoConfigError,
    check_veto,
    load_roundtable_text,
    missing_members,
)

OWNER = "owner-a"
BOARD = (ROUNDTABLE_DIR / "erp_board.yaml").read_text(encoding="utf-8")

MINIMAL = """\
id: duo
display_name: Duo
members: [sales, production]
chair: general_manager
"""


@pytest.fixture
def registry(tmp_path):
    return PersonaRegistry(data_dir=tmp_path)


@pytest.fixture
def finance(registry):
    return registry.get(OWNER, "finance").persona


def test_the_shipped_erp_board_speaks_in_order_and_its_members_exist(registry):
    board = load_roundtable_text(BOARD)
    assert board.speakers == ["sales", "production", "finance", "general_manager"]
    assert board.rounds == 1 and board.chair == "general_manager"
    assert board.veto is not None and board.veto.member == "finance"
    assert missing_members(board, [p.id for p in registry.list(OWNER)]) == []


def test_every_shipped_roundtable_validates():
    shipped = sorted(ROUNDTABLE_DIR.glob("*.yaml"))
    assert shipped
    for path in shipped:
        assert load_roundtable_text(path.read_text(encoding="utf-8")).id == path.stem


def test_rounds_repeat_the_members_before_the_chair():
    board = load_roundtable_text(MINIMAL + "rounds: 2\n")
    assert board.speakers == ["sales", "production", "sales", "production", "general_manager"]


BAD = [
    ("id: duo\ndisplay_name: Duo\nchair: x\n", "members: required — add `members:`"),
    (MINIMAL + "rounds: 4\n", "line 5, column 9: rounds: is 4; use 1 to 3 rounds"),
    (MINIMAL + "round: 2\n", "line 5, column 1: round: unknown field — did you mean `rounds`?"),
    (
        MINIMAL + "metrics:\n  - name: Nike\n    gross_margin_pct: twelve\n",
        "line 7, column 23: metrics item 1.gross_margin_pct: expected a number such as 12.5",
    ),
    (
        MINIMAL + "metrics:\n  - name: Nike\n",
        "metrics item 1.gross_margin_pct: required — add `gross_margin_pct: 12.5`",
    ),
    (
        "id: duo\ndisplay_name: Duo\nmembers: [sales, sales]\nchair: general_manager\n",
        "line 3, column 1: members: each persona speaks once per round",
    ),
    (
        "id: duo\ndisplay_name: Duo\nmembers: [sales]\nchair: sales\n",
        "line 4, column 1: chair: 'sales' is also a member",
    ),
    (
        MINIMAL + "veto:\n  member: finance\nmetrics:\n  - {name: Nike, gross_margin_pct: 12}\n",
        "line 5, column 1: veto.member: 'finance' is not a member",
    ),
    (
        "id: duo\ndisplay_name: Duo\nmembers: [finance]\nchair: general_manager\n"
        "veto:\n  member: finance\n",
        "metrics: a veto is decided from the metrics table",
    ),
    ("id: Duo!\ndisplay_name: D\nmembers: [a]\nchair: b\n", "line 1, column 5: id: 'Duo!'"),
    (MINIMAL + "members: [a]\n", "duplicate key (first set on line 3)"),
    ("members: [a\n", "Roundtable YAML has 1 problem"),
    (
        MINIMAL + "i18n:\n  zh:\n    display_name: 二人組\n",
        "line 6, column 3: i18n.zh: 'zh' is not a language the app is shown in — use en or zh-TW",
    ),
    (
        MINIMAL + "i18n:\n  zh-TW:\n    greeting: 你好\n",
        "line 7, column 5: i18n.zh-TW.greeting: unknown field — a roundtable's zh-TW entry has "
        "display_name, description",
    ),
]


@pytest.mark.parametrize("yaml_text,expected", BAD)
def test_bad_roundtables_are_refused_with_located_messages(yaml_text, expected):
    with pytest.raises(InvalidRoundtable) as caught:
        load_roundtable_text(yaml_text)
    assert expected in str(caught.value), str(caught.value)


def test_missing_members_names_the_unknown_personas_in_order():
    board = load_roundtable_text(MINIMAL.replace("production", "marketing"))
    assert missing_members(board, ["sales", "general_manager"]) == ["marketing"]


# -- the veto check ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question,vetoed,named",
    [
        ("Should we take the Nike order at 12% margin?", True, ["Nike"]),
        ("我們該接耐吉的訂單嗎？", True, ["Nike"]),  # an alias, inside CJK text without spaces
        ("NIKE wants 20,000 pairs", True, ["Nike"]),  # case does not matter
        ("Adidas asks for a 5% discount", False, ["Adidas"]),  # 18.5% clears 15%
        ("Decathlon at list price?", False, ["Decathlon"]),  # exactly at the threshold passes
        ("Puma and New Balance both asked", True, ["Puma", "New Balance"]),
        ("Nikes are shoes", False, []),  # whole words only for Latin names
        ("A new customer from Osaka", False, []),  # names nothing in the table
    ],
)
def test_the_veto_is_decided_from_the_table(question, vetoed, named, finance):
    decision = check_veto(question, load_roundtable_text(BOARD), finance)
    assert decision is not None
    assert decision.vetoed is vetoed
    assert [m.name for m in decision.named] == named
    assert decision.threshold_pct == 15


@pytest.mark.parametrize(
    "question,language,label",
    [
        ("Should we take the Nike order?", None, "FINANCE VETO"),
        ("Should we take the Nike order?", "en", "FINANCE VETO"),
        ("我們該接耐吉的訂單嗎？", None, "財務否決"),  # the question is Chinese
        ("我們該接 Nike 的訂單嗎？", "en", "財務否決"),  # even from an English page
        ("Should we take the Nike order?", "zh-TW", "財務否決"),  # the page is Chinese
    ],
)
def test_the_veto_label_is_in_the_turns_language(question, language, label, finance):
    decision = check_veto(question, load_roundtable_text(BOARD), finance, language)
    assert decision.vetoed and decision.label == label


def test_a_persona_without_a_chinese_label_keeps_its_own_or_the_default(registry, finance):
    """A Chinese turn uses the `i18n` entry's veto_label; without one the persona's label as
    written (the owner chose it), and a persona with no label at all gets 否決 / VETO."""
    board = load_roundtable_text(BOARD)
    text = registry.get(OWNER, "finance").yaml_text
    without = text.replace("    veto_label: 財務否決\n", "")
    assert without != text
    registry.save(OWNER, without)
    own = registry.get(OWNER, "finance").persona
    assert check_veto("耐吉的訂單？", board, own).label == "FINANCE VETO"
    registry.save(OWNER, without.replace("  veto_label: FINANCE VETO\n", ""))
    bare = registry.get(OWNER, "finance").persona
    assert "veto_label" not in bare.parameters
    assert check_veto("耐吉的訂單？", board, bare).label == "否決"
    assert check_veto("The Nike order?", board, bare).label == "VETO"


def test_a_chinese_veto_label_saved_in_the_editor_applies_to_the_next_check(registry):
    text = registry.get(OWNER, "finance").yaml_text
    registry.save(OWNER, text.replace("veto_label: 財務否決", "veto_label: 財務部否決"))
    edited = registry.get(OWNER, "finance").persona
    assert check_veto("耐吉？", load_roundtable_text(BOARD), edited).label == "財務部否決"


def test_the_reason_names_each_entry_below_the_threshold(finance):
    decision = check_veto("Puma or Nike?", load_roundtable_text(BOARD), finance)
    assert decision.reason() == "Nike: 12% < 15%; Puma: 14.2% < 15%"


def test_a_threshold_saved_in_the_persona_editor_applies_to_the_next_check(registry, finance):
    board = load_roundtable_text(BOARD)
    assert not check_veto("Adidas order", board, finance).vetoed
    edited = registry.get(OWNER, "finance").yaml_text.replace(
        "veto_threshold_pct: 15", "veto_threshold_pct: 20"
    )
    registry.save(OWNER, edited)
    now = registry.get(OWNER, "finance").persona
    decision = check_veto("Adidas order", board, now)
    assert decision.vetoed and decision.threshold_pct == 20
    # Another owner still has the built-in threshold.
    assert not check_veto("Adidas order", board, registry.get("owner-b", "finance").persona).vetoed


def test_an_edited_table_changes_the_decision(finance):
    edited = BOARD.replace("gross_margin_pct: 12\n", "gross_margin_pct: 16\n")
    board = load_roundtable_text(edited)
    assert not check_veto("Nike order", board, finance).vetoed


def test_a_vetoer_without_a_threshold_says_what_to_add(registry):
    sales = registry.get(OWNER, "sales").persona
    board = load_roundtable_text(BOARD.replace("member: finance", "member: sales"))
    with pytest.raises(VetoConfigError, match=re.escape("add e.g. `veto_threshold_pct: 15`")):
        check_veto("Nike", board, sales)


def test_no_veto_rule_means_no_decision(finance):
    assert check_veto("Nike", load_roundtable_text(MINIMAL), finance) is None


# -- the registry -----------------------------------------------------------------------------


def test_owner_edits_are_versions_of_their_own(tmp_path):
    reg = RoundtableRegistry(data_dir=tmp_path)
    assert [r.id for r in reg.list(OWNER)] == ["erp_board"]
    saved = reg.save(OWNER, BOARD.replace("rounds: 1", "rounds: 2"))
    assert saved.version == 1 and saved.persona.rounds == 2
    assert reg.get(OWNER, "erp_board").persona.rounds == 2
    assert reg.get("owner-b", "erp_board").persona.rounds == 1
    reg.rollback(OWNER, "erp_board", 0)
    assert reg.get(OWNER, "erp_board").persona.rounds == 1
    assert (tmp_path / "roundtables").is_dir() and not (tmp_path / "personas").exists()


def test_bad_yaml_never_replaces_a_working_roundtable(tmp_path):
    reg = RoundtableRegistry(data_dir=tmp_path)
    with pytest.raises(InvalidRoundtable):
        reg.save(OWNER, BOARD.replace("rounds: 1", "rounds: nine"))
    assert reg.get(OWNER, "erp_board").version == 0


def test_a_built_in_edited_on_disk_is_reloaded_and_a_broken_edit_keeps_the_last_good(tmp_path):
    folder = tmp_path / "builtin"
    shutil.copytree(ROUNDTABLE_DIR, folder)
    reg = RoundtableRegistry(folder, data_dir=tmp_path / "data")
    path = folder / "erp_board.yaml"
    path.write_text(BOARD.replace("rounds: 1", "rounds: 2"), encoding="utf-8")
    os.utime(path, ns=(1, 10**18))
    assert reg.get(OWNER, "erp_board").persona.rounds == 2
    path.write_text(BOARD.replace("rounds: 1", "rounds: 0"), encoding="utf-8")
    os.utime(path, ns=(1, 2 * 10**18))
    assert reg.get(OWNER, "erp_board").persona.rounds == 2
    assert "rounds" in reg.last_error("erp_board")


# -- in PostgreSQL, beside the personas ------------------------------------------------------


def test_roundtables_share_the_database_with_personas_but_not_their_versions(pg_url, tmp_path):
    from personas.postgres import PostgresVersions

    opened = [PostgresVersions(pg_url, namespace=RoundtableRegistry.folder) for _ in range(2)]
    opened.append(PostgresVersions(pg_url))
    try:
        tables = RoundtableRegistry(data_dir=tmp_path / "one", versions=opened[0])
        replica = RoundtableRegistry(data_dir=tmp_path / "two", versions=opened[1])
        personas = PersonaRegistry(data_dir=tmp_path / "one", versions=opened[2])
        assert tables.save(OWNER, BOARD.replace("rounds: 1", "rounds: 2")).version == 1
        finance_text = personas.get(OWNER, "finance").yaml_text.replace(
            "display_name: Finance Controller", "display_name: Money Controller"
        )
        assert personas.save(OWNER, finance_text).version == 1  # numbered apart
        assert replica.get(OWNER, "erp_board").persona.rounds == 2  # another replica sees it
        assert [r.id for r in replica.list(OWNER)] == ["erp_board"]
        assert "erp_board" not in {p.id for p in personas.list(OWNER)}
        assert [v.version for v in personas.versions(OWNER, "finance")] == [1, 0]
        replica.rollback(OWNER, "erp_board", 0)
        assert tables.get(OWNER, "erp_board").persona.rounds == 1
        assert personas.get(OWNER, "finance").version == 1  # a roundtable's rollback only
        assert not (tmp_path / "one" / "roundtables").exists()
    finally:
        for versions in opened:
            versions.close()


def test_versions_saved_before_the_namespaces_stay_the_personas(pg_url, monkeypatch):
    import psycopg

    from personas import postgres
    from personas.postgres import PostgresVersions

    with psycopg.connect(pg_url, autocommit=True) as conn:
        monkeypatch.setattr(postgres, "MIGRATIONS", postgres.MIGRATIONS[:1])
        postgres.migrate(conn)
        conn.execute("INSERT INTO persona_versions VALUES ('k', 'finance', 1, 'id: finance', 1.0)")
        conn.execute("INSERT INTO persona_current VALUES ('k', 'finance', 1)")
        monkeypatch.undo()
        assert postgres.migrate(conn) == ["m002_namespaces"]
    opened = [PostgresVersions(pg_url), PostgresVersions(pg_url, namespace="roundtables")]
    try:
        assert opened[0].numbers("k", "finance") == [1] and opened[0].current("k", "finance") == 1
        assert opened[1].numbers("k", "finance") == [] and opened[1].current("k", "finance") is None
    finally:
        for versions in opened:
            versions.close()


def test_the_erp_board_has_its_chinese_name_for_a_zh_tw_page():
    board = load_roundtable_text((ROUNDTABLE_DIR / "erp_board.yaml").read_text(encoding="utf-8"))
    assert board.shown("display_name", "zh-TW") == "ERP 決策委員會"
    assert board.shown("display_name", "en") == "ERP decision board"
    assert board.shown("description", "zh-TW").startswith("業務 → 生產 → 財務")
