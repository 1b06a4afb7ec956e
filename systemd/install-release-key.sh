#!/usr/bin/env bash
# Installs the public key the package ships for the verifier and the coordinator to
# trust (called by `make install-files`), so that installing never weakens trust:
#
#   install-release-key.sh INSTALLED RELEASE_KEY DEV_KEY INSTALL_DEV_KEY [OPERATOR_KEYS_DIR]
#
# - RELEASE_KEY (a file) given: it is installed as INSTALLED, replacing what was there.
# - Else a key already at INSTALLED is kept (running `make install` again to upgrade
#   leaves it as it is: the development key never replaces or joins it silently).
# - Else, with INSTALL_DEV_KEY=1, the development key DEV_KEY is installed, with a
#   warning, but only on a machine that trusts no key at all (none beside INSTALLED,
#   none in OPERATOR_KEYS_DIR, /etc/stol/keys): it never joins an operator's keys.
# - Else nothing is installed, and imports are refused until a key is there.
# It ends by naming every trusted key (both directories): its key id (the first 8 bytes
# of SHA-256 of the public key, as in STOL-FORMAT.md §7, which errors name), its file and
# the file's SHA-256, its not-after, and the revoked ids (DISPLAY_PATH and
# DISPLAY_OPERATOR_DIR: the paths without DESTDIR).
set -euo pipefail
installed=$1; release_key=$2; dev_key=$3; install_dev_key=$4; operator_dir=${5:-}
display=${DISPLAY_PATH:-$installed}
package_dir=$(dirname "$installed")
display_package_dir=$(dirname "$display")
display_operator_dir=${DISPLAY_OPERATOR_DIR:-$operator_dir}

# Any *.pub besides INSTALLED, in either directory.
other_keys() {
  local dir file
  for dir in "$package_dir" $operator_dir; do
    for file in "$dir"/*.pub; do
      [ -e "$file" ] && [ "$file" != "$installed" ] && echo "$file"
    done
  done
  return 0
}

if [ -n "$release_key" ]; then
  [ -s "$release_key" ] || { echo "error: RELEASE_KEY=$release_key is not a readable key file" >&2; exit 1; }
  install -m 0644 "$release_key" "$installed"
  echo "release key: $release_key installed"
elif [ -s "$installed" ]; then
  echo "release key: the installed one is kept (RELEASE_KEY=FILE replaces it)"
elif [ "$install_dev_key" = 1 ] && [ -s "$dev_key" ] && [ -z "$(other_keys)" ]; then
  install -m 0644 "$dev_key" "$installed"
  echo "warning: the DEVELOPMENT key $dev_key is installed as the release key (INSTALL_DEV_KEY=1)"
elif [ "$install_dev_key" = 1 ] && [ -n "$(other_keys)" ]; then
  echo "release key: not installed; the development key does not join the keys already trusted (INSTALL_DEV_KEY=1 ignored)"
elif [ -n "$(other_keys)" ]; then
  echo "release key: none at $display; the keys below are trusted (RELEASE_KEY=FILE installs one there)"
else
  echo "warning: no release key installed: imports are refused until $display or a key in" \
    "${display_operator_dir:-/etc/stol/keys} exists (RELEASE_KEY=FILE; INSTALL_DEV_KEY=1 for the development key of make build-db)"
fi

# The key id of a public key file, or nothing when it holds no key line.
key_id() {
  local hex
  hex=$(grep -m1 -o 'STOL-ED25519-PUBLIC-KEY-V1:[0-9a-fA-F]\{64\}' "$1" 2>/dev/null | cut -d: -f2) || true
  [ -n "$hex" ] || return 0
  # shellcheck disable=SC2059
  printf "$(echo "$hex" | sed 's/../\\x&/g')" | sha256sum | cut -c1-16
}

for pair in "$package_dir=$display_package_dir" ${operator_dir:+"$operator_dir=$display_operator_dir"}; do
  dir=${pair%%=*}; shown=${pair#*=}
  for file in "$dir"/*.pub; do
    [ -s "$file" ] || continue
    id=$(key_id "$file")
    not_after=$(sed -n 's/^[[:space:]]*not-after:[[:space:]]*//p' "$file" | head -1)
    echo "trusted: key ${id:-(no key line: not trusted)} $shown/$(basename "$file"), SHA-256 $(sha256sum < "$file" | cut -d' ' -f1)${not_after:+, not after $not_after}"
  done
  if [ -s "$dir/revoked" ]; then
    echo "revoked ($shown/revoked): $(sed 's/#.*//' "$dir/revoked" | tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//')"
  fi
done
