# Sourced by the systemd boot tests (test-under-systemd.sh: a `make install-files`
# tree; test-deb-under-systemd.sh: the Debian packages): boots systemd 252 as PID 1
# in private namespaces on a throw-away copy-on-write view of /, and gives the test
# the helpers that run and check commands inside the booted system.
#
# Nothing is written to the host: every mount lives in a new mount namespace
# that dies with the test, and the root systemd boots into is an overlay whose
# upper layer is a tmpfs (so /etc/passwd, /etc/systemd/system, /var/lib/stol,
# /var/lib/dpkg, the journal ... are all copies). /proc/sys is read-only and the
# UTS, IPC, network, PID and cgroup namespaces are private, so systemd cannot change
# the hostname, sysctls or the host's cgroups either. The only host-side traces are
# a temporary directory and one empty cgroup, both removed on exit (trap),
# whatever happens.
#
# The sourcing script sets, before using anything here:
#   test_name  the prefix of its messages (SKIPPED, FAILED, warnings)
#   self       its own path: stage 2 runs `bash "$self" __boot "$tmp" ARGS...`
#   target     the unit it boots into (written by boot_populate_root)
# and calls, on the host: boot_preflight TOOL..., boot_setup, then boot_start ARGS...
# (after preparing $tmp); in stage 2: boot_mount_root, boot_populate_root,
# boot_exec_systemd (with its own steps between them).

mask_keep=" systemd-journald.service systemd-journald.socket systemd-journald-dev-log.socket "

# ---------------------------------------------------------------------------
# Stage 2: runs as PID 1 of the new PID namespace, inside the new mount
# namespace. Builds the root, then becomes systemd.
# ---------------------------------------------------------------------------

# boot_mount_root TMP: the host's / with every write going to a tmpfs, at $root (TMP/root).
boot_mount_root() {
  tmp=$1
  root=$tmp/root
  set -x
  mount -t tmpfs -o mode=0755 stol-rw "$tmp/rw"
  mkdir "$tmp/rw/upper" "$tmp/rw/work"
  mount -t overlay -o "lowerdir=/,upperdir=$tmp/rw/upper,workdir=$tmp/rw/work" stol-root "$root"
}

# boot_populate_root: no toolchain, API file systems, only the test's units.
boot_populate_root() {
  # No Swift toolchain in the booted system: the installed binaries must not need one.
  if [[ -d $root/opt/swift ]]; then mount -t tmpfs -o mode=0755 stol-no-toolchain "$root/opt/swift"; fi

  # API file systems, as a container manager provides them.
  mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
  local p node
  for p in sys sysrq-trigger; do
    [[ -e $root/proc/$p ]] || continue
    mount --bind "$root/proc/$p" "$root/proc/$p"
    mount -o remount,bind,ro "$root/proc/$p"
  done
  mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
  # Rooted at our own cgroup (cgroup namespace): systemd manages only that subtree.
  mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
  mount -t tmpfs -o mode=0755,nosuid,strictatime stol-dev "$root/dev"
  for node in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
    set -- $node
    mknod -m 0666 "$root/dev/$1" c "$2" "$3"
  done
  mkdir -m 0755 "$root/dev/pts" && mkdir -m 1777 "$root/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec devpts "$root/dev/pts"
  ln -s pts/ptmx "$root/dev/ptmx"
  ln -s /proc/self/fd "$root/dev/fd"
  ln -s /proc/self/fd/0 "$root/dev/stdin"; ln -s /proc/self/fd/1 "$root/dev/stdout"; ln -s /proc/self/fd/2 "$root/dev/stderr"
  mount -t tmpfs -o mode=1777,nosuid,nodev stol-shm "$root/dev/shm"
  mount -t tmpfs -o mode=0755,nosuid,nodev stol-run "$root/run"
  mount -t tmpfs -o mode=1777,nosuid,nodev stol-tmp "$root/tmp"

  # Only our units: the host's enablement links are hidden, every unit the
  # distribution pulls into early boot is masked but journald, and generators
  # (fstab, getty, sysv ...) are disabled.
  mount -t tmpfs -o mode=0755 stol-units "$root/etc/systemd/system"
  printf '[Unit]\nDescription=STOL boot test: stol.target and nothing else\nWants=stol.target\nAfter=stol.target\nAllowIsolate=yes\n' \
    > "$root/etc/systemd/system/$target"
  ln -s "$target" "$root/etc/systemd/system/default.target"
  local unit name generator
  for unit in "$root"/usr/lib/systemd/system/*.target.wants/*; do
    name=${unit##*/}
    if [[ $mask_keep != *" $name "* && ! -e $root/etc/systemd/system/$name ]]; then
      ln -s /dev/null "$root/etc/systemd/system/$name"
    fi
  done
  mkdir -p "$root/etc/systemd/system-generators"
  for generator in "$root"/usr/lib/systemd/system-generators/* "$root"/usr/local/lib/systemd/system-generators/*; do
    if [[ -e $generator ]]; then ln -sf /dev/null "$root/etc/systemd/system-generators/${generator##*/}"; fi
  done
}

