#!/usr/bin/env bash
# Packages built chappie binaries for machines without a Swift toolchain: a tarball with an
# install.sh, and a .deb that declares its runtime dependencies. `make dist` builds the release
# binaries (static Swift runtime) and runs this; the tests run it on the debug build.
# Usage: dist.sh BIN_DIR GENERATE_MANUAL OUT_DIR
#   BIN_DIR holds chappie and chappie-full; GENERATE_MANUAL is the generate-manual tool.
# Writes OUT_DIR/chappie-VERSION-linux-ARCH.tar.gz and OUT_DIR/chappie_VERSION_ARCH.deb.
set -euo pipefail

bin=$1
generate_manual=$2
out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in chappie chappie-full; do
  [ -x "$bin/$tool" ] || { echo "dist: $bin/$tool is missing; build it first (make dist does)" >&2; exit 1; }
done
command -v strip >/dev/null 2>&1 || { echo "dist: strip is missing; install binutils" >&2; exit 1; }
command -v dpkg-deb >/dev/null 2>&1 || { echo "dist: dpkg-deb is missing; install dpkg" >&2; exit 1; }

version=$("$bin/chappie" --version)
arch=$(dpkg --print-architecture)
name="chappie-$version-linux-$arch"
# What the binaries need at run time, as Debian names it: libcurl is opened when the first request
# is made (never linked), the others are linked. The Swift runtime is inside a release build.
depends="libc6, libgcc-s1, libstdc++6, zlib1g, libsodium23, libsqlite3-0, libcurl4"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# The tree both packages hold, under a prefix: bin/, libexec/chappie/, share/.
stage() { # PREFIX_DIR
  install -d "$1/bin" "$1/libexec/chappie"
  install -m 0755 "$bin/chappie" "$1/bin/chappie"
  install -m 0755 "$bin/chappie-full" "$1/libexec/chappie/chappie-full"
  strip "$1/bin/chappie" "$1/libexec/chappie/chappie-full"
  "$root/scripts/install-extras.sh" "$1/bin/chappie" "$generate_manual" "$1" > /dev/null
}

echo "==> Packaging chappie $version for $arch"
stage "$work/$name"
cat > "$work/$name/install.sh" <<'INSTALL'
#!/bin/sh
# Installs chappie under PREFIX (default /usr/local): PREFIX/bin/chappie, the full binary in
# PREFIX/libexec/chappie/, the completions and the man page in PREFIX/share. No Swift toolchain
# is needed; the machine needs libsodium23, libsqlite3-0 and libcurl4 (apt-get install them).
set -eu
prefix=${1:-/usr/local}
here=$(cd "$(dirname "$0")" && pwd)
install -d "$prefix/bin" "$prefix/libexec/chappie" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
  "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
install -m 0755 "$here/libexec/chappie/chappie-full" "$prefix/libexec/chappie/chappie-full"
install -m 0755 "$here/bin/chappie" "$prefix/bin/chappie"
install -m 0644 "$here/share/man/man1/chappie.1" "$prefix/share/man/man1/chappie.1"
install -m 0644 "$here/share/bash-completion/completions/chappie" "$prefix/share/bash-completion/completions/chappie"
install -m 0644 "$here/share/zsh/site-functions/_chappie" "$prefix/share/zsh/site-functions/_chappie"
install -m 0644 "$here/share/fish/vendor_completions.d/chappie.fish" "$prefix/share/fish/vendor_completions.d/chappie.fish"
install -d "$prefix/share/doc/chappie"
install -m 0644 "$here"/share/doc/chappie/*.md "$prefix/share/doc/chappie/"
echo "Installed chappie in $prefix. Check it with: $prefix/bin/chappie doctor"
INSTALL
chmod 0755 "$work/$name/install.sh"
cp "$root/README.md" "$work/$name/README.md"
tar -C "$work" -czf "$out/$name.tar.gz" "$name"
echo "    $out/$name.tar.gz"

deb="$work/deb"
stage "$deb/usr"
install -d "$deb/DEBIAN"
size=$(du -sk "$deb/usr" | cut -f1)
cat > "$deb/DEBIAN/control" <<CONTROL
Package: chappie
Version: $version
Architecture: $arch
Maintainer: the chappie developers <chappie@localhost>
Installed-Size: $size
Depends: $depends
Section: utils
Priority: optional
Description: several ChatGPT accounts for Codex, from one machine or a fleet
 Signs ChatGPT accounts in, keeps their tokens sealed and fresh, polls their
 usage windows, and switches the Codex CLI between them.
CONTROL
dpkg-deb --root-owner-group --build "$deb" "$out/chappie_${version}_$arch.deb" > /dev/null
echo "    $out/chappie_${version}_$arch.deb"
