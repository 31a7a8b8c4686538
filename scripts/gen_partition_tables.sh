#!/usr/bin/env bash
# Regenerates the sm90 MMA partition tables (cuda/common/mma_partition.hpp) from CuTe's own
# derivation: the forward's (src/cuda/sm90/fwd_partition_table.hpp, generator
# scripts/gen_sm90_fwd_partition_table.cu) and the backward's (top of
# src/cuda/sm90/flash_bwd_kernel.cuh, generator at its end). With --check, changes nothing and
# exits 1 when a committed table differs from what its generator prints.
# No GPU. Each generator is one host program of every tile's derivations: ~40 s and 3.6 GB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
status=0
# name, generator source, its switch, the table's file
while read -r name src define table; do
  "$nvcc" -std=c++17 --expt-relaxed-constexpr -I src -I include -isystem .deps/cutlass/include \
    "-D$define" -x cu "$src" -o "$tmp/$name"
  "$tmp/$name" | LC_ALL=C sort -u >"$tmp/$name.lines"
  python3 - "$table" "$tmp/$name.lines" "$mode" <<'PY' || status=1
import re, sys
path, lines, mode = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
begin = re.search(r"^// ---- generated table.*\n", text, re.M)
end = text.index("// ---- end of generated table ----\n")
new = text[:begin.end()] + open(lines).read() + text[end:]
if mode == "--check":
    if new != text:
        sys.exit(f"{path}: the table is not what its generator prints (scripts/gen_partition_tables.sh)")
    print(f"{path}: up to date")
else:
    open(path, "w").write(new)
    print(f"{path}: {sum(1 for _ in open(lines))} lines")
PY
done <<'LIST'
fwd scripts/gen_sm90_fwd_partition_table.cu FA_SM90_FWD_PARTITION_GEN src/cuda/sm90/fwd_partition_table.hpp
bwd src/cuda/sm90/flash_bwd_kernel.cuh FA_SM90_BWD_PARTITION_GEN src/cuda/sm90/flash_bwd_kernel.cuh
LIST
exit $status