# boot_exec_systemd: the root becomes / and this process systemd.
boot_exec_systemd() {
  mkdir "$root/.stol-old-root"
  cd "$root"
  pivot_root . .stol-old-root
  umount -l /.stol-old-root
  rmdir /.stol-old-root
  set +x
  exec env -i container=stol-test /lib/systemd/systemd --system --unit="$target" --show-status=no
}

# ---------------------------------------------------------------------------
# Stage 1: on the host.
# ---------------------------------------------------------------------------
# skip: this machine cannot boot systemd in namespaces (Tests/tools/expected-skips.tsv names the reasons
# make test expects, and where); missing: a prerequisite `make deps` installs is not there, a failure.
skip() { echo "$test_name: SKIPPED: $*" >&2; exit 77; }
missing() { echo "$test_name: FAILED: $* is not installed (make deps installs it)" >&2; exit 1; }
started=${EPOCHREALTIME/./}
progress() {
  local ms=$(( (${EPOCHREALTIME/./} - started) / 1000 ))
  printf '[%3d.%02ds] %s\n' $((ms / 1000)) $((ms % 1000 / 10)) "$*"
}

# boot_preflight TOOL...: exits 77 where systemd cannot run as PID 1 here, 1 when a tool is missing; sets cgroup_root.
boot_preflight() {
  [[ $(id -u) == 0 ]] || skip "needs root to boot systemd as PID 1 in namespaces"
  local tool
  for tool in unshare nsenter setpriv pivot_root systemctl timeout "$@"; do
    command -v "$tool" >/dev/null || missing "$tool"
  done
  [[ -x /lib/systemd/systemd ]] || missing "/lib/systemd/systemd (Debian's systemd)"
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || skip "no overlayfs"
  grep -qw overlay /proc/filesystems || skip "no overlayfs"
  if [[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) == cgroup2fs ]]; then
    cgroup_root=/sys/fs/cgroup
  elif [[ $(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null) == cgroup2fs ]]; then
    cgroup_root=/sys/fs/cgroup/unified
  else
    skip "no cgroup2 hierarchy mounted"
  fi
  unshare --mount --pid --fork --uts --ipc --net --cgroup true 2>/dev/null || skip "unshare cannot create namespaces here"
  local probe
  probe=$(mktemp -d /tmp/stol-systemd-probe.XXXXXX)
  unshare --mount --propagation private /bin/sh -c "
    mount -t tmpfs probe '$probe' && mkdir '$probe/u' '$probe/w' '$probe/m' '$probe/c' &&
    mount -t overlay -o lowerdir=/,upperdir='$probe/u',workdir='$probe/w' probe '$probe/m' &&
    mount -t cgroup2 probe '$probe/c'" 2>/dev/null || { rm -rf "$probe"; skip "cannot mount tmpfs, overlayfs over / and cgroup2 in a mount namespace"; }
  rm -rf "$probe"
}

