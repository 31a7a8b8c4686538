#!/usr/bin/env bash
# Compiler launcher: runs the compile, appends "seconds<TAB>peak_MB<TAB>output<TAB>cpu_seconds" to $1
# (wall time; user + system CPU time of the compiler and its children, which a parallel build's
# other jobs do not add to, unless they slow the core it runs on).
log=$1; shift
out=unknown; prev=
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
tf=$(mktemp)
/usr/bin/time -f "%e %M %U %S" -o "$tf" "$@"; rc=$?
read -r secs kb usr sys < <(tail -n 1 "$tf") 2>/dev/null || { secs=0; kb=0; usr=0; sys=0; }
rm -f "$tf"
printf '%s\t%d\t%s\t%s\n' "$secs" "$(( ${kb:-0} / 1024 ))" "$out" "$(echo "${usr:-0} ${sys:-0}" | awk '{printf "%.2f", $1 + $2}')" >> "$log"
exit $rc
