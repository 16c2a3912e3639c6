#!/bin/sh
# Install vouch from a release archive, no Rust needed:
#
#   curl -fsSL https://github.com/OWNER/vouch/releases/latest/download/install.sh | sh
#
# Picks the archive for this machine (Linux x86_64/aarch64: static musl
# builds; macOS x86_64/arm64), downloads it and its .sha256, refuses it
# unless the checksum matches, and puts `vouch` in $VOUCH_INSTALL_DIR
# (default ~/.local/bin). Settings, all optional:
#
#   VOUCH_VERSION       a version such as 0.1.0 (default: the latest release)
#   VOUCH_INSTALL_DIR   where the binary goes
#   VOUCH_REPO          OWNER/NAME on GitHub (the release stamps its own)
#   VOUCH_DOWNLOAD_URL  the folder holding the archives instead (a mirror,
#                       or file:///path for a local build; scripts/release-check.sh)
set -eu

repo=${VOUCH_REPO:-@VOUCH_REPO@}
version=${VOUCH_VERSION:-latest}
dest=${VOUCH_INSTALL_DIR:-$HOME/.local/bin}

say() { printf 'vouch install: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

case "$(uname -s)" in
    Linux) os=unknown-linux-musl ;;
    Darwin) os=apple-darwin ;;
    *) die "no release for $(uname -s); on Windows use install.ps1, elsewhere build from source (cargo install vouch)" ;;
esac
case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) die "no release for $(uname -m); build from source (cargo install vouch)" ;;
esac
target="$arch-$os"

if [ -n "${VOUCH_DOWNLOAD_URL:-}" ]; then
    base=$VOUCH_DOWNLOAD_URL
    [ "$version" != latest ] || die "VOUCH_DOWNLOAD_URL needs VOUCH_VERSION (the archive's name holds it)"
else
    case "$repo" in
        @*) die "set VOUCH_REPO=OWNER/NAME (this copy of install.sh was not stamped by a release)" ;;
    esac
    if [ "$version" = latest ]; then
        # The latest release's tag, from where GitHub redirects.
        tag=$(curl -fsSLI -o /dev/null -w '%{url_effective}' "https://github.com/$repo/releases/latest") \
            || die "cannot reach github.com/$repo"
        version=${tag##*/v}
        case "$version" in
            [0-9]*.[0-9]*.[0-9]*) ;;
            *) die "github.com/$repo has no release yet (latest points at $tag)" ;;
        esac
    fi
    base="https://github.com/$repo/releases/download/v$version"
fi
archive="vouch-$version-$target.tar.gz"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'rm -rf "$tmp"; exit 130' INT TERM
fetch() {
    case "$1" in
        file://*) cp "${1#file://}" "$2" ;;
        *) curl -fsSL --proto '=https' --tlsv1.2 -o "$2" "$1" ;;
    esac
}
say "downloading $archive"
fetch "$base/$archive" "$tmp/$archive" || die "cannot download $base/$archive"
fetch "$base/$archive.sha256" "$tmp/$archive.sha256" || die "cannot download its checksum"

want=$(cut -d ' ' -f 1 <"$tmp/$archive.sha256")
if command -v sha256sum >/dev/null 2>&1; then
    have=$(sha256sum "$tmp/$archive" | cut -d ' ' -f 1)
else
    have=$(shasum -a 256 "$tmp/$archive" | cut -d ' ' -f 1)
fi
[ -n "$want" ] && [ "$want" = "$have" ] || die "checksum mismatch for $archive (want $want, got $have); nothing installed"

tar -xzf "$tmp/$archive" -C "$tmp"
mkdir -p "$dest"
# Into place by rename, so a running vouch is never half overwritten.
cp "$tmp/vouch-$version-$target/vouch" "$dest/.vouch.new"
chmod 755 "$dest/.vouch.new"
mv -f "$dest/.vouch.new" "$dest/vouch"
say "installed $("$dest/vouch" --version) in $dest/vouch"
case ":$PATH:" in
    *":$dest:"*) ;;
    *) say "$dest is not on PATH; add it (export PATH=\"$dest:\$PATH\")" ;;
esac