# boot_setup: the work directory $tmp, the cgroup's name, a deadline
# (STOL_SYSTEMD_TEST_DEADLINE, default $1 or 180 s) and the cleanup on exit.
boot_setup() {
  tmp=$(mktemp -d /tmp/stol-systemd.XXXXXX)
  chmod 0755 "$tmp"
  mkdir "$tmp/rw" "$tmp/root"
  cgroup=$cgroup_root/stol-systemd-test.${tmp##*.}
  unshare_pid=
  systemd_pid=
  # A deadline of our own, so that the cleanup below always gets to run before
  # any caller's timeout kills us (commands inside are limited to 30 s each).
  deadline=${STOL_SYSTEMD_TEST_DEADLINE:-${1:-180}}
  ( trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep "$deadline" & sleeper=$!
    wait "$sleeper" && kill -TERM $$ ) < /dev/null > /dev/null 2>&1 &
  watchdog_pid=$!
  trap boot_cleanup EXIT
  trap 'echo "$test_name: FAILED: interrupted, or still running after $deadline s" >&2; exit 1' INT TERM
}

boot_cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $unshare_pid ]] && kill -0 "$unshare_pid" 2>/dev/null; then
    # Ask politely, then end the namespace: its PID 1 dies, and with it every process in it.
    [[ -n $systemd_pid ]] && kill -RTMIN+4 "$systemd_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$unshare_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$unshare_pid" 2>/dev/null || true
    [[ -n $systemd_pid ]] && kill -KILL "$systemd_pid" 2>/dev/null || true
  fi
  [[ -n $unshare_pid ]] && wait "$unshare_pid" 2>/dev/null || true
  if [[ -d $cgroup ]]; then
    for _ in $(seq 50); do
      find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [[ -d $cgroup ]] || break
      sleep 0.1
    done
    [[ -d $cgroup ]] && echo "$test_name: warning: could not remove $cgroup" >&2
  fi
  rm -rf "$tmp"
  kill "$watchdog_pid" 2>/dev/null || true
  exit "$status"
}

# Runs a command inside the booted system (all its namespaces and its root).
# INSIDE_TIMEOUT (default 30 s) bounds it.
inside() {
  timeout "${INSIDE_TIMEOUT:-30}" nsenter --target "$systemd_pid" --all --root --wd -- \
    /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    SYSTEMD_PAGER=cat SYSTEMD_COLORS=0 "$@"
}

diagnostics() {
  [[ -n $systemd_pid ]] && kill -0 "$systemd_pid" 2>/dev/null || {
    echo "--- boot log"; cat "$tmp/boot.log" 2>/dev/null | tail -60; return; }
  echo "--- systemctl list-units --all 'stol*'"
  inside systemctl --no-pager list-units --all 'stol*' 2>&1 || true
  echo "--- systemctl --failed"
  inside systemctl --no-pager --failed 2>&1 || true
  echo "--- journal (last 80 lines)"
  inside journalctl --no-pager -b -n 80 2>&1 || true
}

fail() {
  echo "$test_name: FAILED: $*" >&2
  diagnostics >&2
  exit 1
}

# Runs a command inside, keeping its output in $out and its status in $rc.
capture() {
  rc=0
  out=$(inside "$@" 2>&1) || rc=$?
}

# expect STATUS DESCRIPTION COMMAND...: the command inside must end with STATUS.
expect() {
  local want=$1 what=$2
  shift 2
  capture "$@"
  [[ $rc == "$want" ]] || fail "$what: expected exit $want, got $rc: $out"
  progress "ok: $what (exit $rc)"
}

property() { inside systemctl show --value -p "$2" "$1"; }

# exec_mounts PID: the mount points of PID's mount namespace not mounted noexec, one a line
# (of mounts stacked on one point, the last: the one seen there).
exec_mounts() {
  inside cat "/proc/$1/mountinfo" |
    awk '{ executable[$5] = ($6 !~ /(^|,)noexec(,|$)/) } END { for (m in executable) if (executable[m]) print m }' | sort
}

