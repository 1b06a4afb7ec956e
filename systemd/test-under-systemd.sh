#!/usr/bin/env bash
# Tests the shipped unit files for real: boots systemd 252 as PID 1 in private
# namespaces, with the units, binaries, database and the stol user installed
# into a throw-away copy-on-write view of /, and checks the services with the
# real stol-client, as root and as users who are not administrators.
#
#   systemd/test-under-systemd.sh BIN_DIR DATABASE
#
# BIN_DIR holds stol-taxonomyd, stol-favoritesd, stol-importd, stol-verifyd and
# stol-client; DATABASE is a bundled database built by stol-pipeline.
# Exit status: 0 all checks passed, 1 a check failed (with the reason and the
# journal), 77 this machine cannot run systemd as PID 1 (not root, no unshare,
# no overlayfs or cgroup2).
#
# Nothing is written to the host: every mount lives in a new mount namespace
# that dies with the test, and the root systemd boots into is an overlay whose
# upper layer is a tmpfs (so /etc/passwd, /etc/systemd/system, /usr/local/bin,
# /usr/share/stol, /var/lib/stol, the journal ... are all copies). /proc/sys is
# read-only and the UTS, IPC, network, PID and cgroup namespaces are private, so
# systemd cannot change the hostname, sysctls or the host's cgroups either. The
# only host-side traces are a temporary directory and one empty cgroup, both
# removed on exit (trap), whatever happens.
set -euo pipefail

self=$(readlink -f "$0")
units_dir=$(dirname "$self")
target=stol-test.target
mask_keep=" systemd-journald.service systemd-journald.socket systemd-journald-dev-log.socket "

