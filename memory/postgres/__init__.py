"""The PostgreSQL backend: several app replicas share one memory. See store.py.

Needs psycopg 3 and psycopg_pool (requirements.txt) and the pg_trgm extension (in
postgresql-contrib, and on managed servers). Opened by `memory.open_store("postgresql://...")`.
"""

from .store import PostgresStore

__all__ = ["PostgresStore"]
