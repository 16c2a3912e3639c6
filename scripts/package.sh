#!/usr/bin/env bash
# Build one release archive of vouch for a target, with its checksum.
#
#   scripts/package.sh [--target TRIPLE] [--out DIR]
#
# Builds `vouch` with `cargo build --release --locked --target TRIPLE`
# (default: this machine's static Linux target, x86_64- or
# aarch64-unknown-linux-musl, when musl-gcc is there; else the host's),
# stages it with README.md, LICENSE and CHANGELOG.md in
# `vouch-VERSION-TRIPLE/`, and writes to DIR (default target/dist):
#
#   vouch-VERSION-TRIPLE.tar.gz          (.zip for Windows targets)
#   vouch-VERSION-TRIPLE.tar.gz.sha256   ("<hex>  <file name>", as sha256sum -c reads it)
#
# The release workflow (.github/workflows/release.yml) runs this on each
# platform; scripts/release-check.sh runs it here, verifies the checksum and
# installs the archive with scripts/install.sh. It prints the archive's path
# as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

target=""
out="target/dist"
while [ $# -gt 0 ]; do
    case "$1" in
        --target) target=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "scripts/package.sh: unknown argument $1 (--target TRIPLE, --out DIR)" >&2; exit 2 ;;
    esac
done

host=$(rustc -vV | sed -n 's/^host: //p')
if [ -z "$target" ]; then
    case "$host" in
        x86_64-unknown-linux-gnu | aarch64-unknown-linux-gnu)
            musl=${host%-gnu}-musl
            if command -v musl-gcc >/dev/null && rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
                target=$musl
            else
                echo "scripts/package.sh: no musl-gcc or rustup target $musl; building for $host (dynamically linked)" >&2
                target=$host
            fi
            ;;
        *) target=$host ;;
    esac
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
name="vouch-$version-$target"
exe=vouch
case "$target" in *windows*) exe=vouch.exe ;; esac

# Static C code (the bundled SQLite) for musl targets goes through musl-gcc.
if [[ "$target" == *-linux-musl ]] && command -v musl-gcc >/dev/null; then
    export "CC_${target//-/_}=musl-gcc"
fi
# Where this checkout and cargo's home are stays out of the binary (panic
# messages name source files), so the same commit builds the same bytes
# from any folder.
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$PWD=vouch --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=cargo"
echo "scripts/package.sh: building $name" >&2
start=$SECONDS
cargo build --release --locked --target "$target" -p vouch --bin vouch >&2
echo "scripts/package.sh: built in $((SECONDS - start)) s" >&2

stage="$out/$name"
rm -rf "$stage"
mkdir -p "$stage"
cp "target/$target/release/$exe" "$stage/"
case "$target" in
    *windows* | *apple*) ;;
    *) strip "$stage/$exe" 2>/dev/null || true ;;
esac
cp README.md LICENSE CHANGELOG.md "$stage/"

cd "$out"
case "$target" in
    *windows*)
        archive="$name.zip"
        rm -f "$archive"
        if command -v zip >/dev/null; then
            zip -qr "$archive" "$name"
        else
            # Windows runners: PowerShell's own archiver.
            powershell.exe -NoProfile -Command "Compress-Archive -Path '$name' -DestinationPath '$archive'"
        fi
        ;;
    *)
        archive="$name.tar.gz"
        # Reproducible: sorted names, fixed owner and time. GNU tar (gtar
        # on macOS, where tar is bsdtar) or, failing that, Python's tarfile.
        gnutar=""
        for t in tar gtar; do
            if command -v "$t" >/dev/null && "$t" --version 2>/dev/null | grep -q GNU; then
                gnutar=$t
                break
            fi
        done
        if [ -n "$gnutar" ]; then
            "$gnutar" --sort=name --owner=0 --group=0 --numeric-owner \
                --mtime="@${SOURCE_DATE_EPOCH:-0}" -cf - "$name" | gzip -n -9 >"$archive"
        else
            python3 - "$name" "$archive" "${SOURCE_DATE_EPOCH:-0}" <<'PY'
import gzip, os, sys, tarfile
name, archive, mtime = sys.argv[1], sys.argv[2], int(sys.argv[3])
paths = [name] + sorted(os.path.join(d, f) for d, ds, fs in os.walk(name) for f in ds + fs)
with open(archive, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
    with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for p in paths:
            info = tar.gettarinfo(p)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = mtime
            with open(p, "rb") if info.isfile() else open(os.devnull, "rb") as f:
                tar.addfile(info, f if info.isfile() else None)
PY
        fi
        ;;
esac
if command -v sha256sum >/dev/null; then
    sha256sum "$archive" >"$archive.sha256"
else
    shasum -a 256 "$archive" >"$archive.sha256"
fi
rm -rf "$name"
echo "scripts/package.sh: $(cat "$archive.sha256")" >&2
echo "$(pwd)/$archive"
