#!/usr/bin/env bash
# Build this machine's release archive and install it the way a person
# would, without Rust: scripts/package.sh, then `sha256sum -c`, then
# scripts/install.sh from the local folder into a temporary prefix, then
# the installed binary initialises a knowledge base and answers `status`.
# A tampered copy must be refused by the installer, and `cargo package`
# must accept the published crates' metadata. scripts/test.sh runs this;
# it prints the archive and its sha256 at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

archive=$(scripts/package.sh "$@" | tail -n1)
dir=$(dirname "$archive")
file=$(basename "$archive")
(cd "$dir" && sha256sum -c "$file.sha256" >/dev/null) || {
    echo "scripts/release-check.sh: $file does not match its .sha256" >&2
    exit 1
}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
target=${file#vouch-"$version"-}
target=${target%.tar.gz}
target=${target%.zip}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ "$target" != *-linux-musl && "$target" != *-apple-darwin ]]; then
    echo "scripts/release-check.sh: $file built and verified; install.sh installs only the static Linux and macOS archives, so the install check is skipped for $target" >&2
else
    # The installer picks the musl archive on Linux: serve it as that name.
    VOUCH_DOWNLOAD_URL="file://$dir" VOUCH_VERSION="$version" VOUCH_INSTALL_DIR="$tmp/bin" \
        sh scripts/install.sh
    bin="$tmp/bin/vouch"
    "$bin" --version | grep -qx "vouch $version" || {
        echo "scripts/release-check.sh: the installed vouch says $("$bin" --version)" >&2
        exit 1
    }
    # A static binary loads nothing: ldd lists no `lib => path` line.
    if [[ "$target" == *-linux-musl ]] && ldd "$bin" 2>&1 | grep -q '=>'; then
        echo "scripts/release-check.sh: $bin is dynamically linked: $(ldd "$bin" | tr '\n' ' ')" >&2
        exit 1
    fi
    mkdir -p "$tmp/project"
    (cd "$tmp/project" && "$bin" init >/dev/null && VOUCH_AGENT=check "$bin" --json status >/dev/null)

    # A tampered archive is refused and installs nothing.
    mkdir -p "$tmp/bad"
    cp "$archive.sha256" "$tmp/bad/"
    { cat "$archive"; printf 'x'; } >"$tmp/bad/$file"
    if VOUCH_DOWNLOAD_URL="file://$tmp/bad" VOUCH_VERSION="$version" VOUCH_INSTALL_DIR="$tmp/badbin" \
        sh scripts/install.sh 2>"$tmp/bad.err"; then
        echo "scripts/release-check.sh: install.sh took a tampered archive" >&2
        exit 1
    fi
    grep -q "checksum mismatch" "$tmp/bad.err"
    [ ! -e "$tmp/badbin/vouch" ]
fi
# The crates a registry would take: their metadata and contents.
cargo package --locked --no-verify --allow-dirty -p vouch-core -p vouch-model -p vouch-postgres -p vouch >/dev/null 2>"$tmp/package.err" || {
    cat "$tmp/package.err" >&2
    echo "scripts/release-check.sh: cargo package refused the crates" >&2
    exit 1
}
echo "scripts/release-check.sh: ok: $(cat "$archive.sha256") ($(du -h "$archive" | cut -f1))"