# ---------------------------------------------------------------------------
# Stage 2: runs as PID 1 of the new PID namespace, inside the new mount
# namespace. Builds the root, then becomes systemd.
# ---------------------------------------------------------------------------
if [[ ${1:-} == __boot ]]; then
  tmp=$2 bin=$3 database=$4
  root=$tmp/root
  set -x
  mount -t tmpfs -o mode=0755 stol-rw "$tmp/rw"
  mkdir "$tmp/rw/upper" "$tmp/rw/work"
  mount -t overlay -o "lowerdir=/,upperdir=$tmp/rw/upper,workdir=$tmp/rw/work" stol-root "$root"

  # API file systems, as a container manager provides them.
  mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
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
  cp "$units_dir"/*.service "$units_dir"/*.socket "$root/etc/systemd/system/"
  cat > "$root/etc/systemd/system/$target" <<EOF
[Unit]
Description=STOL boot test: the STOL sockets and nothing else
Wants=sockets.target
After=sockets.target
AllowIsolate=yes
EOF
  ln -s "$target" "$root/etc/systemd/system/default.target"
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
  # The packaging steps: enable the sockets ([Install] sections), create the users.
  systemctl --root="$root" enable stol-taxonomyd.socket stol-favoritesd.socket stol-importd.socket stol-verifyd.socket
  mkdir -p "$root/usr/lib/sysusers.d"
  cp "$units_dir/stol.sysusers.conf" "$root/usr/lib/sysusers.d/stol.conf"
  systemd-sysusers --root="$root" "$root/usr/lib/sysusers.d/stol.conf"

  # The binaries and the database at their installed paths, read-only.
  for name in stol-taxonomyd stol-favoritesd stol-importd stol-verifyd stol-client; do
    touch "$root/usr/local/bin/$name"
    mount --bind "$bin/$name" "$root/usr/local/bin/$name"
    mount -o remount,bind,ro "$root/usr/local/bin/$name"
  done
  mkdir -p "$root/usr/share/stol"
  touch "$root/usr/share/stol/bundled.sqlite"
  mount --bind "$database" "$root/usr/share/stol/bundled.sqlite"
  mount -o remount,bind,ro "$root/usr/share/stol/bundled.sqlite"
  # A file that is not a .stol database, and the database signed with a key made
  # for this test, whose public half is installed as the trusted release key.
  mkdir -p "$root/srv/stol-test" "$root/usr/share/stol/keys"
  printf 'this is not a STOL reference database\n' > "$root/srv/stol-test/not-a-database.stol"
  cp "$tmp/reference.stol" "$root/srv/stol-test/reference.stol"
  chmod 0644 "$root/srv/stol-test/not-a-database.stol" "$root/srv/stol-test/reference.stol"
  cp "$tmp/signing.key.pub" "$root/usr/share/stol/keys/release.pub"
  chmod 0644 "$root/usr/share/stol/keys/release.pub"

  mkdir "$root/.stol-old-root"
  cd "$root"
  pivot_root . .stol-old-root
  umount -l /.stol-old-root
  rmdir /.stol-old-root
  set +x
  exec env -i container=stol-test /lib/systemd/systemd --system --unit="$target" --show-status=no
fi

# ---------------------------------------------------------------------------
# Stage 1: on the host.
# ---------------------------------------------------------------------------
skip() { echo "test-under-systemd: SKIPPED: $*" >&2; exit 77; }
started=${EPOCHREALTIME/./}
progress() {
  local ms=$(( (${EPOCHREALTIME/./} - started) / 1000 ))
  printf '[%3d.%02ds] %s\n' $((ms / 1000)) $((ms % 1000 / 10)) "$*"
}

bin=${1:?usage: $0 BIN_DIR DATABASE}
database=${2:?usage: $0 BIN_DIR DATABASE}
bin=$(readlink -f "$bin")
database=$(readlink -f "$database")
for name in stol-taxonomyd stol-favoritesd stol-importd stol-verifyd stol-client stol-pipeline; do
  [[ -x $bin/$name ]] || { echo "test-under-systemd: $bin/$name not found (swift build)" >&2; exit 1; }
done
[[ -f $database ]] || { echo "test-under-systemd: database $database not found" >&2; exit 1; }

[[ $(id -u) == 0 ]] || skip "needs root to boot systemd as PID 1 in namespaces"
for tool in unshare nsenter setpriv pivot_root systemd-sysusers systemctl timeout; do
  command -v "$tool" >/dev/null || skip "$tool not installed"
done
[[ -x /lib/systemd/systemd ]] || skip "/lib/systemd/systemd not installed (apt-get install systemd)"
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
probe=$(mktemp -d /tmp/stol-systemd-probe.XXXXXX)
unshare --mount --propagation private /bin/sh -c "
  mount -t tmpfs probe '$probe' && mkdir '$probe/u' '$probe/w' '$probe/m' '$probe/c' &&
  mount -t overlay -o lowerdir=/,upperdir='$probe/u',workdir='$probe/w' probe '$probe/m' &&
  mount -t cgroup2 probe '$probe/c'" 2>/dev/null || { rm -rf "$probe"; skip "cannot mount tmpfs, overlayfs over / and cgroup2 in a mount namespace"; }
rm -rf "$probe"

tmp=$(mktemp -d /tmp/stol-systemd.XXXXXX)
chmod 0755 "$tmp"
mkdir "$tmp/rw" "$tmp/root"
"$bin/stol-pipeline" keygen --private-key "$tmp/signing.key" >/dev/null
"$bin/stol-pipeline" sign --key "$tmp/signing.key" --level 1 --input "$database" --output "$tmp/reference.stol" >/dev/null
cgroup=$cgroup_root/stol-systemd-test.${tmp##*.}
unshare_pid=
systemd_pid=
# A deadline of our own, so that the cleanup below always gets to run before
# any caller's timeout kills us (commands inside are limited to 30 s each).
deadline=${STOL_SYSTEMD_TEST_DEADLINE:-90}
( trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
  sleep "$deadline" & sleeper=$!
  wait "$sleeper" && kill -TERM $$ ) < /dev/null > /dev/null 2>&1 &
watchdog_pid=$!

cleanup() {
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
    [[ -d $cgroup ]] && echo "test-under-systemd: warning: could not remove $cgroup" >&2
  fi
  rm -rf "$tmp"
  kill "$watchdog_pid" 2>/dev/null || true
  exit "$status"
}
trap cleanup EXIT
trap 'echo "test-under-systemd: FAILED: interrupted, or still running after $deadline s" >&2; exit 1' INT TERM

# Runs a command inside the booted system (all its namespaces and its root).
inside() {
  timeout 30 nsenter --target "$systemd_pid" --all --root --wd -- \
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
  echo "test-under-systemd: FAILED: $*" >&2
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

# expect_property UNIT PROPERTY VALUE
expect_property() {
  local value
  value=$(property "$1" "$2")
  [[ $value == "$3" ]] || fail "$1: $2 is '$value', expected '$3'"
}

# ---------------------------------------------------------------------------
progress "booting systemd $(/lib/systemd/systemd --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p') as PID 1 in private namespaces (work dir $tmp)"
mkdir "$cgroup" 2>/dev/null || skip "cannot create a cgroup in $cgroup_root"
( echo "$BASHPID" > "$cgroup/cgroup.procs"
  exec unshare --mount --propagation private --uts --ipc --net --pid --fork --cgroup --kill-child \
    /bin/bash "$self" __boot "$tmp" "$bin" "$database" ) > "$tmp/boot.log" 2>&1 < /dev/null &
unshare_pid=$!

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

state=
for _ in $(seq 300); do
  state=$(inside systemctl is-system-running 2>/dev/null || true)
  [[ $state == running || $state == degraded ]] && break
  sleep 0.1
done
[[ $state == running ]] || fail "the system did not finish booting cleanly (state '$state')"
for socket in taxonomy favorites import verify; do
  inside test -S "/run/stol/$socket.sock" || fail "/run/stol/$socket.sock does not exist"
done
progress "booted into $target: all four sockets listen in /run/stol"

# --- sockets as the units declare them
check_socket_mode() {
  local info
  info=$(inside stat -c '%a %U %G' "/run/stol/$1.sock")
  [[ $info == "$2" ]] || fail "/run/stol/$1.sock is '$info', expected '$2'"
}
check_socket_mode taxonomy "666 root root"
check_socket_mode favorites "666 root root"
check_socket_mode import "660 root stol-admin"
check_socket_mode verify "600 stol stol"
progress "ok: socket modes and owners as in the .socket units"

# --- taxonomy: socket activation, Type=notify
expect_property stol-taxonomyd.service ActiveState inactive
expect 0 "taxonomy status (root)" stol-client status
expect 0 "search lion (root)" stol-client search lion
[[ $out == *"Panthera leo"* ]] || fail "search lion did not find Panthera leo: $out"
expect 0 "search lion (uid 4242, no groups)" setpriv --reuid=4242 --regid=4242 --clear-groups stol-client search lion
[[ $out == *"Panthera leo"* ]] || fail "search lion as uid 4242 did not find Panthera leo: $out"
expect_property stol-taxonomyd.service Type notify
expect_property stol-taxonomyd.service ActiveState active
expect_property stol-taxonomyd.service SubState running
capture systemctl --no-pager status stol-taxonomyd.service
[[ $out == *"active (running)"* ]] || fail "stol-taxonomyd.service is not active (running): $out"
main_pid=$(property stol-taxonomyd.service MainPID)
[[ $(inside ps -o user= -p "$main_pid" | tr -d ' ') == stol ]] || fail "stol-taxonomyd does not run as user stol"
progress "ok: socket activation started stol-taxonomyd.service; active (running) as user stol, so READY=1 arrived"

# --- favourites: per-uid files under the StateDirectory
expect 0 "fav add 9689 (root)" stol-client fav add 9689
expect 0 "fav list (root)" stol-client fav list
[[ $out == *9689* ]] || fail "fav list does not show 9689: $out"
expect 0 "fav add 9606 (uid 4242)" setpriv --reuid=4242 --regid=4242 --clear-groups stol-client fav add 9606
expect 0 "fav list (uid 4242)" setpriv --reuid=4242 --regid=4242 --clear-groups stol-client fav list
[[ $out == *9606* && $out != *9689* ]] || fail "uid 4242 does not see exactly its own favourites: $out"
for file in 0 4242; do
  info=$(inside stat -c '%a %U' "/var/lib/stol/favorites/$file.sqlite") || fail "/var/lib/stol/favorites/$file.sqlite was not created"
  [[ $info == "600 stol" ]] || fail "/var/lib/stol/favorites/$file.sqlite is '$info', expected '600 stol'"
done
info=$(inside stat -c '%a %U' /var/lib/stol/favorites)
[[ $info == "700 stol" ]] || fail "/var/lib/stol/favorites is '$info', expected '700 stol' (StateDirectoryMode=0700)"
progress "ok: favourites files /var/lib/stol/favorites/{0,4242}.sqlite are 0600, owned by stol"

# --- import coordinator and verifier
expect 0 "db status (root)" stol-client db status
admin_gid=$(inside getent group stol-admin | cut -d: -f3)
[[ -n $admin_gid ]] || fail "group stol-admin was not created by systemd-sysusers"
expect 0 "db status (uid 4243 in group stol-admin)" setpriv --reuid=4243 --regid=4243 --groups="$admin_gid" stol-client db status
expect 4 "db status is denied to uid 4242 (not in stol-admin)" setpriv --reuid=4242 --regid=4242 --clear-groups stol-client db status
accepted_before=$(property stol-verifyd.socket NAccepted)
expect 7 "db import of a file without the magic (root)" stol-client db import /srv/stol-test/not-a-database.stol
[[ $out == *NOT_A_STOL_FILE* ]] || fail "db import did not answer NOT_A_STOL_FILE: $out"
accepted_after=$(property stol-verifyd.socket NAccepted)
(( accepted_after == accepted_before + 1 )) || fail "stol-verifyd.socket accepted $accepted_before then $accepted_after connections: the import did not reach a per-connection verifier"
for _ in $(seq 50); do
  capture journalctl --no-pager -b -o cat _PID=1
  [[ $out == *"stol-verifyd@"*"Deactivated successfully"* ]] && break
  sleep 0.1
done
[[ $out == *"Started stol-verifyd@"* ]] || fail "no stol-verifyd@ instance was started: $out"
[[ $out == *"stol-verifyd@"*"Deactivated successfully"* ]] || fail "the stol-verifyd@ instance did not end successfully: $out"
capture systemctl --no-pager list-units --all --state=failed --plain --no-legend 'stol-verifyd@*'
[[ -z $out ]] || fail "a verifier instance failed: $out"
progress "ok: the import went through stol-importd to a fresh stol-verifyd@ instance (NAccepted $accepted_before -> $accepted_after)"

expect 0 "db import of the signed database (root)" stol-client db import /srv/stol-test/reference.stol
[[ $out == *"checking database: 100%"* && $out == *"installing: 100%"* ]] || fail "db import did not show every stage: $out"
info=$(inside stat -c '%a %U' /var/lib/stol/databases/reference.sqlite) || fail "no /var/lib/stol/databases/reference.sqlite"
[[ $info == "644 stol" ]] || fail "reference.sqlite is '$info', expected '644 stol'"
inside cmp -s /var/lib/stol/databases/reference.sqlite /usr/share/stol/bundled.sqlite ||
  fail "the installed reference database differs from the database that was signed"
capture journalctl --no-pager -b -o cat
[[ $out == *"Landlock ABI"*"sandboxed"* || $out == *"sandbox without Landlock"* ]] || fail "the verifier did not report its sandbox: $out"
expect 0 "db activate" stol-client db activate
expect 0 "status after activate" stol-client status
[[ $out == *"active database:  reference"* ]] || fail "the taxonomy server does not serve the reference database: $out"
expect 0 "db deactivate" stol-client db deactivate
expect 0 "status after deactivate" stol-client status
[[ $out == *"active database:  bundled"* ]] || fail "the taxonomy server did not switch back to the bundled database: $out"
expect 0 "db delete --yes" stol-client db delete --yes
capture test -e /var/lib/stol/databases/reference.sqlite
[[ $rc != 0 ]] || fail "db delete left reference.sqlite"
progress "ok: a signed database imported through the sandboxed verifier (trusted key /usr/share/stol/keys/release.pub), activated, deactivated and deleted"

# --- the sandboxing does not kill the Swift daemons
for unit in stol-taxonomyd.service stol-favoritesd.service stol-importd.service \
            stol-taxonomyd.socket stol-favoritesd.socket stol-importd.socket stol-verifyd.socket; do
  state=$(inside systemctl is-failed "$unit" || true)
  [[ $state != failed ]] || fail "$unit failed"
  expect_property "$unit" ActiveState active
done
for unit in stol-taxonomyd.service stol-favoritesd.service stol-importd.service; do
  expect_property "$unit" NRestarts 0
  expect_property "$unit" SubState running
  # The sandbox really applies: seccomp filter on, no new privileges, no capabilities.
  pid=$(property "$unit" MainPID)
  status=$(inside cat "/proc/$pid/status")
  [[ $status =~ Seccomp:[[:space:]]+2 && $status =~ NoNewPrivs:[[:space:]]+1 && $status =~ CapEff:[[:space:]]+0+$'\n' ]] ||
    fail "$unit (pid $pid) does not run under its seccomp filter without privileges: $status"
done
capture journalctl --no-pager -b -o cat
[[ $out != *"status=31/SYS"* && $out != *"code=dumped"* && $out != *"code=killed"* && $out != *"Failed with result"* ]] ||
  fail "a process was killed or a unit failed: $out"
progress "ok: every STOL unit is active, none failed or restarted; the daemons run under seccomp with NoNewPrivileges and survive it"

# --- a clean stop
expect 0 "systemctl stop stol-taxonomyd.service" systemctl stop stol-taxonomyd.service
expect_property stol-taxonomyd.service Result success
expect_property stol-taxonomyd.service ActiveState inactive
expect_property stol-taxonomyd.service ExecMainStatus 0
state=$(inside systemctl is-failed stol-taxonomyd.service || true)
[[ $state != failed ]] || fail "stol-taxonomyd.service is failed after stop"
expect_property stol-taxonomyd.socket ActiveState active
expect 0 "search lion after the stop (activates it again)" stol-client search lion
expect_property stol-taxonomyd.service ActiveState active
progress "ok: stop ended stol-taxonomyd.service with result success (exit 0); the socket activates it again"

# --- power off
inside systemctl poweroff --no-block >/dev/null 2>&1 || true
for _ in $(seq 200); do kill -0 "$unshare_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$unshare_pid" 2>/dev/null && fail "systemd did not power off within 20 s"
wait "$unshare_pid" 2>/dev/null || true
unshare_pid=
progress "powered off; all checks passed"
