#!/bin/sh
# Installs the Debian packages mtool builds and tests with (run as root).
set -e
PKGS="build-essential clang libcapstone-dev libzydis-dev libelf-dev libdwarf-dev libsqlite3-dev zlib1g-dev nettle-dev
      valgrind gfortran binutils llvm-14 llvm-19 time dpkg-dev python3"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
