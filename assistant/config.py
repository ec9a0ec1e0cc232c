"""Settings, one function each. Lookup order everywhere: argument > environment > default.

MNEMO_DATA_DIR        where the database and saved personas live       (/data on a Space, ./data)
MNEMO_MODEL           gemini | local | auto                            (auto)
GEMINI_API_KEY        Gemini key; GOOGLE_API_KEY is read when it is unset
GEMINI_MODEL          Gemini model id                                  (gemini-2.5-flash)
GEMINI_BASE_URL       another endpoint for the Gemini API (tests use a local fake)
MNEMO_QUOTA_PER_HOUR  messages per owner per hour; unset, empty or 0 = no quota
MNEMO_HOST            address the app listens on              (0.0.0.0 on a Space, 127.0.0.1)
MNEMO_PORT            port the app listens on                          (7860)
MNEMO_SECRET          secret for owner ids; unset = generated once in the data dir
MNEMO_SHUTDOWN_GRACE  seconds a streaming reply may take to finish on SIGTERM     (5)
MNEMO_SSE_HEARTBEAT   seconds of model silence before an API stream sends a keep-alive (15)
MNEMO_DATABASE_URL    postgresql:// URL: memory shared by several replicas (unset: SQLite)
MNEMO_PG_APPEND_COMMIT  durable | async: whether PostgreSQL appends wait for their WAL flush
                      (durable; async is an opt-in that can lose the last moment's messages)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from .errors import ConfigError
from .gemini import DEFAULT_MODEL, KEY_HELP
from .models import ChatModel

ModelChoice = Literal["gemini", "local", "auto"]
# A Hugging Face Space's persistent storage, when the Space has it.
SPACE_DATA_DIR = Path("/data")


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def on_space() -> bool:
    """True when running on a Hugging Face Space ($SPACE_ID is set there)."""
    return _env("SPACE_ID") is not None


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The data directory, the one resolver every layer uses: argument, else $MNEMO_DATA_DIR,
    else /data on a Space with persistent storage, else ./data."""
    if path is not None:
        return Path(path)
    configured = _env("MNEMO_DATA_DIR")
    if configured:
        return Path(configured)
    if on_space() and SPACE_DATA_DIR.is_dir():
        return SPACE_DATA_DIR
    return Path("data")


def model_choice(choice: str | None = None) -> ModelChoice:
    """Which model to use: argument, else $MNEMO_MODEL, else 'auto' (Gemini when a key is set,
    otherwise the offline model)."""
    value = (choice or _env("MNEMO_MODEL") or "auto").lower()
    if value not in ("gemini", "local", "auto"):
        raise ConfigError(f"MNEMO_MODEL must be gemini, local or auto, not {value!r}.")
    return value  # type: ignore[return-value]


def gemini_api_key(key: str | None = None) -> str | None:
    """The Gemini key: argument, else $GEMINI_API_KEY, else $GOOGLE_API_KEY, else None."""
    return key or _env("GEMINI_API_KEY") or _env("GOOGLE_API_KEY")


def gemini_model(model: str | None = None) -> str:
    """The Gemini model id: argument, else $GEMINI_MODEL, else gemini-2.5-flash."""
    return model or _env("GEMINI_MODEL") or DEFAULT_MODEL


def gemini_base_url(url: str | None = None) -> str | None:
    """Another Gemini endpoint: argument, else $GEMINI_BASE_URL, else None (Google's)."""
    return url or _env("GEMINI_BASE_URL")


def quota_per_hour(quota: int | str | None = None) -> int | None:
    """Messages per owner per hour: argument, else $MNEMO_QUOTA_PER_HOUR; None or 0 = no quota."""
    raw = quota if quota is not None else _env("MNEMO_QUOTA_PER_HOUR")
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(
            f"MNEMO_QUOTA_PER_HOUR must be a whole number of messages, not {raw!r}."
        ) from None
    if value < 0:
        raise ConfigError(f"MNEMO_QUOTA_PER_HOUR cannot be negative ({value}).")
    return value or None


def host(value: str | None = None) -> str:
    """Listen address: argument, else $MNEMO_HOST, else 0.0.0.0 on a Space (its proxy must
    reach the app), else 127.0.0.1."""
    return value or _env("MNEMO_HOST") or ("0.0.0.0" if on_space() else "127.0.0.1")


