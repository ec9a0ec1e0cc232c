"""Settings lookup (argument > environment > default), model selection, and the memory badge."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant import ConfigError, config
from assistant.gemini import GeminiModel
from assistant.local import LocalModel
from memory import MemoryStatus
from ui.badge import badge_text, compact_number, idle_text

ENV = [
    "MNEMO_DATA_DIR",
    "MNEMO_MODEL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_MODEL",
    "GEMINI_BASE_URL",
    "MNEMO_QUOTA_PER_HOUR",
    "MNEMO_HOST",
    "MNEMO_PORT",
    "MNEMO_SECRET",
    "MNEMO_SHUTDOWN_GRACE",
    "MNEMO_DATABASE_URL",
    "MNEMO_PG_APPEND_COMMIT",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    "function,env_name,env_value,argument,default,from_env,from_argument",
    [
        (config.data_dir, "MNEMO_DATA_DIR", "/srv/m", "/tmp/x", Path("data"), Path("/srv/m"),
         Path("/tmp/x")),
        (config.model_choice, "MNEMO_MODEL", "LOCAL", "gemini", "auto", "local", "gemini"),
        (config.gemini_model, "GEMINI_MODEL", "gemini-2.5-pro", "gemini-x", "gemini-2.5-flash",
         "gemini-2.5-pro", "gemini-x"),
        (config.gemini_base_url, "GEMINI_BASE_URL", "http://h:1", "http://a:2", None,
         "http://h:1", "http://a:2"),
        (config.quota_per_hour, "MNEMO_QUOTA_PER_HOUR", "30", 5, None, 30, 5),
        (config.host, "MNEMO_HOST", "0.0.0.0", "::1", "127.0.0.1", "0.0.0.0", "::1"),
        (config.port, "MNEMO_PORT", "8080", 9000, 7860, 8080, 9000),
        (config.secret, "MNEMO_SECRET", "s3", "arg", None, "s3", "arg"),
        (config.shutdown_grace_s, "MNEMO_SHUTDOWN_GRACE", "2.5", 0, 5.0, 2.5, 0.0),
        (config.database_url, "MNEMO_DATABASE_URL", "postgresql://db/m", "postgres://a/b", None,
         "postgresql://db/m", "postgres://a/b"),
        (config.pg_append_commit, "MNEMO_PG_APPEND_COMMIT", "Async", "durable", "durable",
         "async", "durable"),
    ],
)  # fmt: skip
def test_argument_beats_environment_beats_default(
    monkeypatch, function, env_name, env_value, argument, default, from_env, from_argument
):
    assert function() == default
    monkeypatch.setenv(env_name, env_value)
    assert function() == from_env
    assert function(argument) == from_argument


def test_gemini_key_falls_back_to_google_api_key(monkeypatch):
    assert config.gemini_api_key() is None
    monkeypatch.setenv("GOOGLE_API_KEY", "google")
    assert config.gemini_api_key() == "google"
    monkeypatch.setenv("GEMINI_API_KEY", "gemini")
    assert config.gemini_api_key() == "gemini"
    assert config.gemini_api_key("arg") == "arg"
    monkeypatch.setenv("GEMINI_API_KEY", "  ")  # blank counts as unset
    assert config.gemini_api_key() == "google"


@pytest.mark.parametrize("raw", ["", "0"])
def test_quota_off(monkeypatch, raw):
    monkeypatch.setenv("MNEMO_QUOTA_PER_HOUR", raw)
    assert config.quota_per_hour() is None


@pytest.mark.parametrize(
    "function,env_name,raw,words",
    [
        (config.quota_per_hour, "MNEMO_QUOTA_PER_HOUR", "ten", "whole number"),
        (config.quota_per_hour, "MNEMO_QUOTA_PER_HOUR", "-1", "negative"),
        (config.port, "MNEMO_PORT", "http", "port number"),
        (config.port, "MNEMO_PORT", "70000", "between 0 and 65535"),
        (config.model_choice, "MNEMO_MODEL", "gpt", "gemini, local or auto"),
        (config.shutdown_grace_s, "MNEMO_SHUTDOWN_GRACE", "soon", "number of seconds"),
        (config.shutdown_grace_s, "MNEMO_SHUTDOWN_GRACE", "-1", "between 0 and 300"),
        (config.pg_append_commit, "MNEMO_PG_APPEND_COMMIT", "off", "durable or async"),
    ],
)
def test_bad_settings_say_what_is_wrong(monkeypatch, function, env_name, raw, words):
    monkeypatch.setenv(env_name, raw)
    with pytest.raises(ConfigError, match=words):
        function()


@pytest.mark.parametrize(
    "raw", ["mysql://u:hunter2@db/m", "sqlite:///data/m.db", "hunter2@localhost", "db.example.com"]
)
def test_database_url_must_be_postgresql_and_is_never_echoed(monkeypatch, raw):
    monkeypatch.setenv("MNEMO_DATABASE_URL", raw)
    with pytest.raises(ConfigError, match="must be a postgresql:// URL") as err:
        config.database_url()
    assert "hunter2" not in str(err.value) and "unset it" in str(err.value)


async def test_select_model(monkeypatch):
    assert isinstance(config.select_model(), LocalModel)  # auto, no key
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    monkeypatch.setenv("GEMINI_MODEL", "gemini-2.5-flash-lite")
    monkeypatch.setenv("GEMINI_BASE_URL", "http://127.0.0.1:9")
    model = config.select_model()
    assert isinstance(model, GeminiModel)
    assert (model.model_id, model.name, model.base_url) == (
        "gemini-2.5-flash-lite",
        "Gemini 2.5 Flash Lite",
        "http://127.0.0.1:9",
    )
    await model.aclose()
    monkeypatch.setenv("MNEMO_MODEL", "local")
    assert isinstance(config.select_model(), LocalModel)  # local even with a key
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        config.select_model("gemini")


def status(**overrides) -> MemoryStatus:
    values = dict(
        total=14,
        active=14,
        compacted=0,
        summaries=0,
        summary_covers=0,
        context_chars=3100,
        budget=12000,
        summarizing=False,
        retention_minutes=None,
        expires_at=None,
        degraded=False,
    )
    values.update(overrides)
    return MemoryStatus(**values)


@pytest.mark.parametrize(
    "overrides,expected",
    [
        ({}, "🧠 Remembering 14 messages · 3.1k/12k chars · Gemini 2.5 Flash"),
        (
            {"total": 101, "active": 14, "compacted": 87, "summaries": 1, "summary_covers": 87},
            "🧠 Remembering 14 messages · summary of 87 earlier · 3.1k/12k chars · "
            "Gemini 2.5 Flash",
        ),
        (
            {"total": 0, "active": 0, "context_chars": 0},
            "💤 Nothing remembered yet · Gemini 2.5 Flash",
        ),
        (
            {"active": 1, "context_chars": 950},
            "🧠 Remembering 1 message · 950/12k chars · Gemini 2.5 Flash",
        ),
        (
            {"summarizing": True},
            "🗜️ Summarizing… · Remembering 14 messages · 3.1k/12k chars · Gemini 2.5 Flash",
        ),
        ({"degraded": True}, "⚠️ Memory unavailable — answering without history · Gemini 2.5 Flash"),
        (
            {"retention_minutes": 30},
            "🧠 Remembering 14 messages · 3.1k/12k chars · Gemini 2.5 Flash · "
            "⏳ Forgets after 30 min idle",
        ),
    ],
)  # fmt: skip
def test_badge_text(overrides, expected):
    assert badge_text(status(**overrides), "Gemini 2.5 Flash") == expected


@pytest.mark.parametrize(
    "n,text", [(0, "0"), (950, "950"), (1000, "1k"), (3100, "3.1k"), (12000, "12k"),
               (1_250_000, "1.2M")],
)  # fmt: skip
def test_compact_number(n, text):
    assert compact_number(n) == text


@pytest.mark.parametrize(
    "minutes,text", [(30, "30 min"), (60, "1 h"), (90, "90 min"), (1440, "1 day"), (2880, "2 days")]
)
def test_idle_text(minutes, text):
    assert idle_text(minutes) == text


def test_the_runtime_runs_blas_on_one_thread(tmp_path):
    # Recall's matrix products run on the event loop: a second BLAS thread on a shared
    # 2-core machine cost more than it saved (assistant.runtime.one_blas_thread).
    from threadpoolctl import threadpool_info, threadpool_limits

    from assistant.runtime import Runtime

    with threadpool_limits(2, user_api="blas"):  # restored after
        Runtime(tmp_path, model=GeminiModel("k", base_url="http://127.0.0.1:9"), embedder=None)
        blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
        assert blas and all(lib["num_threads"] == 1 for lib in blas)
