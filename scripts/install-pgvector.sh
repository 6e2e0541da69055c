#!/usr/bin/env bash
# Makes the pgvector extension (`vector`) available to the PostgreSQL server on
# 127.0.0.1:${PG_PORT:-5432}. The knowledge-base search uses pgvector where the extension exists,
# and CI runs Debian 12 (bookworm), whose archive has no pgvector package. Debian trixie's
# *source* package is reachable from deb.debian.org, so this fetches it with a private apt state
# (the system's sources and lists are not touched; apt checks it against the Debian archive
# keyring), builds it against the server's headers and installs it.
#
# Idempotent: exits 0 at once when the server already offers the extension.
# Runs as root (apt-get, make install). Environment:
#   PG_PORT               server port (default 5432); user postgres, database test, no password
#   PGVECTOR_FORCE_BUILD  1 = build and install even when the extension is already available
set -euo pipefail

PG_PORT="${PG_PORT:-5432}"
SUITE=trixie
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

say() { printf 'pgvector: %s\n' "$*"; }
die() {
  printf 'pgvector: FAILED: %s\n' "$*" >&2
  exit 1
}
psql_test() {
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d test -w -X -v ON_ERROR_STOP=1 -qtA "$@"
}

# Prints 1 when the server offers the extension, nothing when not; fails when it cannot ask.
vector_available() {
  psql_test -c "select 1 from pg_available_extensions where name = 'vector'"
}

# Installs the given Debian packages, updating the system's package lists once first.
APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    apt-get update -qq || die "apt-get update failed"
    APT_UPDATED=1
  fi
  apt-get install -y -qq "$@" </dev/null || die "apt-get install $* failed"
}

# apt-get with a private source list, lists and cache under $WORK (the deb-src of $SUITE only).
# Downloads run as root: apt's _apt sandbox user cannot write to the private mktemp directory
# and would fall back to root anyway, with a warning.
apt_private() {
  apt-get -o "Dir::Etc::SourceList=$WORK/$SUITE-src.sources" -o Dir::Etc::SourceParts=/dev/null \
    -o "Dir::State::Lists=$WORK/lists" -o "Dir::Cache=$WORK/cache" -o APT::Sandbox::User=root "$@"
}

command -v psql >/dev/null 2>&1 || die "psql not found (is PostgreSQL installed?)"
available="$(vector_available)" ||
  die "cannot query PostgreSQL on 127.0.0.1:$PG_PORT as postgres, database test"
if [ "$available" = "1" ] && [ "${PGVECTOR_FORCE_BUILD:-0}" != "1" ]; then
  say "extension already available on 127.0.0.1:$PG_PORT"
  exit 0
fi
if [ "$available" = "1" ]; then
  say "already available; building anyway (PGVECTOR_FORCE_BUILD=1)"
fi

command -v apt-get >/dev/null 2>&1 || die "apt-get not available; install pgvector by hand"
[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get install, make install)"
[ -r "$KEYRING" ] || die "no Debian archive keyring at $KEYRING (package debian-archive-keyring)"

# The server's major version picks the headers; its own pg_config picks where to install.
version_num="$(psql_test -c 'show server_version_num')" || die "cannot read the server version"
case "$version_num" in '' | *[!0-9]*) die "unexpected server_version_num: '$version_num'" ;; esac
MAJOR=$((version_num / 10000))
PG_CONFIG="/usr/lib/postgresql/$MAJOR/bin/pg_config"
say "server is PostgreSQL $MAJOR"

if ! dpkg -s "postgresql-server-dev-$MAJOR" >/dev/null 2>&1; then
  say "installing postgresql-server-dev-$MAJOR"
  apt_install "postgresql-server-dev-$MAJOR"
fi
if ! command -v make >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
  say "installing make and gcc"
  apt_install make gcc
fi
[ -x "$PG_CONFIG" ] || die "no $PG_CONFIG after installing postgresql-server-dev-$MAJOR"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial"
cat >"$WORK/$SUITE-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $SUITE
Components: main
Signed-By: $KEYRING
EOF

say "fetching the $SUITE source package"
apt_private update -qq </dev/null || die "apt-get update of the $SUITE deb-src index failed"
(cd "$WORK" && apt_private source --download-only -qq pgvector </dev/null) ||
  die "apt-get source pgvector ($SUITE) failed"

shopt -s nullglob
tarballs=("$WORK"/pgvector_*.orig.tar.*)
[ "${#tarballs[@]}" -eq 1 ] ||
  die "expected one pgvector_*.orig.tar.* in $WORK, found ${#tarballs[@]}"
say "building $(basename "${tarballs[0]}")"
tar -xf "${tarballs[0]}" -C "$WORK"
sources=("$WORK"/pgvector-*/)
[ "${#sources[@]}" -eq 1 ] || die "expected one pgvector-* directory in $WORK, found ${#sources[@]}"
# OPTFLAGS="" drops -march=native, so the build runs on any x86-64 machine.
make -C "${sources[0]}" -s PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >/dev/null || die "make failed"
make -C "${sources[0]}" -s PG_CONFIG="$PG_CONFIG" OPTFLAGS="" install >/dev/null ||
  die "make install failed"

[ "$(vector_available)" = "1" ] ||
  die "built and installed, but the server on 127.0.0.1:$PG_PORT does not offer the extension"
say "extension installed and available on 127.0.0.1:$PG_PORT"
