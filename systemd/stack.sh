#!/usr/bin/env bash
# Starts or stops the whole STOL stack for development, exactly as systemd would
# run it: every daemon behind `systemd-socket-activate` (the verifier once per
# connection, like Accept=yes), sockets and state inside the checkout.
#
#   systemd/stack.sh start BIN_DIR DATABASE   # BIN_DIR holds the stol-* binaries
#   systemd/stack.sh stop
#   systemd/stack.sh status                   # exit 0 when all four are up, 3 otherwise
#
# Sockets: $STOL_RUNTIME_DIR (default ./run), state: $STOL_STATE_DIR (default ./state).
# STOL_TRUSTED_KEY (the public key file the verifier trusts; `make start` sets it to
# the development key `make build-db` signs with), STOL_ALLOW_FORMAT_1 (yes: importd
# installs format version 1 files, the weaker guarantee) and TMPDIR are passed through
# when set, and so are the test-only STOL_TEST_PAUSE_AT / STOL_TEST_PAUSE_FILE, which
# only binaries built with the test hooks honour (the debug build the integration
# tests run; the release build of `make start` has no hooks and ignores them).
#
# Socket modes: systemd-socket-activate binds every socket 0644, whatever the
# umask, and chmod afterwards would leave a moment in which other users get
# EACCES. So systemd/listen-socket.py binds each socket with the units'
# SocketMode= already in place (under the matching umask) and execs
# systemd-socket-activate with it as a passed descriptor.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
runtime=${STOL_RUNTIME_DIR:-$top/run}
state=${STOL_STATE_DIR:-$top/state}
# Absolute: `status` finds each socket in /proc/net/unix by the path it was bound to.
[[ $runtime = /* ]] || runtime=$PWD/$runtime
[[ $state = /* ]] || state=$PWD/$state

# name  socket-mode  extra activation flags
daemons=("taxonomy 0666" "favorites 0666" "import 0660" "verify 0600 --accept")

# Whether process $1 is alive: it exists and is not a zombie. `kill -0` alone is
# not enough: a killed daemon whose parent does not reap it (PID 1 of a
# container, for one) stays a zombie, and `kill -0` still succeeds on it.
alive() {
  local process_state
  process_state=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $process_state && $process_state != Z && $process_state != X ]]
}

# Whether process $1 is this stack's process for daemon $2: until its first
# connection the activator (systemd-socket-activate, or listen-socket.py for the
# moment before it execs it), afterwards the daemon itself (the same pid: each
# execs the next). A pid file outliving its process may name an unrelated one.
expected() {
  local exe
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  # A binary rebuilt since the daemon started reads "…/stol-taxonomyd (deleted)":
  # still this stack's daemon (`make restart` after a build must stop it).
  exe=${exe% (deleted)}
  case ${exe##*/} in
    "stol-$2d" | systemd-socket-activate | python3*) return 0 ;;
    *) return 1 ;;
  esac
}

# Whether process $1 holds the listening socket bound at path $2: its inode in
# /proc/net/unix (flag 00010000 = listening; the path follows the 7th field and
# may hold spaces) is one of the process's descriptors. Nothing connects to it,
# so asking never starts a daemon.
holds_listener() {
  local inode fd
  for inode in $(awk -v path="$2" '$4 == "00010000" {
      bound = $0; for (i = 0; i < 7; i++) sub(/^[^ ]+ +/, "", bound)
      if (bound == path) print $7 }' /proc/net/unix); do
    for fd in /proc/"$1"/fd/*; do
      [[ $(readlink "$fd" 2>/dev/null) == "socket:[$inode]" ]] && return 0
    done
  done
  return 1
}

stop() {
  local stopped=0
  for entry in "${daemons[@]}"; do
    set -- $entry
    local pidfile=$runtime/$1.pid
    if [[ -f $pidfile ]]; then
      local pid
      pid=$(cat "$pidfile")
      # Only this stack's own process: a stale pid file may name another one.
      if alive "$pid" && expected "$pid" "$1" && holds_listener "$pid" "$runtime/$1.sock"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
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
  command -v python3 >/dev/null || { echo "python3 not found (apt-get install python3)" >&2; exit 1; }
  [[ -f $database ]] || { echo "database $database not found (make db)" >&2; exit 1; }
  mkdir -p "$runtime" "$state"
  stop >/dev/null
  for entry in "${daemons[@]}"; do
    set -- $entry
    local name=$1 mode=$2
    shift 2
    # setsid: the stack outlives the shell that started it; `make stop` ends it.
    local passed=()
    for variable in STOL_TRUSTED_KEY STOL_ALLOW_FORMAT_1 TMPDIR STOL_TEST_PAUSE_AT STOL_TEST_PAUSE_FILE; do
      [[ -n ${!variable:-} ]] && passed+=(-E "$variable=${!variable}")
    done
    # The taxonomy server's tree images, as systemd's CacheDirectory= would hand them over.
    [[ $name == taxonomy ]] && passed+=(-E "CACHE_DIRECTORY=$state/cache/taxonomy")
    # The socket is bound with its final mode before systemd-socket-activate
    # runs (see the top of this file); no chmod follows.
    setsid python3 "$top/systemd/listen-socket.py" "$runtime/$name.sock" "$mode" \
      systemd-socket-activate "$@" --fdname="$name" \
      -E STOL_RUNTIME_DIR="$runtime" -E STOL_STATE_DIR="$state" -E STOL_BUNDLED_DB="$database" \
      -E STOL_LOG_LEVEL="${STOL_LOG_LEVEL:-info}" "${passed[@]}" \
      "$bin/stol-${name}d" >>"$runtime/$name.log" 2>&1 < /dev/null &
    echo $! > "$runtime/$name.pid"
    # Listening, not merely bound: a connect between bind(2) and listen(2) is refused, and
    # on a busy machine the activator can wait there for a while (up to 30 s here).
    local pid=$! waited
    for waited in $(seq 600); do holds_listener "$pid" "$runtime/$name.sock" && break; sleep 0.05; done
    holds_listener "$pid" "$runtime/$name.sock" ||
      { echo "stol-${name}d did not come up; see $runtime/$name.log" >&2; exit 1; }
  done
  echo "started 4 daemons (socket-activated: each starts on its first connection); sockets in $runtime"
}

# One line per daemon. "listening" only when the pid of its pid file is alive, is
# this stack's process for that daemon, and holds the socket listening at its
# path; anything less is "not running", saying what is wrong. Exit status as
# LSB init scripts: 0 when all four listen, 3 when any does not.
status() {
  local down=0
  for entry in "${daemons[@]}"; do
    set -- $entry
    local name=$1 pidfile=$runtime/$1.pid socket=$runtime/$1.sock pid=
    [[ -f $pidfile ]] && pid=$(cat "$pidfile")
    if [[ -z $pid ]]; then
      echo "$name: not running"
    elif ! alive "$pid"; then
      echo "$name: not running (pid $pid has exited; make restart)"
    elif ! expected "$pid" "$name"; then
      echo "$name: not running (pid $pid is another program now; make restart)"
    elif ! holds_listener "$pid" "$socket"; then
      echo "$name: not running (pid $pid does not listen on $socket; make restart)"
    else
      local what="waiting for its first connection"
      [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */stol-${name}d ]] && what="daemon started"
      [[ $name == verify ]] && what="one verifier per connection"
      echo "$name: listening on $socket (pid $pid, $what)"
      continue
    fi
    down=$((down + 1))
  done
  return $((down > 0 ? 3 : 0))
}

case ${1:-} in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start BIN_DIR DATABASE | stop | status" >&2; exit 2 ;;
esac
