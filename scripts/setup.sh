#!/usr/bin/env bash
# Installs what the build needs on a fresh machine; safe to re-run (each step checks first).
#   - Debian packages: cmake, ninja, g++, GoogleTest, OpenBLAS (CPU benchmark baseline)
#   - CuTe/CUTLASS 4.2.0 headers from the PyPI wheel nvidia-cutlass==4.2.0.0, unpacked into .deps/
#   - Python build/test packages (nanobind, scikit-build-core, numpy, pytest) when asked with --python
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps="$root/.deps"
want_python=0
for a in "$@"; do [ "$a" = "--python" ] && want_python=1; done

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
# OpenBLAS's own header (the generic x86_64-linux-gnu/cblas.h may be reference BLAS, 7x slower).
[ -f /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || [ -f /usr/include/openblas/cblas.h ] ||
  need+=(libopenblas-dev)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]} (no apt-get as root here); continuing" >&2
  fi
fi

# CUTLASS headers: only include/ from cutlass_library's source folder; its Python deps are not needed.
if [ ! -f "$deps/cutlass/include/cute/tensor.hpp" ]; then
  if [ -n "$(ls "$deps"/wheel/nvidia_cutlass-4.2.0.0-*.whl 2>/dev/null)" ]; then
    echo "setup: using the cached nvidia-cutlass wheel"
  else
    echo "setup: downloading nvidia-cutlass==4.2.0.0"
    python3 -m pip download -q --no-deps nvidia-cutlass==4.2.0.0 -d "$deps/wheel"
  fi
  tmp=$(mktemp -d)
  python3 - "$deps"/wheel/nvidia_cutlass-4.2.0.0-*.whl "$tmp" <<'PY'
import sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith(prefix) and not n.endswith("/"):
            z.extract(n, out)
PY
  mkdir -p "$deps/cutlass"
  rm -rf "$deps/cutlass/include"
  mv "$tmp/cutlass_library/source/include" "$deps/cutlass/include"
  rm -rf "$tmp"
fi
echo "setup: CUTLASS headers in $deps/cutlass/include"

# GoogleTest sources for the GPU machine, whose image has no libgtest-dev: scripts/gpu/check.sh
# builds them from .deps/googletest, which travels to the device with .deps.
if [ ! -f "$deps/googletest/CMakeLists.txt" ] && [ -f /usr/src/googletest/CMakeLists.txt ]; then
  mkdir -p "$deps" && cp -r /usr/src/googletest "$deps/googletest"
fi

if [ "$want_python" = 1 ]; then
  python3 - <<'PY' || python3 -m pip install -q nanobind scikit-build-core numpy pytest
import nanobind, scikit_build_core, numpy, pytest
PY
fi
