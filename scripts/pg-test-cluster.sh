#!/usr/bin/env bash
# pg-test-cluster.sh start|stop DIR: a throw-away PostgreSQL cluster for the
# tests (issue 16: every store test runs on both engines, and the replica
# e2e on a real server). No root service: the cluster lives in DIR/data,
# listens only on a Unix socket in DIR/sock, trusts local connections, and
# runs without fsync (it holds nothing that must survive the run). DIR/conninfo
# gets the libpq URI of its postgres database, or "none" when Debian's
# postgresql is not installed (the tests then skip, saying so; CI sets
# FLEET_REQUIRE_PG=1 and they fail instead).
#
# initdb and postgres refuse to run as root: as root, the cluster is the
# postgres user's (Debian's package creates it), DIR opened to it.
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case $cmd in
start)
  mkdir -p "$dir"
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo none > "$dir/conninfo"
    echo "pg-test-cluster: no PostgreSQL server installed (Debian: postgresql); store tests on PostgreSQL will skip" >&2
    exit 0
  fi
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir/data" "$dir/sock"
  mkdir -p "$dir/sock"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "pg-test-cluster: no postgres user to run the server as" >&2; exit 1; }
    chown postgres "$dir" "$dir/sock"
    # the server must reach DIR: each directory above it searchable
    p=$dir; while [ "$p" != / ]; do p=$(dirname "$p"); chmod o+x "$p" 2>/dev/null || true; done
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync \
    --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
shared_buffers = 32MB
CONF
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "postgresql:///postgres?host=$dir/sock&user=postgres" > "$dir/conninfo"
  echo "pg-test-cluster: started in $dir ($($bin/postgres --version))"
  ;;
stop)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$dir/data" "$dir/sock"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
