#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of the PostgreSQL run store (issue 28).
#
#   bash tests/postgres/cluster.sh start DIR   # then: export AGENTEST_TEST_POSTGRES=$(cat DIR/url)
#   bash tests/postgres/cluster.sh start DIR CERT KEY  # the same, TCP over TLS only
#   bash tests/postgres/cluster.sh stop DIR
#   bash tests/postgres/cluster.sh restart DIR  # a stopped cluster, again
#
# `start` makes a cluster in DIR/data, listening on 127.0.0.1 only, on a free port, with
# a role `agentest` (password auth, scram-sha-256, a password generated here) and a
# database `agentest`; it waits until the server accepts connections, then writes the
# URL to DIR/url and the postmaster's PID to DIR/pid. `stop` stops that postmaster. DIR
# is left in place: remove it after `stop`. Takes a second or two: no fsync, C locale.
#
# PostgreSQL refuses to run as root, and CI and these machines run as root: then initdb
# and the server run as `nobody` (DIR is handed to it). Its Unix socket is in DIR, which
# only nobody (and root) can enter, so the socket trusts local connections; TCP needs
# the password.
#
# With CERT and KEY (PEM files: the server's certificate, its chain after it, and its
# key), the server has ssl = on with copies of them in DIR/data (the key 0600 and, as
# PostgreSQL demands, owned by the server's user) and pg_hba.conf's `host` lines become
# `hostssl`: a TCP connection without TLS is refused (the tests of sslmode and
# sslrootcert, tests/functional/postgres.rs).
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|restart DIR, or $0 start DIR CERT KEY" >&2
  exit 2
}
[ $# -eq 2 ] || { [ $# -eq 4 ] && [ "$1" = start ]; } || usage
cmd=$1
dir=$2
cert=${3:-}
key=${4:-}

# The server's programs: pg_config's folder when it has initdb (Debian's libpq-dev
# gives /usr/lib/postgresql/N/bin), else the newest /usr/lib/postgresql/N/bin.
bindir=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$bindir/initdb" ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [ ! -x "$bindir/initdb" ] || [ ! -x "$bindir/pg_ctl" ]; then
  echo "cluster.sh: no PostgreSQL server programs (initdb, pg_ctl) found; on Debian: apt-get install postgresql" >&2
  exit 1
fi

# Runs a command as the cluster's owner: nobody when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
  else
    "$@"
  fi
}

start() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -e "$dir/data" ]; then
    echo "cluster.sh: $dir/data exists; stop that cluster and remove $dir first" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ]; then
    chown nobody:nogroup "$dir"
  fi
  chmod 700 "$dir"

  # Letters and digits only: the password goes into a URL unescaped.
  password=$(head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24)
  # initdb reads the password from a file; it lives only until initdb has read it.
  pwfile="$dir/password"
  (umask 077 && printf '%s\n' "$password" >"$pwfile")
  [ "$(id -u)" -ne 0 ] || chown nobody:nogroup "$pwfile"
  if ! as_owner "$bindir/initdb" -D "$dir/data" -U agentest --pwfile="$pwfile" \
    --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C --no-sync \
    >"$dir/initdb.log" 2>&1; then
    rm -f "$pwfile"
    cat "$dir/initdb.log" >&2
    exit 1
  fi
  rm -f "$pwfile"

  if [ -n "$cert" ]; then
    install -m 644 "$cert" "$dir/data/server.crt"
    install -m 600 "$key" "$dir/data/server.key"
    if [ "$(id -u)" -eq 0 ]; then
      chown nobody:nogroup "$dir/data/server.crt" "$dir/data/server.key"
    fi
    cat >>"$dir/data/postgresql.conf" <<EOF
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
EOF
    # TCP over TLS only; the Unix socket (createdb below) stays as it is. As the owner:
    # sed -i writes a new file.
    as_owner sed -i 's/^host\([[:space:]]\)/hostssl\1/' "$dir/data/pg_hba.conf"
  fi

  # A free port: the kernel's pick for a socket bound to port 0, released at once (a
  # port taken in between makes the start fail, and we try another).
  local port tries=0
  while :; do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # Appended: on a retry the later lines win.
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
password_encryption = 'scram-sha-256'
# A throwaway cluster: speed over durability.
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null; then
      break
    fi
    tries=$((tries + 1))
    if [ "$tries" -ge 3 ]; then
      echo "cluster.sh: the server did not start; its log:" >&2
      cat "$dir/server.log" >&2
      exit 1
    fi
  done
  head -n 1 "$dir/data/postmaster.pid" >"$dir/pid"

  as_owner "$bindir/createdb" -h "$dir" -p "$port" -U agentest agentest
  printf 'postgres://agentest:%s@127.0.0.1:%s/agentest\n' "$password" "$port" >"$dir/url"
  chmod 600 "$dir/url"
  echo "cluster.sh: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (PID $(cat "$dir/pid")), data in $dir/data" >&2
}

# Whether process $1 runs (a zombie, exited but not yet reaped, does not).
running() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

stop() {
  if [ ! -f "$dir/pid" ]; then
    echo "cluster.sh: no $dir/pid: nothing to stop" >&2
    return 0
  fi
  local pid
  pid=$(cat "$dir/pid")
  if as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 10 stop >/dev/null 2>&1; then
    rm -f "$dir/pid"
    return 0
  fi
  # pg_ctl could not (a data folder gone, a server wedged): the postmaster by its PID,
  # if that PID is still a postgres process; SIGTERM is a smart shutdown, SIGQUIT an
  # immediate one.
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]; then
    local sig
    for sig in TERM QUIT KILL; do
      kill -"$sig" "$pid" 2>/dev/null || true
      for _ in $(seq 50); do
        running "$pid" || break 2
        sleep 0.1
      done
    done
  fi
  rm -f "$dir/pid"
}

# Starts a stopped cluster again, on the same port, with the same role and data.
restart() {
  dir=$(cd "$dir" && pwd)
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null
  head -n 1 "$dir/data/postmaster.pid" >"$dir/pid"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  *) usage ;;
esac
