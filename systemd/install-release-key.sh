#!/usr/bin/env bash
# Installs the public key the verifier trusts (called by `make install-files`), so that
# installing never weakens trust:
#
#   install-release-key.sh INSTALLED RELEASE_KEY DEV_KEY INSTALL_DEV_KEY
#
# - RELEASE_KEY (a file) given: it is installed as INSTALLED, replacing what was there.
# - Else a key already at INSTALLED is kept (running `make install` again to upgrade
#   leaves it as it is: the development key never replaces or joins it silently).
# - Else, with INSTALL_DEV_KEY=1, the development key DEV_KEY is installed, with a warning.
# - Else nothing is installed, and imports are refused until a key is there.
# It ends by naming the trusted key and its SHA-256 (DISPLAY_PATH: the path without DESTDIR).
set -euo pipefail
installed=$1; release_key=$2; dev_key=$3; install_dev_key=$4
display=${DISPLAY_PATH:-$installed}
if [ -n "$release_key" ]; then
  [ -s "$release_key" ] || { echo "error: RELEASE_KEY=$release_key is not a readable key file" >&2; exit 1; }
  install -m 0644 "$release_key" "$installed"
  echo "release key: $release_key installed"
elif [ -s "$installed" ]; then
  echo "release key: the installed one is kept (RELEASE_KEY=FILE replaces it)"
elif [ "$install_dev_key" = 1 ] && [ -s "$dev_key" ]; then
  install -m 0644 "$dev_key" "$installed"
  echo "warning: the DEVELOPMENT key $dev_key is installed as the release key (INSTALL_DEV_KEY=1)"
else
  echo "warning: no release key installed: imports are refused until $display exists" \
    "(RELEASE_KEY=FILE; INSTALL_DEV_KEY=1 for the development key of make build-db)"
fi
if [ -s "$installed" ]; then
  echo "trusted: $display, SHA-256 $(sha256sum < "$installed" | cut -d' ' -f1)"
fi
