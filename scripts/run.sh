#!/usr/bin/env bash
# The main job on a fresh machine: install what the build needs, build, run `fa run` (GPU when
# one is present and built for, else the CPU backend). Extra arguments go to `fa run`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/setup.sh
build=${FA_BUILD_DIR:-build}
jobs=${FA_JOBS:-$(nproc)}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release ${FA_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$jobs" --target fa
"$build/fa" run "$@"
