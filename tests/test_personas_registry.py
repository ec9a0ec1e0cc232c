"""PersonaRegistry: built-ins, per-owner versions, rollback, isolation, concurrency, hot reload.

Tests taking `registry` or `make_registry` run on both version stores: files in the data dir and
PostgreSQL (one schema per test, tests/memory_backends.py); the tampering tests are the files'.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from personas import (
    BUILTIN_DIR,
    InvalidPersona,
    PersonaError,
    PersonaNotFound,
    PersonaRegistry,
    build_system_prompt,
)


def finance_text(threshold: int = 15, name: str = "Finance Controller") -> str:
    text = (BUILTIN_DIR / "finance.yaml").read_text(encoding="utf-8")
    text = text.replace("veto_threshold_pct: 15", f"veto_threshold_pct: {threshold}")
    return text.replace("display_name: Finance Controller", f"display_name: {name}")


@pytest.fixture
def builtin_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "builtin"
    shutil.copytree(BUILTIN_DIR, copy, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return copy


@pytest.fixture(params=["files", "postgres"])
def make_registry(request, builtin_dir: Path, tmp_path: Path):
    """Registries over one storage, as separate processes or replicas would open it."""
    opened = []

    def make() -> PersonaRegistry:
        versions = None
        if request.param == "postgres":
            from personas.postgres import PostgresVersions

            versions = PostgresVersions(request.getfixturevalue("pg_url"))
            opened.append(versions)
        return PersonaRegistry(
            builtin_dir=builtin_dir, data_dir=tmp_path / "data", versions=versions
        )

    yield make
    for versions in opened:
        versions.close()


@pytest.fixture
def registry(make_registry) -> PersonaRegistry:
    return make_registry()


@pytest.fixture
def file_registry(builtin_dir: Path, tmp_path: Path) -> PersonaRegistry:
    return PersonaRegistry(builtin_dir=builtin_dir, data_dir=tmp_path / "data")


def test_lists_builtins_with_the_default_first(registry: PersonaRegistry):
    listed = registry.list("alice")
    assert listed[0].id == "assistant"
    assert {"sales", "production", "finance", "general_manager"} <= {v.id for v in listed}
    assert all(v.source == "builtin" and v.version == 0 for v in listed)


def test_save_creates_versions_and_rollback_restores(registry: PersonaRegistry):
    v1 = registry.save("alice", finance_text(20))
    v2 = registry.save("alice", finance_text(25))
    assert (v1.version, v2.version) == (1, 2)
    assert v2.source == "saved" and v2.saved_at is not None
    assert registry.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 25
    assert [v.version for v in registry.versions("alice", "finance")] == [2, 1, 0]

    back = registry.rollback("alice", "finance", 1)
    assert back.version == 1
    assert registry.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 20
    assert [v.version for v in registry.versions("alice", "finance")] == [2, 1, 0]

    v3 = registry.save("alice", finance_text(30))
    assert v3.version == 3
    assert registry.get("alice", "finance").version == 3
    assert (
        registry.get("alice", "finance", version=2).persona.parameters["veto_threshold_pct"] == 25
    )


def test_revert_to_builtin_keeps_history(registry: PersonaRegistry):
    registry.save("alice", finance_text(40))
    reverted = registry.revert_to_builtin("alice", "finance")
    assert (reverted.source, reverted.version) == ("builtin", 0)
    assert "below 15%" in build_system_prompt(registry.get("alice", "finance").persona)
    assert [v.version for v in registry.versions("alice", "finance")] == [1, 0]
    assert registry.rollback("alice", "finance", 1).persona.parameters["veto_threshold_pct"] == 40


def test_saving_identical_text_adds_no_version(registry: PersonaRegistry):
    first = registry.save("alice", finance_text(20))
    again = registry.save("alice", finance_text(20))
    assert again.version == first.version == 1
    assert registry.save("bob", finance_text()).version == 0  # same as the built-in in use


def test_a_bad_save_keeps_the_working_persona(registry: PersonaRegistry):
    registry.save("alice", finance_text(20))
    with pytest.raises(InvalidPersona) as caught:
        registry.save("alice", finance_text(20) + "mood: grumpy\n")
    assert "mood: unknown field" in caught.value.problems[0]
    current = registry.get("alice", "finance")
    assert (current.version, current.persona.parameters["veto_threshold_pct"]) == (1, 20)
    assert [v.version for v in registry.versions("alice", "finance")] == [1, 0]


def test_owners_are_isolated(registry: PersonaRegistry):
    registry.save("alice", finance_text(50, name="Alice's CFO"))
    assert registry.get("alice", "finance").persona.display_name == "Alice's CFO"
    assert registry.get("bob", "finance").persona.display_name == "Finance Controller"
    assert [v.version for v in registry.versions("bob", "finance")] == [0]
    with pytest.raises(PersonaNotFound):
        registry.get("bob", "finance", version=1)


def test_owner_folders_are_hashed_and_builtin_files_untouched(
    file_registry: PersonaRegistry, builtin_dir: Path, tmp_path: Path
):
    registry = file_registry
    before = {p.name: p.read_bytes() for p in builtin_dir.iterdir() if p.is_file()}
    owner = "../../evil/owner"
    registry.save(owner, finance_text(20))
    registry.revert_to_builtin(owner, "finance")
    assert {p.name: p.read_bytes() for p in builtin_dir.iterdir() if p.is_file()} == before
    folders = [p.name for p in (tmp_path / "data" / "personas").iterdir()]
    assert folders == [hashlib.sha256(owner.encode()).hexdigest()[:32]]
    assert not (tmp_path / "evil").exists()
    saved = tmp_path / "data" / "personas" / folders[0] / "finance" / "v0001.yaml"
    assert saved.read_text(encoding="utf-8") == finance_text(20)
    assert not [p for p in saved.parent.iterdir() if p.name.startswith(".tmp")]


@pytest.mark.parametrize("bad_id", ["../finance", "..", "Finance", "a/b", "", "x" * 41])
def test_bad_ids_never_touch_the_filesystem(registry: PersonaRegistry, bad_id: str):
    for call in (
        lambda: registry.get("alice", bad_id),
        lambda: registry.versions("alice", bad_id),
        lambda: registry.rollback("alice", bad_id, 0),
        lambda: registry.revert_to_builtin("alice", bad_id),
    ):
        with pytest.raises(PersonaNotFound, match="ids are 1-40 characters"):
            call()


def test_unknown_persona_and_version_say_what_exists(registry: PersonaRegistry):
    with pytest.raises(PersonaNotFound, match="Pick one of: assistant, "):
        registry.get("alice", "nobody")
    with pytest.raises(PersonaNotFound, match="Version 7 of 'finance' does not exist"):
        registry.rollback("alice", "finance", 7)
    with pytest.raises(PersonaError, match="owner id is required"):
        registry.get("", "assistant")


def test_an_owner_can_add_a_persona_of_their_own(registry: PersonaRegistry):
    text = "id: poet\ndisplay_name: Poet\nrole_description: You answer in haiku.\n"
    saved = registry.save("alice", text)
    assert (saved.id, saved.version, saved.source) == ("poet", 1, "saved")
    assert registry.list("alice")[-1].id == "poet"
    assert "poet" not in [v.id for v in registry.list("bob")]
    with pytest.raises(PersonaNotFound, match="not a built-in"):
        registry.revert_to_builtin("alice", "poet")


def test_saves_survive_a_restart(registry: PersonaRegistry, make_registry):
    registry.save("alice", finance_text(20))
    registry.save("alice", finance_text(30))
    registry.rollback("alice", "finance", 1)
    reopened = make_registry()
    current = reopened.get("alice", "finance")
    assert (current.version, current.persona.parameters["veto_threshold_pct"]) == (1, 20)
    assert [v.version for v in reopened.versions("alice", "finance")] == [2, 1, 0]


def test_concurrent_saves_by_one_owner_lose_no_version(registry: PersonaRegistry):
    thresholds = list(range(16, 40))
    start = threading.Barrier(len(thresholds))
    results, errors = [], []

    def save(threshold: int) -> None:
        start.wait()
        try:
            results.append(registry.save("alice", finance_text(threshold)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(t,)) for t in thresholds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(v.version for v in results) == list(range(1, len(thresholds) + 1))
    stored = registry.versions("alice", "finance")
    assert len(stored) == len(thresholds) + 1
    assert {v.persona.parameters["veto_threshold_pct"] for v in stored[:-1]} == set(thresholds)
    newest = max(results, key=lambda v: v.version)
    assert registry.get("alice", "finance").persona == newest.persona


def test_two_registries_on_one_store_never_share_a_version_number(make_registry):
    # Two processes' (or replicas') registries have separate locks; exclusive file creation,
    # or the database's advisory lock, still orders them.
    a, b = make_registry(), make_registry()
    start = threading.Barrier(20)
    results = []

    def save(reg: PersonaRegistry, threshold: int) -> None:
        start.wait()
        results.append(reg.save("alice", finance_text(threshold)).version)

    threads = [threading.Thread(target=save, args=(a if i % 2 else b, 16 + i)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == list(range(1, 21))


def _touch_later(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    # Coarse filesystem clocks could leave the mtime unchanged; the registry keys on it.
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def test_hot_reload_of_a_builtin_edited_on_disk(registry: PersonaRegistry, builtin_dir: Path):
    path = builtin_dir / "finance.yaml"
    assert registry.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 15

    _touch_later(path, finance_text(18))
    assert "below 18%" in build_system_prompt(registry.get("alice", "finance").persona)
    assert registry.last_error("finance") is None

    _touch_later(path, finance_text(22) + "  broken: [\n")
    current = registry.get("alice", "finance")
    assert current.persona.parameters["veto_threshold_pct"] == 18  # last good version stays
    error = registry.last_error("finance")
    assert error is not None and error.startswith("finance.yaml: Persona YAML has 1 problem")
    assert "line " in error

    _touch_later(path, finance_text(21))
    assert registry.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 21
    assert registry.last_error("finance") is None


def test_hot_reload_refuses_an_id_that_does_not_match_the_file(
    registry: PersonaRegistry, builtin_dir: Path
):
    _touch_later(builtin_dir / "sales.yaml", finance_text(19))
    assert registry.get("alice", "sales").persona.id == "sales"
    assert "does not match the file name sales.yaml" in (registry.last_error("sales") or "")


def test_a_builtin_broken_at_startup_is_reported_not_served(builtin_dir: Path, tmp_path: Path):
    (builtin_dir / "broken.yaml").write_text("id: broken\n", encoding="utf-8")
    registry = PersonaRegistry(builtin_dir=builtin_dir, data_dir=tmp_path / "data")
    assert "broken" not in [v.id for v in registry.list("alice")]
    assert "display_name: required" in (registry.last_error("broken") or "")


def test_a_new_builtin_file_appears_without_restart(registry: PersonaRegistry, builtin_dir: Path):
    (builtin_dir / "legal.yaml").write_text(
        "id: legal\ndisplay_name: Legal\nrole_description: You check contracts.\n",
        encoding="utf-8",
    )
    assert registry.get("alice", "legal").persona.display_name == "Legal"


def test_a_saved_edit_applies_to_the_next_get(registry: PersonaRegistry, make_registry):
    other = make_registry()
    registry.save("alice", finance_text(33))
    # The "next message" may be served by another registry instance (another replica).
    assert other.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 33


def test_a_damaged_saved_file_falls_back_to_the_newest_good_version(
    file_registry: PersonaRegistry, tmp_path: Path
):
    registry = file_registry
    registry.save("alice", finance_text(20))
    v2 = registry.save("alice", finance_text(25))
    folder = tmp_path / "data" / "personas" / hashlib.sha256(b"alice").hexdigest()[:32]
    (folder / "finance" / "v0002.yaml").write_text("id: [", encoding="utf-8")
    assert v2.version == 2
    assert registry.get("alice", "finance").version == 1


def test_saves_work_where_hard_links_are_refused(
    registry: PersonaRegistry, monkeypatch: pytest.MonkeyPatch
):
    def no_links(src, dst):
        raise PermissionError("hard links not supported here")

    monkeypatch.setattr(os, "link", no_links)
    assert [registry.save("alice", finance_text(t)).version for t in (20, 21)] == [1, 2]
    assert registry.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 21


def test_readers_never_see_a_half_written_version(registry: PersonaRegistry):
    seen: set[int] = set()
    errors: list[Exception] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                seen.add(registry.get("alice", "finance").persona.parameters["veto_threshold_pct"])
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for thread in readers:
        thread.start()
    try:
        for threshold in range(16, 26):
            registry.save("alice", finance_text(threshold))
    finally:
        done.set()
        for thread in readers:
            thread.join()
    assert errors == []
    assert seen <= set(range(15, 26))
    assert registry.get("alice", "finance").persona.parameters["veto_threshold_pct"] == 25


def test_a_damaged_current_pointer_falls_back_to_the_newest_version(
    file_registry: PersonaRegistry, tmp_path: Path
):
    registry = file_registry
    registry.save("alice", finance_text(20))
    registry.save("alice", finance_text(25))
    registry.rollback("alice", "finance", 1)
    folder = tmp_path / "data" / "personas" / hashlib.sha256(b"alice").hexdigest()[:32]
    (folder / "finance" / "current").write_text("garbage", encoding="utf-8")
    assert registry.get("alice", "finance").version == 2


def test_a_builtin_file_removed_on_disk_keeps_serving_until_it_returns(
    registry: PersonaRegistry, builtin_dir: Path
):
    path = builtin_dir / "sales.yaml"
    text = path.read_text(encoding="utf-8")
    path.unlink()
    assert registry.get("alice", "sales").persona.id == "sales"
    assert "sales.yaml is missing" in (registry.last_error("sales") or "")
    path.write_text(text, encoding="utf-8")
    assert registry.last_error("sales") is None


def test_a_missing_builtin_folder_is_a_clear_error(tmp_path: Path):
    with pytest.raises(PersonaError, match="No built-in persona folder at"):
        PersonaRegistry(builtin_dir=tmp_path / "nope", data_dir=tmp_path / "data")


def test_the_data_dir_is_explicit_and_the_environment_is_not_read(
    builtin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # assistant.config.data_dir is the one resolver; the registry only takes its answer.
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path / "env-data"))
    registry = PersonaRegistry(builtin_dir=builtin_dir, data_dir=tmp_path / "given")
    registry.save("alice", finance_text(20))
    assert list((tmp_path / "given" / "personas").iterdir())
    assert not (tmp_path / "env-data").exists()
    with pytest.raises(TypeError):
        PersonaRegistry(builtin_dir=builtin_dir)  # type: ignore[call-arg]


def test_postgres_keeps_owners_hashed_the_exact_text_and_nothing_on_disk(
    builtin_dir: Path, tmp_path: Path, pg_url: str
):
    import psycopg

    from personas.postgres import PostgresVersions

    versions = PostgresVersions(pg_url)
    try:
        registry = PersonaRegistry(
            builtin_dir=builtin_dir, data_dir=tmp_path / "data", versions=versions
        )
        text = finance_text(20) + "# a comment, kept verbatim\n"
        registry.save("alice@example.com", text)
        assert not (tmp_path / "data" / "personas").exists()  # nothing on this replica's disk
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute(
                "SELECT owner_key, persona_id, version, yaml_text FROM persona_versions"
            ).fetchall()
        owner_key = hashlib.sha256(b"alice@example.com").hexdigest()[:32]
        assert rows == [(owner_key, "finance", 1, text)]
    finally:
        versions.close()


def test_with_the_database_down_built_ins_still_answer_and_saving_says_why(
    builtin_dir: Path, tmp_path: Path, unused_tcp_port: int
):
    from personas import PersonaStoreUnavailable
    from personas.postgres import PostgresVersions

    url = f"postgresql://mnemo:hunter2@127.0.0.1:{unused_tcp_port}/mnemo"
    versions = PostgresVersions(url, wait_s=0.5)  # starting never needs the database
    try:
        registry = PersonaRegistry(builtin_dir=builtin_dir, data_dir=tmp_path, versions=versions)
        assert registry.get("alice", "finance").source == "builtin"
        assert "finance" in [v.id for v in registry.list("alice")]
        with pytest.raises(PersonaStoreUnavailable, match="MNEMO_DATABASE_URL") as err:
            registry.save("alice", finance_text(20))
        assert "hunter2" not in str(err.value)
        with pytest.raises(PersonaStoreUnavailable):
            registry.get("alice", "poet")  # not a built-in: nothing to fall back to
    finally:
        versions.close()
