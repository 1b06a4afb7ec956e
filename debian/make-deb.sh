#!/usr/bin/env bash
# Builds the Debian packages stol_<version>_amd64.deb and python3-stol_<version>_all.deb
# from what is built already (the static release binaries, the man pages and
# completions of `make man completions`, the bundled database): no Swift compiler runs.
#
#   debian/make-deb.sh OUTDIR
#
# Environment (the Makefile's `make deb` and `make deb-package` set them):
#   STOL_BIN_DIR      the release binaries (required)
#   STOL_BUNDLED_DB   the bundled database (required)
#   STOL_RELEASE_KEY  a public key file shipped as /usr/share/stol/keys/release.pub
#                     (empty: the package ships none; keys then go in /etc/stol/keys)
#   DEB_VERSION       the packages' version; empty: debian/changelog's. Another one
#                     (it must sort above the changelog's) builds the same tree as a
#                     newer package: the staged changelog gets an entry for it.
#   STOL_DPKG_DEB_OPTIONS options of dpkg-deb --build (none: xz; "-Zgzip -z1" is much faster)
#
# dpkg-buildpackage -b runs in a staged copy of debian/ (OUTDIR/.stage-VERSION/stol-VERSION/),
# so the repository's work tree gets none of its files; debian/rules installs into it
# with `make -C <repository> install-files`. The .deb, .changes and .buildinfo files
# end up in OUTDIR.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
: "${STOL_BIN_DIR:?set STOL_BIN_DIR to the release binaries}" "${STOL_BUNDLED_DB:?set STOL_BUNDLED_DB}"
# Nothing of a calling make's command line reaches debian/rules or install-files.
unset MAKEFLAGS MFLAGS MAKEOVERRIDES MAKELEVEL

changelog_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
upstream=${changelog_version%-*}
stol_version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' "$repo/Sources/STOLModel/STOLVersion.swift")
if [[ $upstream != "$stol_version" ]]; then
  echo "make-deb: debian/changelog is at $changelog_version but STOLVersion.current is $stol_version:" \
       "add a changelog entry for $stol_version-1 (dch -v $stol_version-1)" >&2
  exit 1
fi
version=${DEB_VERSION:-$changelog_version}
if [[ $version != "$changelog_version" ]] && ! dpkg --compare-versions "$version" gt "$changelog_version"; then
  echo "make-deb: DEB_VERSION=$version does not sort above debian/changelog's $changelog_version" >&2
  exit 1
fi

# Paths as absolute ones: dpkg-buildpackage runs in the staged copy.
bin_dir=$(readlink -f "$STOL_BIN_DIR")
bundled_db=$(readlink -f "$STOL_BUNDLED_DB")
[[ -x $bin_dir/stol-taxonomyd ]] || { echo "make-deb: no release binaries in STOL_BIN_DIR=$STOL_BIN_DIR (make build)" >&2; exit 1; }
[[ -s $bundled_db ]] || { echo "make-deb: no database at STOL_BUNDLED_DB=$STOL_BUNDLED_DB (make db)" >&2; exit 1; }
release_key=
if [[ -n ${STOL_RELEASE_KEY:-} ]]; then
  release_key=$(readlink -f "$STOL_RELEASE_KEY")
  [[ -s $release_key ]] || { echo "make-deb: STOL_RELEASE_KEY=$STOL_RELEASE_KEY is not a readable key file" >&2; exit 1; }
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
# A stage per version: make test builds its two versions side by side.
stage=$out/.stage-$version
rm -rf "$stage"
mkdir -p "$stage/stol-$version"
cp -a "$repo/debian" "$stage/stol-$version/debian"
rm -rf "$stage/stol-$version/debian/tmp" "$stage/stol-$version/debian/stol" "$stage/stol-$version/debian/python3-stol"
if [[ $version != "$changelog_version" ]]; then
  # The same tree again under a newer version, as a rebuild (Debian's binNMU) would be.
  maintainer=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Maintainer)
  distribution=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Distribution)
  { printf 'stol (%s) %s; urgency=medium\n\n' "$version" "$distribution"
    printf '  * Rebuild of %s from the same tree (DEB_VERSION=%s).\n\n' "$changelog_version" "$version"
    printf ' -- %s  %s\n\n' "$maintainer" "$(date -R)"
    cat "$repo/debian/changelog"; } > "$stage/stol-$version/debian/changelog"
fi

echo "make-deb: building stol $version from $bin_dir into $out"
( cd "$stage/stol-$version" &&
  STOL_SOURCE=$repo STOL_BIN_DIR=$bin_dir STOL_BUNDLED_DB=$bundled_db \
  STOL_RELEASE_KEY=$release_key STOL_DPKG_DEB_OPTIONS=${STOL_DPKG_DEB_OPTIONS:-} \
  dpkg-buildpackage -b --no-sign )
for file in "$stage"/*_"$version"_*.deb "$stage"/*_"$version"_*.changes "$stage"/*_"$version"_*.buildinfo; do
  mv -f "$file" "$out/"
done
rm -rf "$stage"
ls -l "$out"/*_"$version"_*
