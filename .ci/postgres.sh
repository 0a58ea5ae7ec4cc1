# Sourced by .ci/run: install PostgreSQL from Debian packages if missing, start a throw-away
# server on 127.0.0.1 and export DSE_TEST_POSTGRES_URL for the tests (stopped on exit).
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
fi
PG_BIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
PG_DATA=$(mktemp -d /tmp/hetero-dse-pg.XXXXXX)
PG_PORT=${DSE_PG_PORT:-54329}
if [ "$(id -u)" = 0 ]; then
  chown postgres "$PG_DATA"
  pg_as() { runuser -u postgres -- "$@"; }
else
  pg_as() { "$@"; }
fi
pg_as "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U dse >/dev/null
pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DATA" start >/dev/null
pg_as "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U dse dse_test
export DSE_TEST_POSTGRES_URL="postgresql+psycopg2://dse@127.0.0.1:$PG_PORT/dse_test"
trap 'pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast stop >/dev/null 2>&1 || true; rm -rf "$PG_DATA"' EXIT
