#!/usr/bin/env bash
# Tests the Debian packages as an administrator uses them, the way piuparts does,
# on a real systemd 252 booted as PID 1 in private namespaces on a throw-away
# copy-on-write view of / (systemd/boot-lib.sh; nothing reaches the host):
#
#   install   apt-get install ./stol_OLD.deb ./python3-stol_OLD.deb (offline): users,
#             groups and /var/lib/stol made, stol.target and the sockets enabled and
#             listening, no daemon running until a request starts it
#   use       two users (alice in stol-admin, bob) each keep their own favourites;
#             alice imports and activates a signed reference database whose key the
#             operator put in /etc/stol/keys; Python's stol module answers; the journal
#             holds no warning, error or library complaint; each daemon's mounts are
#             noexec but its unit's ExecPaths=
#   upgrade   apt-get install ./stol_NEW.deb ...: the running daemons restarted on the
#             new binaries; favourites, the installed reference, the operator's key and
#             an edited conffile kept; bob's `taxon` and `fav count`, looping every 10 ms
#             through the upgrade, never fail (the longest gap is reported)
#   restart   systemctl restart of both serving daemons under the same loop: none fails
#   procedures as docs/ write them: fav backup and restore (nothing left behind), the
#             release key's rotation for an operator's key and for the packaged one
#             (the newer package ships a key), dpkg -V flagging only the revoked list
#   remove    dpkg -r: programs, units and sockets gone; /var/lib/stol, users, groups
#             and /etc/stol kept
#   purge     dpkg -P: /var/lib/stol, /etc/stol, the users and groups gone; no file
#             under /etc, /usr or /var that was not there before the install (piuparts'
#             check, less dpkg's and apt's own records, logs and caches)
#
#   systemd/test-deb-under-systemd.sh DEB_DIR
#
# DEB_DIR holds two builds of the packages (`make deb-package DEB_OUT=DIR`, then
# again with DEB_VERSION= a higher version and RELEASE_KEY=DIR/packaged-release.pub):
# stol_V_amd64.deb and python3-stol_V_all.deb for each version V, and the packaged
# key's private half packaged-release.key (make test-debs makes all of it); the lower
# is installed, the higher is the upgrade. Exit status: 0 all checks passed, 1 a check failed (with the reason
# and the journal), 77 this machine cannot run systemd as PID 1 (not root, no
# unshare, no overlayfs or cgroup2).
set -euo pipefail

self=$(readlink -f "$0")
target=stol-deb-test.target
test_name=test-deb-under-systemd
source "$(dirname "$self")/boot-lib.sh"

# ---------------------------------------------------------------------------
# Stage 2: the host's / as it is (no STOL installed), the packages in /srv/stol-test.
# ---------------------------------------------------------------------------
if [[ ${1:-} == __boot ]]; then
  debs=$3
  boot_mount_root "$2"
  boot_populate_root
  # A container image's policy-rc.d forbids every service start (exit 101); a
  # machine an administrator installs on has none.
  rm -f "$root/usr/sbin/policy-rc.d"
  mkdir -p "$root/srv/stol-test"
  cp "$debs"/*.deb "$debs/packaged-release.key" "$root/srv/stol-test/"
  chmod 0755 "$root/srv/stol-test"
  chmod 0644 "$root"/srv/stol-test/*
  chmod 0600 "$root/srv/stol-test/packaged-release.key"
  boot_exec_systemd
fi

# ---------------------------------------------------------------------------
# Stage 1: on the host.
# ---------------------------------------------------------------------------
deb_dir=${1:?usage: $0 DEB_DIR (two builds of stol_*_amd64.deb and python3-stol_*_all.deb)}
deb_dir=$(readlink -f "$deb_dir")
versions=()
for deb in "$deb_dir"/stol_*_amd64.deb; do
  [[ -e $deb ]] || continue
  version=${deb##*/stol_}; version=${version%_amd64.deb}
  [[ -e $deb_dir/python3-stol_${version}_all.deb ]] ||
    { echo "$test_name: $deb_dir/python3-stol_${version}_all.deb not found (built with $deb)" >&2; exit 1; }
  versions+=("$version")
