#!/bin/sh
# Installs the `gauntlet` command from a GitHub release: the binary archive for this machine,
# checked against its SHA-256 checksum, into $GAUNTLET_INSTALL_DIR (default ~/.local/bin).
# The release workflow publishes this file with @VERSION@ and @REPOSITORY@ filled in:
#
#   curl -LsSf https://github.com/OWNER/REPO/releases/download/vX.Y.Z/install.sh | sh
#
# Python users install the wheel instead (pip install gauntlet-harness), which brings the same
# command.
set -eu
version="${GAUNTLET_VERSION:-@VERSION@}"
repository="${GAUNTLET_REPOSITORY:-@REPOSITORY@}"
dest="${GAUNTLET_INSTALL_DIR:-$HOME/.local/bin}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-musl ;;
  Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
  Darwin-x86_64) target=x86_64-apple-darwin ;;
  Darwin-arm64) target=aarch64-apple-darwin ;;
  *) echo "gauntlet: no binary for $(uname -s) $(uname -m); pip install gauntlet-harness, or cargo install --git https://github.com/$repository gauntlet-harness" >&2; exit 1 ;;
esac

archive="gauntlet-$target.tar.gz"
base="https://github.com/$repository/releases/download/$version"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fetch() {
  if command -v curl >/dev/null 2>&1; then curl -fsSL "$1" -o "$2"; else wget -q "$1" -O "$2"; fi
}
fetch "$base/$archive" "$tmp/$archive"
fetch "$base/$archive.sha256" "$tmp/$archive.sha256"
expected=$(cut -d' ' -f1 < "$tmp/$archive.sha256")
if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum "$tmp/$archive" | cut -d' ' -f1)
else
  actual=$(shasum -a 256 "$tmp/$archive" | cut -d' ' -f1)
fi
if [ "$expected" != "$actual" ]; then
  echo "gauntlet: $archive does not match its checksum (expected $expected, got $actual)" >&2
  exit 1
fi
tar -xzf "$tmp/$archive" -C "$tmp"
mkdir -p "$dest"
mv "$tmp/gauntlet" "$dest/gauntlet"
chmod +x "$dest/gauntlet"
echo "installed $("$dest/gauntlet" --version) to $dest/gauntlet"
case ":$PATH:" in
  *":$dest:"*) ;;
  *) echo "add $dest to PATH to run it as gauntlet" ;;
esac
