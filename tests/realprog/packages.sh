# tests/realprog/packages.sh — Debian packages and sources for the real
# programs, sourced by run.sh and sim.sh (which set $WORK, the cache:
# $MTOOL_REALPROG_DIR).  As root: adds deb-src entries when apt has none.
# shellcheck shell=bash

log() { echo "== $*" >&2; }

# --- system setup (root): deb-src entries, packages -----------------------

APT_UPDATED=0
apt_update() { [ $APT_UPDATED -eq 1 ] || { apt-get update -qq > /dev/null; APT_UPDATED=1; }; }

ensure_deb_src() {
    if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ &&
        ! grep -rqsE '^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        log "adding deb-src entries (/etc/apt/sources.list.d/mtool-deb-src.*)"
        if [ -f /etc/apt/sources.list.d/debian.sources ]; then
            sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                > /etc/apt/sources.list.d/mtool-deb-src.sources
        else
            sed -n 's/^deb \([^[]\)/deb-src \1/p; s/^deb \(\[.*\)/deb-src \1/p' /etc/apt/sources.list \
                > /etc/apt/sources.list.d/mtool-deb-src.list
        fi
        APT_UPDATED=0
        apt_update
    elif ! ls /var/lib/apt/lists/*_Sources* > /dev/null 2>&1; then
        apt_update
    fi
}

# ensure_packages PKG...: installs those not installed.
ensure_packages() {
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}

# fetch PKG: prints the unpacked source directory of PKG (cached).
fetch() {
    local pkg=$1 dir
    dir=$(ls -d "$WORK/$pkg/src/"*/ 2>/dev/null | head -1 || true)
    if [ -z "$dir" ]; then
        ensure_packages dpkg-dev
        ensure_deb_src
        log "$pkg: apt-get source"
        rm -rf "$WORK/$pkg/src"
        mkdir -p "$WORK/$pkg/src"
        (cd "$WORK/$pkg/src" && apt-get source -qq "$pkg" > ../apt-get-source.log 2>&1) ||
            { echo "apt-get source $pkg failed: see $WORK/$pkg/apt-get-source.log" >&2; return 1; }
        dir=$(ls -d "$WORK/$pkg/src/"*/ | head -1)
    fi
    echo "${dir%/}"
}

# unpack_second PKG SRC KIND: a pristine second unpack of PKG's source (its
# .dsc beside SRC, the cached one) in $WORK/PKG/KIND/src, for a second
# configuration (sim.sh's static build, run.sh's shared libraries); prints it.
unpack_second() {
    local dir=$WORK/$1/$3
    if [ ! -d "$dir/src" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        dpkg-source -x "$(ls "$(dirname "$2")"/*.dsc | head -1)" "$dir/src" > "$dir/dpkg-source.log" 2>&1 ||
            { echo "dpkg-source -x failed: $dir/dpkg-source.log" >&2; return 1; }
        find "$dir" -maxdepth 1 -type f -name '*.orig.tar.*' -delete
    fi
    echo "$dir/src"
}