done
[[ -s $deb_dir/packaged-release.key ]] || {
  echo "$test_name: $deb_dir/packaged-release.key not found: the newer build ships its public half (make test-debs)" >&2
  exit 1
}
(( ${#versions[@]} >= 2 )) || {
  echo "$test_name: $deb_dir needs two builds of the packages (make deb-package DEB_OUT=$deb_dir, then again with DEB_VERSION=<higher>)" >&2
  exit 1
}
old=${versions[0]} new=${versions[0]}
for version in "${versions[@]}"; do
  if dpkg --compare-versions "$version" lt "$old"; then old=$version; fi
  if dpkg --compare-versions "$version" gt "$new"; then new=$version; fi
done
[[ $old != "$new" ]] || { echo "$test_name: the packages in $deb_dir all have version $old: an upgrade needs a higher one" >&2; exit 1; }

boot_preflight dpkg
# The booted system is a copy of this machine: it must not have STOL already.
if dpkg-query -W -f '${Status}' stol 2>/dev/null | grep -q ' installed$' || [[ -e /usr/libexec/stol || -e /usr/lib/systemd/system/stol.target ]]; then
  skip "STOL is installed on this machine (the package or make install): the package test starts from a machine without it"
fi
boot_setup 420
boot_start "the host's / (packages $old and $new from $deb_dir)" "$deb_dir"
progress "booted into $target: no STOL installed yet"

# Runs a command inside with more time (package operations, signing).
slow() { INSIDE_TIMEOUT=300 "$@"; }
apt_get() { slow capture env DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends "$@"; }
# The files a package may leave behind (piuparts' check): everything under /etc, /usr,
# /var and /srv, less dpkg's and apt's records, caches (man-db's index) and logs, and
# the test's own files.
snapshot() {
  inside sh -c 'find /etc /usr /var /srv -xdev \
    \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log -o -path /srv/stol-test \) -prune \
    -o -print | sort' > "$1"
}
# Commands run inside as one of the lab's users, with the groups the system gives them.
alice=(setpriv --reuid=alice --regid=alice --init-groups)
bob=(setpriv --reuid=bob --regid=bob --init-groups)

# --- two users of the lab, created before anything of STOL is there
expect 0 "useradd alice" useradd --create-home --shell /bin/bash alice
expect 0 "useradd bob" useradd --create-home --shell /bin/bash bob
snapshot "$tmp/before.list"
[[ -s $tmp/before.list ]] || fail "could not list the files before the install"

# --- install, as an administrator does: apt with the local files, offline
apt_get install "/srv/stol-test/stol_${old}_amd64.deb" "/srv/stol-test/python3-stol_${old}_all.deb"
(( rc == 0 )) || fail "apt-get install of $old failed: $out"
[[ $out != *"Could not execute systemctl"* && $out != *"Failed to"* ]] || fail "the install printed an error: $out"
progress "ok: apt-get install ./stol_${old}_amd64.deb ./python3-stol_${old}_all.deb (offline)"
capture ls /opt/swift
[[ -z $out ]] || fail "the Swift toolchain is visible inside: $out"
capture ldd /usr/libexec/stol/stol-taxonomyd /usr/libexec/stol/stol-verifyd /usr/bin/stol-client
[[ $out != *swift* && $out != *"not found"* ]] || fail "a packaged binary links a Swift library: $out"
progress "ok: the packaged release binaries link no Swift library and run with the toolchain hidden"
capture dpkg-query -W -f '${Status} ${Version}' stol python3-stol
[[ $out == "install ok installed $old"*"install ok installed $old" ]] || fail "dpkg does not have both packages installed at $old: $out"
for user in stol-taxonomy stol-favorites stol-import; do
  inside getent passwd "$user" >/dev/null || fail "the install did not create the user $user"
done
admin_gid=$(inside getent group stol-admin | cut -d: -f3)
[[ -n $admin_gid ]] || fail "the install did not create the group stol-admin"
for entry in "/var/lib/stol 755 root" "/var/lib/stol/databases 755 stol-import" "/var/lib/stol/favorites 700 stol-favorites"; do
  set -- $entry
  info=$(inside stat -c '%a %U' "$1") || fail "the install did not create $1"
  [[ $info == "$2 $3" ]] || fail "$1 is '$info', expected '$2 $3'"
done
progress "ok: the users stol-taxonomy, stol-favorites, stol-import and the group stol-admin exist (systemd-sysusers); /var/lib/stol as tmpfiles.d says"
expect_property stol.target UnitFileState enabled
for socket in taxonomy favorites import verify; do
  expect_property "stol-${socket}d.socket" UnitFileState enabled
  expect_property "stol-${socket}d.socket" ActiveState active
  inside test -S "/run/stol/$socket.sock" || fail "/run/stol/$socket.sock does not exist after the install"
done
for daemon in stol-taxonomyd stol-favoritesd stol-importd; do
  expect_property "$daemon.service" ActiveState inactive
done
capture sh -c 'systemd-analyze verify --man=no /lib/systemd/system/stol*.service /lib/systemd/system/stol*.socket /lib/systemd/system/stol*.target'
[[ $rc == 0 && -z $out ]] || fail "systemd-analyze verify complained about the packaged units: $out"
capture dpkg-query -W -f '${Conffiles}' stol
[[ $out == *"/etc/stol/keys/revoked "* ]] || fail "/etc/stol/keys/revoked is not a conffile of stol: $out"
capture man -w stol-client stol-taxonomyd
[[ $rc == 0 ]] || fail "man pages not found: $out"
inside test -s /usr/share/bash-completion/completions/stol-client || fail "no bash completion for stol-client"
progress "ok: stol.target and the four sockets enabled and listening, no daemon started yet; units verified; conffile, man pages, completions in place"

# --- use: the first request starts each daemon; two users, their own favourites
expect 0 "stol-client status (bob; socket activation starts stol-taxonomyd)" "${bob[@]}" stol-client status
expect_property stol-taxonomyd.service ActiveState active
[[ $(inside ps -o user= -p "$(property stol-taxonomyd.service MainPID)" | tr -d ' ') == stol-taxonomy ]] ||
  fail "stol-taxonomyd does not run as stol-taxonomy"
expect 0 "usermod -aG stol-admin alice (the README's step)" usermod -aG stol-admin alice
expect 0 "fav add 9689 (alice)" "${alice[@]}" stol-client fav add 9689
expect 0 "fav add 9606 (bob)" "${bob[@]}" stol-client fav add 9606
expect 0 "fav list (alice)" "${alice[@]}" stol-client fav list
[[ $out == *9689* && $out != *9606* ]] || fail "alice does not see exactly her own favourites: $out"
expect 0 "fav list (bob)" "${bob[@]}" stol-client fav list
[[ $out == *9606* && $out != *9689* ]] || fail "bob does not see exactly his own favourites: $out"
expect 0 "python3 -c 'import stol' (bob): a taxon and his favourites" "${bob[@]}" python3 -c \
  'import stol; t = stol.Taxonomy().taxon(9689); print(t.name, t.release); print(stol.Favorites().ids())'
[[ $out == *"Panthera leo"* && $out == *"[9606]"* ]] || fail "the Python package did not answer as expected: $out"
progress "ok: alice and bob each see only their own favourite; python3-stol answers from /usr/lib/python3/dist-packages"

# --- an imported reference: the operator trusts a key in /etc/stol/keys
expect 0 "stol-pipeline keygen (the test's signing key)" stol-pipeline keygen --private-key /root/test-signing.key
expect 0 "install the public key as /etc/stol/keys/test.pub" install -m 0644 /root/test-signing.key.pub /etc/stol/keys/test.pub
slow expect 0 "stol-pipeline sign the bundled database" stol-pipeline sign --key /root/test-signing.key --level 1 \
  --input /usr/share/stol/bundled.sqlite --output /srv/stol-test/reference.stol
expect 0 "chmod 0644 reference.stol" chmod 0644 /srv/stol-test/reference.stol
expect 4 "db import is denied to bob (not in stol-admin)" "${bob[@]}" stol-client db import /srv/stol-test/reference.stol
slow expect 0 "db import (alice, in stol-admin)" "${alice[@]}" stol-client db import /srv/stol-test/reference.stol
expect 0 "db activate (alice)" "${alice[@]}" stol-client db activate
expect 0 "status (bob) after the activation" "${bob[@]}" stol-client status
[[ $out == *"active database:  reference"* ]] || fail "the taxonomy server does not serve the imported reference: $out"
capture sh -c 'ls /var/lib/stol/databases/releases/'
[[ $out == *.sqlite && $out != *$'\n'* ]] || fail "expected one release in /var/lib/stol/databases/releases, found: $out"
release_file=/var/lib/stol/databases/releases/$out
state_before=$(inside sha256sum "$release_file" /var/lib/stol/databases/activation.json) || fail "no installed release or activation.json"
progress "ok: alice imported and activated a reference signed with a key from /etc/stol/keys; bob's queries switched to it"
expect_quiet_start "the packaged daemons' starts, queries, favourites, an import and its activation"
# The packaged units' own limit on execution: each running daemon's mounts are noexec but
# its ExecPaths= (the static daemon and the system libraries of its exec-paths.conf).
for unit in stol-taxonomyd stol-favoritesd stol-importd; do
  check_exec_mounts "$unit" "$unit.service" "$(exec_mounts "$(property $unit.service MainPID)")"
done
progress "ok: in each packaged daemon's mount namespace only its ExecPaths= are executable"

# --- upgrade to the newer build
echo "# kept across upgrades (an operator's note)" | inside tee -a /etc/stol/keys/revoked >/dev/null
expect 0 "search lion (bob; stol-taxonomyd runs)" "${bob[@]}" stol-client search lion
expect 0 "fav count (alice; stol-favoritesd runs)" "${alice[@]}" stol-client fav count
declare -A pid_before
for daemon in stol-taxonomyd stol-favoritesd; do
  expect_property "$daemon.service" ActiveState active
  pid_before[$daemon]=$(property "$daemon.service" MainPID)
done
# loop_start NAME: bob asks a taxon and his favourites' count every 10 ms until loop_stop,
# each line "taxon|count EXIT START_NS END_NS" in $tmp/NAME-loop.log; returns once ten
# have answered. Read requests the client asks again after a reset, and connects that find
# no listener it retries for a second: none may fail.
loop_start() {
  inside rm -f /tmp/stol-stop-loop /tmp/stol-loop-bob.err
  INSIDE_TIMEOUT=900 inside "${bob[@]}" sh -c 'while [ ! -e /tmp/stol-stop-loop ]; do
      for what in taxon count; do
        start=$(date +%s%N)
        if [ $what = taxon ]; then stol-client taxon 9606 >/dev/null 2>>/tmp/stol-loop-bob.err; else
          stol-client fav count >/dev/null 2>>/tmp/stol-loop-bob.err; fi
        echo "$what $? $start $(date +%s%N)"
      done
      sleep 0.01
    done' > "$tmp/$1-loop.log" 2>&1 &
  loop_pid=$!
  until [[ $(grep -c . "$tmp/$1-loop.log" 2>/dev/null) -ge 10 ]]; do
    kill -0 "$loop_pid" 2>/dev/null || fail "bob's looping client ended before the $1: $(cat "$tmp/$1-loop.log")"
    sleep 0.1
  done
}
# loop_stop NAME: twenty more answers, then the loop ends; fails on any failed request and
# reports the count and the longest gap between two answers.
loop_stop() {
  local before_stop requests failed gap_ms
  before_stop=$(grep -c . "$tmp/$1-loop.log")
  until [[ $(grep -c . "$tmp/$1-loop.log") -ge $(( before_stop + 20 )) ]]; do
    kill -0 "$loop_pid" 2>/dev/null || break
    sleep 0.1
  done
  inside touch /tmp/stol-stop-loop
  wait "$loop_pid" || fail "bob's looping client failed: $(tail -5 "$tmp/$1-loop.log")"
  read -r requests failed gap_ms < <(awk '
    { n++; if ($2 != 0) bad++; if (last_end && ($3 - last_end) / 1e6 > gap) gap = ($3 - last_end) / 1e6;
      if (($4 - $3) / 1e6 > gap) gap = ($4 - $3) / 1e6; last_end = $4 }
    END { printf "%d %d %.0f\n", n, bad + 0, gap }' "$tmp/$1-loop.log")
  capture cat /tmp/stol-loop-bob.err
  (( failed == 0 )) || fail "$failed of bob's $requests requests failed during the $1: $(grep -v ' 0 ' "$tmp/$1-loop.log" | head -5); $out"
  progress "ok: bob's taxon and fav count looped through the $1: $requests requests, 0 failed, the longest gap ${gap_ms} ms"
}
loop_start upgrade
apt_get install "/srv/stol-test/stol_${new}_amd64.deb" "/srv/stol-test/python3-stol_${new}_all.deb"
(( rc == 0 )) || fail "apt-get install of $new (the upgrade) failed: $out"
[[ $out == *"Unpacking stol ($new) over ($old)"* ]] || fail "apt-get did not upgrade stol from $old to $new: $out"
progress "ok: apt-get install ./stol_${new}_amd64.deb ./python3-stol_${new}_all.deb upgraded $old -> $new"
capture dpkg-query -W -f '${Status} ${Version}' stol python3-stol
[[ $out == "install ok installed $new"*"install ok installed $new" ]] || fail "dpkg does not have both packages at $new: $out"
for daemon in stol-taxonomyd stol-favoritesd; do
  expect_property "$daemon.service" ActiveState active
  pid=$(property "$daemon.service" MainPID)
  [[ $pid != "${pid_before[$daemon]}" ]] || fail "$daemon (pid $pid) was not restarted by the upgrade"
  capture readlink "/proc/$pid/exe"
  [[ $out == "/usr/libexec/stol/$daemon" ]] || fail "$daemon runs '$out', not the upgraded /usr/libexec/stol/$daemon"
done
for socket in taxonomy favorites import verify; do
  expect_property "stol-${socket}d.socket" ActiveState active
done
loop_stop upgrade

expect 0 "fav list (alice) after the upgrade" "${alice[@]}" stol-client fav list
[[ $out == *9689* && $out != *9606* ]] || fail "alice's favourites did not survive the upgrade as they were: $out"
expect 0 "fav list (bob) after the upgrade" "${bob[@]}" stol-client fav list
[[ $out == *9606* && $out != *9689* ]] || fail "bob's favourites did not survive the upgrade as they were: $out"
state_after=$(inside sha256sum "$release_file" /var/lib/stol/databases/activation.json) || fail "the installed release is gone after the upgrade"
[[ $state_after == "$state_before" ]] || fail "the upgrade changed the installed release or its activation: $state_before -> $state_after"
expect 0 "status (bob) after the upgrade" "${bob[@]}" stol-client status
[[ $out == *"active database:  reference"* ]] || fail "the imported reference is no longer active after the upgrade: $out"
capture grep -c "kept across upgrades" /etc/stol/keys/revoked
[[ $out == 1 ]] || fail "the upgrade lost the operator's change to the conffile /etc/stol/keys/revoked"
inside test -s /etc/stol/keys/test.pub || fail "the upgrade removed the operator's key /etc/stol/keys/test.pub"
expect 0 "db import (alice) after the upgrade: the key is still trusted" "${alice[@]}" stol-client db import /srv/stol-test/reference.stol
expect 0 "python3 -c 'import stol' (alice) after the upgrade" "${alice[@]}" python3 -c 'import stol; print(stol.Favorites().ids())'
[[ $out == *"[9689]"* ]] || fail "the Python package did not answer after the upgrade: $out"
progress "ok: the upgrade restarted the running daemons on the new binaries; favourites, the installed and active reference, the operator's key and conffile edit survived"

# --- systemctl restart of the serving daemons while bob keeps asking
declare -A pid_running
for daemon in stol-taxonomyd stol-favoritesd; do pid_running[$daemon]=$(property "$daemon.service" MainPID); done
loop_start restart
expect 0 "systemctl restart stol-taxonomyd stol-favoritesd (bob looping)" systemctl restart stol-taxonomyd.service stol-favoritesd.service
loop_stop restart
for daemon in stol-taxonomyd stol-favoritesd; do
  [[ $(property "$daemon.service" MainPID) != "${pid_running[$daemon]}" ]] || fail "$daemon was not restarted"
done

# --- favourites backed up and restored as docs/administration.md says: nothing left behind
expect 0 "fav backup /srv/stol-test/backup/stol-favourites (root)" stol-client fav backup /srv/stol-test/backup/stol-favourites
capture sh -c 'ls /srv/stol-test/backup/stol-favourites/*.sqlite | wc -l'
[[ $out == 2 ]] || fail "the backup does not hold alice's and bob's files: $(inside ls -la /srv/stol-test/backup/stol-favourites)"
expect 0 "fav add 9685 (alice) after the backup" "${alice[@]}" stol-client fav add 9685
expect 0 "fav restore /srv/stol-test/backup/stol-favourites (root)" stol-client fav restore /srv/stol-test/backup/stol-favourites
expect 0 "fav list (alice) after the restore" "${alice[@]}" stol-client fav list
[[ $out == *9689* && $out == *9685* && $out != *9606* ]] || fail "the restore did not merge alice's backup into her live file: $out"
capture sh -c 'ls -A /var/lib/stol/favorites'
[[ $out != *backup* && $out != *restore* ]] || fail "the backup or restore left a directory behind: $out"
progress "ok: fav backup and restore as the docs say: both users' files, merged back keeping a later favourite, nothing left in /var/lib/stol/favorites"

# --- the release key rotated word for word as docs/releases-and-imports.md says, for an
# operator's key in /etc/stol/keys (this package ships none): nothing restarted, no
# package file edited.
expect 0 "rotation step 1: keygen the new key" \
  stol-pipeline keygen --private-key /root/stol-release-2027.key --public-key /root/release-2027.pub
slow expect 0 "sign the bundled database with the new key" stol-pipeline sign --key /root/stol-release-2027.key --level 1 \
  --input /usr/share/stol/bundled.sqlite --output /srv/stol-test/new-key.stol
expect 0 "chmod 0644 new-key.stol" chmod 0644 /srv/stol-test/new-key.stol
expect 7 "db import of a file signed by the new key before step 2" "${alice[@]}" stol-client db import /srv/stol-test/new-key.stol
[[ $out == *"[UNKNOWN_KEY]"* ]] || fail "the untrusted new key was not refused as UNKNOWN_KEY: $out"
expect 0 "rotation step 2: install -d /etc/stol/keys" install -d -m 0755 /etc/stol/keys
expect 0 "rotation step 2: install -m 0644 release-2027.pub /etc/stol/keys/" install -m 0644 /root/release-2027.pub /etc/stol/keys/
expect 0 "rotation step 3: the old key's end date in its own file" sh -c "echo 'not-after: 2099-03-31' >> /etc/stol/keys/test.pub"
expect 0 "db status (alice) during the overlap" "${alice[@]}" stol-client db status
[[ $out == *"trusted keys"*"no problem"* ]] || fail "db status does not say the trusted keys have no problem: $out"
slow expect 0 "rotation step 4: db import of the new key's file (the same content: already installed)" \
  "${alice[@]}" stol-client db import /srv/stol-test/new-key.stol
slow expect 0 "db import of the old key's file during the overlap" "${alice[@]}" stol-client db import /srv/stol-test/reference.stol
# Step 5 as written: the old key's id from its key file, appended to the revocation list.
expect 0 "rotation step 5: revoke the old key's id" sh -c '
  old=$(python3 -c '"'"'import hashlib,sys; print(hashlib.sha256(bytes.fromhex(open(sys.argv[1]).readline().split(":")[1].strip())).hexdigest()[:16])'"'"' \
      /etc/stol/keys/test.pub)
  echo "$old   # release key 2026, rotated 2027-03" >> /etc/stol/keys/revoked'
expect 7 "db import of the old key's file once it is revoked" "${alice[@]}" stol-client db import /srv/stol-test/reference.stol
[[ $out == *"[KEY_REVOKED]"* ]] || fail "the revoked old key's file was not refused as KEY_REVOKED: $out"
expect 0 "rotation step 6: rm the old key's file" rm /etc/stol/keys/test.pub
expect 7 "db import of the old key's file after step 6" "${alice[@]}" stol-client db import /srv/stol-test/reference.stol
[[ $out == *"[KEY_REVOKED]"* || $out == *"[UNKNOWN_KEY]"* ]] || fail "the old key's file was not refused after its key file went: $out"
slow expect 0 "db import of the new key's file after the rotation" "${alice[@]}" stol-client db import /srv/stol-test/new-key.stol
expect 0 "db status (alice) after the rotation" "${alice[@]}" stol-client db status
[[ $out == *"trusted keys"*"no problem"* ]] || fail "db status lists a trust problem after the rotation: $out"
capture dpkg -V stol
[[ -z $(grep -v ' c /etc/stol/keys/revoked$' <<< "$out") ]] || fail "the rotation changed a package file (dpkg -V, besides the revoked conffile): $out"
# The packaged key's flavour of steps 3, 5 and 6 (the newer package ships a release key):
# its end date and revocation go into /etc/stol/keys; the package file is never edited.
inside test -s /usr/share/stol/keys/release.pub || fail "the newer package ships no release key (make test-debs builds it with one)"
slow expect 0 "sign the bundled database with the packaged key's private half" stol-pipeline sign \
  --key /srv/stol-test/packaged-release.key --level 1 --input /usr/share/stol/bundled.sqlite --output /srv/stol-test/packaged-key.stol
expect 0 "chmod 0644 packaged-key.stol" chmod 0644 /srv/stol-test/packaged-key.stol
slow expect 0 "db import of the packaged key's file" "${alice[@]}" stol-client db import /srv/stol-test/packaged-key.stol
expect 0 "rotation step 3 for a packaged key: a copy in /etc/stol/keys with the end date" sh -c \
  "cp /usr/share/stol/keys/release.pub /etc/stol/keys/release-2026.pub && echo 'not-after: 2099-03-31' >> /etc/stol/keys/release-2026.pub"
expect 0 "db status (alice) with the packaged key's copy" "${alice[@]}" stol-client db status
[[ $out == *"trusted keys"*"no problem"* ]] || fail "db status lists a trust problem with the packaged key's dated copy: $out"
slow expect 0 "db import of the packaged key's file during its overlap" "${alice[@]}" stol-client db import /srv/stol-test/packaged-key.stol
expect 0 "rotation step 5 for a packaged key: revoke its id" sh -c '
  old=$(python3 -c '"'"'import hashlib,sys; print(hashlib.sha256(bytes.fromhex(open(sys.argv[1]).readline().split(":")[1].strip())).hexdigest()[:16])'"'"' \
      /etc/stol/keys/release-2026.pub)
  echo "$old   # release key 2026, rotated 2027-03" >> /etc/stol/keys/revoked'
expect 0 "rotation step 6 for a packaged key: rm its copy" rm /etc/stol/keys/release-2026.pub
expect 7 "db import of the packaged key's file once revoked (the package file still there)" \
  "${alice[@]}" stol-client db import /srv/stol-test/packaged-key.stol
[[ $out == *"[KEY_REVOKED]"* ]] || fail "the revoked packaged key's file was not refused as KEY_REVOKED: $out"
capture dpkg -V stol
[[ -z $(grep -v ' c /etc/stol/keys/revoked$' <<< "$out") ]] || fail "the rotation changed a package file (dpkg -V, besides the revoked conffile): $out"
expect_property stol-importd.service ActiveState active
progress "ok: the release key rotated as the docs say, for an operator's key (refused, trusted, overlapping, revoked, removed) and for the packaged one (a dated copy in /etc/stol/keys, revoked there); nothing restarted; dpkg -V flags only the revoked conffile"

# --- remove: programs gone, state kept
slow expect 0 "dpkg -r stol python3-stol" dpkg -r stol python3-stol
capture dpkg-query -W -f '${Status}' stol
[[ $out == "deinstall ok config-files" ]] || fail "after dpkg -r, expected stol to keep its conffiles: $out"
capture dpkg-query -W -f '${Status}' python3-stol
[[ $rc != 0 || $out == *" not-installed" ]] || fail "after dpkg -r, python3-stol is still installed: $out"
for path in /usr/bin/stol-client /usr/bin/stol-pipeline /usr/libexec/stol /usr/share/stol /lib/systemd/system/stol.target \
            /lib/systemd/system/stol-taxonomyd.socket /usr/lib/python3/dist-packages/stol /run/stol; do
  ! inside test -e "$path" || fail "$path is still there after dpkg -r"
done
for unit in stol-taxonomyd.socket stol-taxonomyd.service stol-favoritesd.service stol-importd.socket stol.target; do
  expect_property "$unit" ActiveState inactive
done
capture pgrep -u stol-taxonomy,stol-favorites,stol-import
[[ -z $out ]] || fail "STOL processes still run after dpkg -r: $out"
capture sh -c 'ls /var/lib/stol/favorites/'
[[ $out == *"$(inside id -u alice).sqlite"* && $out == *"$(inside id -u bob).sqlite"* ]] || fail "dpkg -r removed favourites: $out"
after_remove=$(inside sha256sum "$release_file" /var/lib/stol/databases/activation.json) || fail "dpkg -r removed the installed release"
[[ $after_remove == "$state_before" ]] || fail "dpkg -r changed the installed release"
for user in stol-taxonomy stol-favorites stol-import; do
  inside getent passwd "$user" >/dev/null || fail "dpkg -r removed the user $user"
done
inside test -s /etc/stol/keys/revoked || fail "dpkg -r removed the conffile /etc/stol/keys/revoked"
progress "ok: dpkg -r: programs, units, sockets and the Python package gone, no STOL process; favourites, the release, users and /etc/stol kept"

# --- purge: state, configuration, users and groups gone; nothing left behind, but the
# operator's own unit drop-in, which stays and is named
inside mkdir -p /etc/systemd/system/stol-importd.service.d
printf '[Service]\nEnvironment=STOL_ALLOW_FORMAT_1=yes\n' | inside tee /etc/systemd/system/stol-importd.service.d/local.conf >/dev/null
slow expect 0 "dpkg -P stol python3-stol" dpkg -P stol python3-stol
[[ $out == *"/etc/systemd/system/stol-importd.service.d stays"* ]] || fail "dpkg -P did not name the operator's drop-in it left: $out"
inside test -s /etc/systemd/system/stol-importd.service.d/local.conf || fail "dpkg -P removed the operator's drop-in"
inside rm -r /etc/systemd/system/stol-importd.service.d
capture dpkg-query -W -f '${Status}\n' stol
[[ $rc != 0 || $out == "unknown ok not-installed" ]] || fail "dpkg still knows stol after the purge: $out"
for path in /var/lib/stol /etc/stol /run/stol; do
  ! inside test -e "$path" || fail "$path is still there after dpkg -P"
done
for user in stol-taxonomy stol-favorites stol-import; do
  ! inside getent passwd "$user" >/dev/null || fail "the user $user is still there after dpkg -P"
done
for group in stol-taxonomy stol-favorites stol-import stol-admin; do
  ! inside getent group "$group" >/dev/null || fail "the group $group is still there after dpkg -P"
done
capture id -nG alice
[[ $out != *stol-admin* ]] || fail "alice is still in stol-admin after the purge: $out"
capture systemctl list-unit-files --no-legend 'stol*'
out=$(grep -v "^$target " <<< "$out" || true)
[[ -z $out ]] || fail "units of stol are still known after the purge: $out"
snapshot "$tmp/after.list"
left=$(comm -13 "$tmp/before.list" "$tmp/after.list")
gone=$(comm -23 "$tmp/before.list" "$tmp/after.list")
[[ -z $left && -z $gone ]] ||
  fail "the file system is not as it was before the install: left behind: ${left:-none}; gone: ${gone:-none}"
progress "ok: dpkg -P: /var/lib/stol, /etc/stol, /run/stol, the users and groups gone; /etc, /usr, /var and /srv hold the same files as before the install"

boot_poweroff
progress "powered off; all checks passed"
