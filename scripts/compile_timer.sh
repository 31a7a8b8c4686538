#!/usr/bin/env bash
# Compiler launcher: runs the compile, appends "seconds<TAB>peak_MB<TAB>output" to $1.
log=$1; shift
out=unknown; prev=
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
tf=$(mktemp)
/usr/bin/time -f "%e %M" -o "$tf" "$@"; rc=$?
read -r secs kb < <(tail -n 1 "$tf") 2>/dev/null || { secs=0; kb=0; }
rm -f "$tf"
printf '%s\t%d\t%s\n' "$secs" "$(( ${kb:-0} / 1024 ))" "$out" >> "$log"
exit $rc
