#!/bin/sh
# Installs the Debian packages mtool builds and tests with (run as root).
set -e
PKGS="build-essential clang libnuma-dev libcapstone-dev libzydis-dev libelf-dev libdwarf-dev libsqlite3-dev zlib1g-dev nettle-dev
      valgrind gfortran binutils llvm-14 llvm-19 time dpkg-dev python3 chromium
      openmpi-bin libopenmpi-dev sqlite3 xz-utils bzip2 zstd"
# The report's browser tests (tests/browser) drive chromium with npm's playwright-core.
command -v npm > /dev/null || PKGS="$PKGS nodejs npm"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# playwright-core at the version of tests/browser/package-lock.json (no browser download:
# it drives Debian's chromium).
if [ ! -d "$(dirname "$0")/../tests/browser/node_modules/playwright-core" ]; then
    (cd "$(dirname "$0")/../tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
fi
