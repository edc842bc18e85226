#!/usr/bin/env bash
# Installs the Debian packages chappie builds against, if any is missing. Says what it does.
set -euo pipefail

# Extra packages can be named on the command line (make bench adds sqlite3 for its comparison).
packages=(libsodium-dev libcurl4-openssl-dev libsqlite3-dev libzstd-dev zlib1g-dev pkg-config curl "$@")
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "==> System packages present: ${packages[*]}"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: missing ${missing[*]}, and apt-get is not available to install them." >&2
  echo "       Install the equivalents of: ${missing[*]} with your package manager." >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "error: missing ${missing[*]}; run as root or install sudo." >&2
    exit 1
  fi
fi

echo "==> Installing missing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "==> Installed: ${missing[*]}"
