#!/usr/bin/env bash
# Regenerates the real ccache samples beside this script (print-stats-<version>.tab/.json and
# stats-log-<version>.log) by running the ccache on PATH on three tiny C files. Local-only:
# the remote storage is a folder (file: backend) and the failing one is a closed loopback port.
#
# Expected totals (asserted by tests/unit/test_ccache_stats.py): 2 direct + 2 preprocessed hits,
# 2 of them served by remote storage, 3 misses, 2 uncacheable calls, 1 error, 1 remote error.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

version="$(ccache --version | head -n1 | awk '{print $3}')"
version="${version%.*}" # 4.14.2 -> 4.14
printf 'int add(int a, int b) { return a + b; }\n' > add.c
printf 'int main(void) { return 0; }\n' > main.c
printf 'int broken( {\n' > broken.c

cc() { env -i PATH="$PATH" HOME="$work" CCACHE_DIR="$work/local" CCACHE_CONFIGPATH="$work/ccache.conf" \
  CCACHE_STATSLOG="$work/stats.log" CCACHE_REMOTE_STORAGE="${remote:-file:$work/remote}" \
  ${nodirect:+CCACHE_NODIRECT=1} ccache "$@"; }

cc gcc -c add.c -o add.o                             # miss, stored locally and remotely
cc gcc -c add.c -o add.o                             # direct hit (local)
nodirect=1 cc gcc -c add.c -o add.o                  # preprocessed hit (local)
cc gcc -c main.c -o main.o                           # miss
cc gcc add.o main.o -o prog                          # uncacheable: called_for_link
cc gcc -c broken.c -o broken.o 2>/dev/null || true   # uncacheable: compile_failed
cc gcc -c add.c -o missing/add.o 2>/dev/null || true # error: bad_output_file
cc -C >/dev/null                                     # empty the local cache, keep the counters
cc gcc -c main.c -o main.o                           # direct hit served by remote storage
nodirect=1 cc gcc -c add.c -o add.o                  # preprocessed hit served by remote storage
remote="http://127.0.0.1:9/" cc gcc -O2 -c add.c -o add.o # miss + remote_storage_error

cc --print-stats > "$here/print-stats-$version.tab"
cc --print-stats --format=json > "$here/print-stats-$version.json"
cp stats.log "$here/stats-log-$version.log"
