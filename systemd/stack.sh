#!/usr/bin/env bash
# Starts or stops the whole STOL stack for development, exactly as systemd would
# run it: every daemon behind `systemd-socket-activate` (the verifier once per
# connection, like Accept=yes), sockets and state inside the checkout.
#
#   systemd/stack.sh start BIN_DIR DATABASE   # BIN_DIR holds the stol-* binaries
#   systemd/stack.sh stop
#   systemd/stack.sh status
#
# Sockets: $STOL_RUNTIME_DIR (default ./run), state: $STOL_STATE_DIR (default ./state).
# STOL_TRUSTED_KEY (the public key file the verifier trusts; `make start` sets it to
# the development key `make build-db` signs with) and TMPDIR are passed through
# when set, and so are the test-only STOL_TEST_PAUSE_AT / STOL_TEST_PAUSE_FILE.
# systemd-socket-activate cannot set socket modes, so this script applies the
# units' SocketMode= values itself once the sockets exist.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
runtime=${STOL_RUNTIME_DIR:-$top/run}
state=${STOL_STATE_DIR:-$top/state}

# name  socket-mode  extra activation flags
daemons=("taxonomy 0666" "favorites 0666" "import 0660" "verify 0600 --accept")

stop() {
  local stopped=0
  for entry in "${daemons[@]}"; do
    set -- $entry
    local pidfile=$runtime/$1.pid
    if [[ -f $pidfile ]]; then
      local pid
      pid=$(cat "$pidfile")
      if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        stopped=$((stopped + 1))
      fi
      rm -f "$pidfile"
    fi
    rm -f "$runtime/$1.sock"
  done
  echo "stopped $stopped daemon(s)"
}

start() {
  local bin=${1:?usage: stack.sh start BIN_DIR DATABASE} database=${2:?usage: stack.sh start BIN_DIR DATABASE}
  bin=$(cd "$bin" && pwd)
  database=$(cd "$(dirname "$database")" && pwd)/$(basename "$database")
  command -v systemd-socket-activate >/dev/null || { echo "systemd-socket-activate not found (apt-get install systemd)" >&2; exit 1; }
  [[ -f $database ]] || { echo "database $database not found (make db)" >&2; exit 1; }
  mkdir -p "$runtime" "$state"
  stop >/dev/null
  for entry in "${daemons[@]}"; do
    set -- $entry
    local name=$1 mode=$2
    shift 2
    # setsid: the stack outlives the shell that started it; `make stop` ends it.
    local passed=()
    for variable in STOL_TRUSTED_KEY TMPDIR STOL_TEST_PAUSE_AT STOL_TEST_PAUSE_FILE; do
      [[ -n ${!variable:-} ]] && passed+=(-E "$variable=${!variable}")
    done
    setsid systemd-socket-activate "$@" --listen="$runtime/$name.sock" --fdname="$name" \
      -E STOL_RUNTIME_DIR="$runtime" -E STOL_STATE_DIR="$state" -E STOL_BUNDLED_DB="$database" \
      -E STOL_LOG_LEVEL="${STOL_LOG_LEVEL:-info}" "${passed[@]}" \
      "$bin/stol-${name}d" >>"$runtime/$name.log" 2>&1 < /dev/null &
    echo $! > "$runtime/$name.pid"
    for _ in $(seq 100); do [[ -S $runtime/$name.sock ]] && break; sleep 0.05; done
    [[ -S $runtime/$name.sock ]] || { echo "stol-${name}d did not come up; see $runtime/$name.log" >&2; exit 1; }
    chmod "$mode" "$runtime/$name.sock"
  done
  echo "started 4 daemons (socket-activated: each starts on its first connection); sockets in $runtime"
}

status() {
  for entry in "${daemons[@]}"; do
    set -- $entry
    local pidfile=$runtime/$1.pid
    if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "$1: listening on $runtime/$1.sock (pid $(cat "$pidfile"))"
    else
      echo "$1: not running"
    fi
  done
}

case ${1:-} in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start BIN_DIR DATABASE | stop | status" >&2; exit 2 ;;
esac
