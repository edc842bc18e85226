#!/usr/bin/env bash
# Installs chappie's shell completions (bash, zsh, fish) and its man page, generated from the
# commands themselves, and its documents, under PREFIX. Usage: install-extras.sh CHAPPIE GENERATE_MANUAL PREFIX
set -euo pipefail

chappie="$1"
generate_manual="$2"
prefix="$3"

install -d "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
  "$prefix/share/fish/vendor_completions.d" "$prefix/share/man/man1"
"$chappie" --generate-completion-script bash > "$prefix/share/bash-completion/completions/chappie"
"$chappie" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_chappie"
"$chappie" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/chappie.fish"

pages="$(mktemp -d)"
trap 'rm -rf "$pages"' EXIT
"$generate_manual" "$chappie" --output-directory "$pages" --date "$(date -u +%Y-%m-%d)" --authors "the chappie developers"
install -m 0644 "$pages/chappie.1" "$prefix/share/man/man1/chappie.1"
# The documents messages point to (docs/…md in the source, share/doc/chappie/ installed).
root="$(cd "$(dirname "$0")/.." && pwd)"
install -d "$prefix/share/doc/chappie"
install -m 0644 "$root/README.md" "$root/CHANGELOG.md" "$root"/docs/*.md "$prefix/share/doc/chappie/"
echo "==> Installed completions (bash, zsh, fish), the man page (man chappie) and the documents (share/doc/chappie) under $prefix/share"
