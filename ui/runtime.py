"""Moved: the composition root is `assistant.runtime.Runtime`, the data dir and the listen address
are `assistant.config.data_dir()` and `assistant.config.host()`. These names stay only until the
UI panels call the `Conversations` facade (the next step of issue 10); do not add to them."""

from assistant.config import data_dir as app_data_dir
from assistant.config import host as server_host
from assistant.runtime import Runtime

__all__ = ["Runtime", "app_data_dir", "server_host"]
