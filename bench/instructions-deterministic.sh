#!/usr/bin/env bash
# Instructions per step of cases 1 and 2 (bench/instructions-child.mjs under callgrind) with V8 made
# deterministic (--predictable: no GC or compiler helper threads; fixed seeds), so that two builds
# can be compared exactly: repeat runs agree within about ±50 instructions a step, or ±1,500 in a
# span where V8 still compiles (when a function turns hot can move by a few steps).
#
#   bench/instructions-deterministic.sh [checkout] [1] [1i] [2] [12]
#
# checkout: a directory with bench/, dist/ (built), package.json and node_modules (default: this
# repository). Case 1 (1i: the same with an input on every step): 2,000 → 6,000 sequential steps (V8 still compiling steplog's hot functions: their
# one-time TurboFan cost is in this span) and 6,000 → 14,000 (steady); case 2: 100 runs at once,
# 10,000 → 30,000 steps in all; case 12: a stream's chunks written in one turn inside one step,
# 2,000 → 10,000 chunks (per chunk), and raw rows in one transaction the same way.
set -euo pipefail
dir=$(cd "${1:-$(dirname "$0")/..}" && pwd)
shift || true
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(1 2)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() { # kind steps -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null --error-exitcode=0 \
    node --predictable --hash-seed=1 --random-seed=1 "$dir/bench/instructions-child.mjs" "$1" "$2" "$tmp/$1-$2.db" \
    >"$tmp/out" 2>&1 || { tail -20 "$tmp/out" >&2 && return 1; }
  sed -n 's/.*Collected *: *\([0-9]*\).*/\1/p' "$tmp/out"
}
per_step() { # case kind n1 n2 [n3]: per step (per chunk for case 12) between each size and the next
  local c=$1 kind=$2 n a b unit=step
  [ "$c" = 12 ] && unit=chunk
  shift 2 && n=$1 && a=$(count "$kind" "$n") && shift
  for m in "$@"; do
    b=$(count "$kind" "$m")
    echo "case $c ($kind, $n → $m ${unit}s): $(((b - a) / (m - n))) instructions/$unit  [$a, $b]"
    n=$m a=$b
  done
}
for c in "${cases[@]}"; do
  case $c in
    1) per_step 1 steplog 2000 6000 14000 ;;
    1i) per_step 1i steplog-input 2000 6000 14000 ;;
    2) per_step 2 steplog-conc 10000 30000 ;;
    12) per_step 12 steplog-stream 2000 10000 && per_step 12 raw-stream 2000 10000 ;;
    *) echo "unknown case $c (1, 1i, 2 or 12)" >&2 && exit 2 ;;
  esac
done
