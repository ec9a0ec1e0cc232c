# Sourced by .ci/run: starts a throwaway PostgreSQL for the contract tests of the PostgreSQL
# backend, exports MNEMO_TEST_DATABASE_URL, and stops it when the calling shell exits.
#
# Usage: source .ci/postgres.sh   (then run the tests; the EXIT trap stops the server)
# Works as root (CI: initdb refuses root, so the server runs as the `postgres` user) and as a
# normal user (the server runs as you).

_pg_started=$(date +%s.%N)

_pg_missing=()
for _pg_package in postgresql postgresql-contrib; do
  dpkg -s "$_pg_package" >/dev/null 2>&1 || _pg_missing+=("$_pg_package")
done
if [ "${#_pg_missing[@]}" -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${_pg_missing[@]}" >/dev/null
fi

# The newest installed server (Debian keeps the binaries off PATH, one folder per version).
_pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$_pg_bin" ] || [ ! -x "$_pg_bin/initdb" ]; then
  echo "postgres.sh: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin" >&2
  exit 1
fi

_pg_dir=$(mktemp -d -t mnemo-pg.XXXXXX)
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$_pg_dir"
  _pg_as() { runuser -u postgres -- "$@"; }
else
  _pg_as() { "$@"; }
fi

_pg_stop() {
  _pg_as "$_pg_bin/pg_ctl" -D "$_pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$_pg_dir"
}
trap _pg_stop EXIT

# UTF-8 with a UTF-8 ctype, or pg_trgm extracts no trigrams from Chinese text. A throwaway
# cluster need not be flushed to disk (--no-sync) unless MNEMO_PG_DURABLE=1 (see below).
_pg_sync=--no-sync
[ "${MNEMO_PG_DURABLE:-0}" = 1 ] && _pg_sync=
_pg_as "$_pg_bin/initdb" -D "$_pg_dir/data" -E UTF8 --locale=C.UTF-8 -A trust -U postgres \
  $_pg_sync >"$_pg_dir/initdb.log" 2>&1 || { cat "$_pg_dir/initdb.log" >&2; exit 1; }

_pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# A test server: durability off (fsync, full pages) because it is thrown away afterwards;
# MNEMO_PG_DURABLE=1 keeps PostgreSQL's defaults (for benchmarks). The socket lives in the temp
# dir, so nothing outside it is touched.
_pg_opts="-h 127.0.0.1 -p $_pg_port -k $_pg_dir -c max_connections=200"
if [ "${MNEMO_PG_DURABLE:-0}" != 1 ]; then
  _pg_opts="$_pg_opts -c fsync=off -c full_page_writes=off"
fi
_pg_as "$_pg_bin/pg_ctl" -D "$_pg_dir/data" -l "$_pg_dir/server.log" -w -t 60 -o "$_pg_opts" \
  start >/dev/null || { cat "$_pg_dir/server.log" >&2; exit 1; }
_pg_as "$_pg_bin/createdb" -h 127.0.0.1 -p "$_pg_port" -U postgres mnemo_test

export MNEMO_TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$_pg_port/mnemo_test"
echo "PostgreSQL $("$_pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$_pg_port," \
  "up in $(python3 -c "import time; print(f'{time.time() - $_pg_started:.1f}')") s"