def port(value: int | str | None = None) -> int:
    """Listen port: argument, else $MNEMO_PORT, else 7860."""
    raw = value if value is not None else _env("MNEMO_PORT") or 7860
    try:
        number = int(raw)
    except ValueError:
        raise ConfigError(f"MNEMO_PORT must be a port number, not {raw!r}.") from None
    if not 0 <= number <= 65535:
        raise ConfigError(f"MNEMO_PORT must be between 0 and 65535, not {number}.")
    return number


def shutdown_grace_s(value: float | str | None = None) -> float:
    """On SIGTERM, how long replies still streaming may take to finish before they are saved as
    incomplete: argument, else $MNEMO_SHUTDOWN_GRACE, else 5 seconds."""
    return _seconds("MNEMO_SHUTDOWN_GRACE", value, 5, zero_ok=True)


def sse_heartbeat_s(value: float | str | None = None) -> float:
    """How long an API reply stream may stay silent (the model thinking) before it sends a
    keep-alive comment, so proxies keep the connection: argument, else $MNEMO_SSE_HEARTBEAT,
    else 15 seconds."""
    return _seconds("MNEMO_SSE_HEARTBEAT", value, 15, zero_ok=False)


def _seconds(
    name: str, value: float | str | None, default: float, *, zero_ok: bool, most: float = 300
) -> float:
    """A number of seconds from `value`, else $name, else `default`; at most `most`, and 0 only
    when `zero_ok`."""
    raw = value if value is not None else _env(name) or default
    try:
        seconds = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds, not {raw!r}.") from None
    if not ((seconds >= 0 if zero_ok else seconds > 0) and seconds <= most):
        bounds = "between 0 and" if zero_ok else "above 0 and at most"
        raise ConfigError(f"{name} must be {bounds} {most:g} seconds, not {raw}.")
    return seconds


def secret(value: str | None = None) -> str | None:
    """Owner-id secret: argument, else $MNEMO_SECRET, else None (the app generates one)."""
    return value or _env("MNEMO_SECRET")


def admin_token(value: str | None = None) -> str | None:
    """The operator's API token for POST /api/v1/personas/refresh: argument, else
    $MNEMO_ADMIN_TOKEN, else None (then any user's token may refresh the built-ins)."""
    return value or _env("MNEMO_ADMIN_TOKEN")


def pg_append_commit(value: str | None = None) -> str:
    """How appends commit on PostgreSQL: argument, else $MNEMO_PG_APPEND_COMMIT, else
    "durable" (each waits for its WAL flush); "async" does not wait (README, Scaling out)."""
    choice = (value or _env("MNEMO_PG_APPEND_COMMIT") or "durable").lower()
    if choice not in ("durable", "async"):
        raise ConfigError(
            f"MNEMO_PG_APPEND_COMMIT must be durable or async, not {choice!r}; unset it for "
            "durable."
        )
    return choice


def database_url(url: str | None = None) -> str | None:
    """Where memory lives when several replicas share it: argument, else $MNEMO_DATABASE_URL,
    else None (SQLite in the data dir). Only postgresql:// and postgres:// URLs."""
    value = url or _env("MNEMO_DATABASE_URL")
    if value is None:
        return None
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    if scheme not in ("postgresql", "postgres"):
        # Never echo the value: it may hold a password.
        raise ConfigError(
            "MNEMO_DATABASE_URL must be a postgresql:// URL, for example "
            "postgresql://user:password@host:5432/mnemo; unset it to keep memory in SQLite "
            "in the data dir."
        )
    return value


def select_model(
    choice: str | None = None,
    *,
    api_key: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
) -> ChatModel:
    """The chat model to use, from arguments and the environment.

    auto: Gemini when a key is set, else the embedded offline model. gemini without a key is an
    error (silently answering with a 135M model instead would mislead). The offline model is
    created here but loads lazily, on its first reply.
    """
    which = model_choice(choice)
    key = gemini_api_key(api_key)
    if which == "gemini" and not key:
        raise ConfigError(f"MNEMO_MODEL=gemini needs an API key. {KEY_HELP}.")
    if which == "gemini" or (which == "auto" and key):
        from .gemini import GeminiModel

        return GeminiModel(key or "", gemini_model(model), base_url=gemini_base_url(base_url))
    from .local import LocalModel

    return LocalModel()