# check_exec_mounts NAME UNIT MOUNTS: every mount (one a line) is a path of the unit's
# ExecPaths= (the daemon and the libraries of its exec-paths.conf), links resolved.
check_exec_mounts() {
  local allowed="" path
  for path in $(property "$2" ExecPaths); do allowed+="$(inside readlink -f "${path#-}") "; done
  python3 - "$1" "$3" "$allowed" <<'PYTHON' || fail "$1: a mount other than its ExecPaths= is executable (see above)"
import sys
name, mounts, allowed = sys.argv[1], sys.argv[2].split(), set(sys.argv[3].split())
if not allowed or not mounts:
    print(f"    {name}: ExecPaths={sorted(allowed)} executable mounts={mounts}  <- the check is not testing what it should")
    sys.exit(1)
stray = [m for m in mounts if m not in allowed]
print(f"    {name}: {len(mounts)} executable mounts, all in ExecPaths= ({len(allowed)} paths)" if not stray else
      f"    {name}: executable mounts outside ExecPaths=: {stray}  <- MUST BE NOEXEC")
sys.exit(1 if stray else 0)
PYTHON
}

# expect_quiet_start WHAT: what the STOL units logged since boot holds no warning, error or
# critical line, and no library's complaint (libdispatch's "Failed to set thread priority",
# the watchdog's "no more watchdog pings"): a normal start and normal use are quiet.
expect_quiet_start() {
  local noisy
  noisy=$(inside journalctl --no-pager -b -o cat -u 'stol-*' |
          grep -E '^[0-9T:+-]+ (warning|error|critical) |Failed to set thread priority|watchdog' || true)
  [[ -z $noisy ]] || fail "$1: the journal is not quiet:"$'\n'"$noisy"
  progress "ok: $1: no warning, error or library complaint in the STOL units' journal"
}

# expect_property UNIT PROPERTY VALUE
expect_property() {
  local value
  value=$(property "$1" "$2")
  [[ $value == "$3" ]] || fail "$1: $2 is '$value', expected '$3'"
}

property_is() { [[ $(property "$1" "$2") == "$3" ]]; }
property_above() { (( $(property "$1" "$2") > $3 )); }

# wait_for SECONDS DESCRIPTION COMMAND...: polls (every 0.1 s) until the command succeeds
# (a command, not a value: "$(...)" in the arguments would be evaluated only once).
wait_for() {
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do
    "$@" && return 0
    sleep 0.1
  done
  fail "$what: still not so after $seconds s"
}

as_user() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }

# A drop-in for UNIT (the test's own configuration on top of the installed unit).
drop_in() {
  local unit=$1 name=$2 text=$3
  inside mkdir -p "/etc/systemd/system/$unit.d"
  printf '%s\n' "$text" | inside tee "/etc/systemd/system/$unit.d/$name.conf" >/dev/null
  inside systemctl daemon-reload
}
remove_drop_in() { inside rm -f "/etc/systemd/system/$1.d/$2.conf"; inside systemctl daemon-reload; }

# boot_start WHAT ARGS...: boots (stage 2 gets `__boot $tmp ARGS...`) and waits until
# systemd is PID 1 of the namespace ($systemd_pid) and the boot has finished cleanly.
boot_start() {
  local what=$1
  shift
  progress "booting systemd $(/lib/systemd/systemd --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') as PID 1 in private namespaces from $what (work dir $tmp)"
  mkdir "$cgroup" 2>/dev/null || skip "cannot create a cgroup in $cgroup_root"
  ( echo "$BASHPID" > "$cgroup/cgroup.procs"
    exec unshare --mount --propagation private --uts --ipc --net --pid --fork --cgroup --kill-child \
      /bin/bash "$self" __boot "$tmp" "$@" ) > "$tmp/boot.log" 2>&1 < /dev/null &
  unshare_pid=$!

  local child
  for _ in $(seq 200); do
    kill -0 "$unshare_pid" 2>/dev/null || fail "the namespace exited during boot"
    child=$(cat "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null || true)
    child=${child%% *}
    if [[ -n $child && $(cat "/proc/$child/comm" 2>/dev/null) == systemd ]]; then
      systemd_pid=$child
      break
    fi
    sleep 0.05
  done
  [[ -n $systemd_pid ]] || fail "systemd did not start as PID 1 within 10 s"
  progress "systemd is PID 1 of the namespace (host pid $systemd_pid)"

  local state=
  for _ in $(seq 300); do
    state=$(inside systemctl is-system-running 2>/dev/null || true)
    [[ $state == running || $state == degraded ]] && break
    sleep 0.1
  done
  [[ $state == running ]] || fail "the system did not finish booting cleanly (state '$state')"
}

# boot_poweroff: a clean shutdown of the booted system, within 60 s.
boot_poweroff() {
  inside systemctl poweroff --no-block >/dev/null 2>&1 || true
  for _ in $(seq 600); do kill -0 "$unshare_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$unshare_pid" 2>/dev/null; then
    echo "--- processes still in the namespace" >&2
    find "$cgroup" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r ps -o pid,user,args -p >&2 || true
    fail "systemd did not power off within 60 s"
  fi
  wait "$unshare_pid" 2>/dev/null || true
  unshare_pid=
}
