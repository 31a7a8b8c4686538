#!/usr/bin/env python3
"""Sorts one racecheck run's hazards into the forward's tile-handoff records and everything else.

    python3 scripts/gpu/race_classify.py sanitizer.log [first line of the run's section]

racecheck does not take an mbarrier arrive → wait as ordering plain shared-memory stores before
loads: scripts/gpu/racecheck_probe.sh runs a 2-warp, correctly ordered mbarrier handoff under it,
and it reports that handoff's loads and stores as races (session 31). The FA3 forward's tile
handoff (FA_SM90_FWD_TILE_HANDOFF, HandoffRing in src/cuda/common/sm90_pipeline.hpp) is such a
handoff, so its records show up as hazards whose writes are all in HandoffRing<...>::publish.
Those are counted apart; any other hazard (a write anywhere else, a hidden hazard beyond the
print limit) fails the run. Prints one verdict line; exit 0 = no hazard but the handoff's.
"""
import re
import sys


def classify(lines):
    blocks = []  # each: list of (kind, site) of one "Race reported between ..." report
    for ln in lines:
        m = re.search(r"Race reported between (Read|Write) access at (.*)", ln)
        if m:
            blocks.append([(m.group(1), m.group(2))])
            continue
        m = re.search(r"^=+\s+and (Read|Write) access at (.*)", ln)
        if m and blocks:
            blocks[-1].append((m.group(1), m.group(2)))
            continue
        # --racecheck-report hazard|all: one "Potential WAR/RAW/WAW hazard" per shared-memory
        # byte, then its two accesses as "Read Thread (x,y,z) at SITE" / "Write Thread ... at SITE".
        if re.search(r"Error: Potential \w+ hazard", ln):
            blocks.append([])
            continue
        m = re.search(r"^=+\s+(Read|Write) Thread \([^)]*\) at (.*)", ln)
        if m and blocks:
            blocks[-1].append((m.group(1), m.group(2)))
    known = sum(1 for b in blocks if all(k == "Read" or "HandoffRing<" in s for k, s in b)
                and any("HandoffRing<" in s for _, s in b))
    summary = next((ln for ln in reversed(lines) if "RACECHECK SUMMARY" in ln), "")
    m = re.search(r"(\d+) hazards displayed \((\d+) errors, (\d+) warnings\)", summary)
    displayed, errors, warnings = (int(x) for x in m.groups()) if m else (len(blocks), len(blocks), 0)
    return len(blocks), known, displayed, errors, warnings


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    if len(sys.argv) > 2:  # the section from the last occurrence of the marker line on
        idx = [i for i, ln in enumerate(lines) if ln.startswith(sys.argv[2])]
        lines = lines[idx[-1]:] if idx else []
    n, known, displayed, errors, warnings = classify(lines)
    other = n - known
    if n == 0 and errors == 0:
        print("clean: no hazards")
        return 0
    ok = other == 0 and warnings == 0 and displayed == n and errors == n
    print(f"{'clean but for' if ok else 'HAZARDS:'} {known} tile-handoff record hazard report(s) "
          f"(mbarrier-ordered, which racecheck does not model: racecheck_probe.sh), {other} other; "
          f"racecheck: {displayed} displayed, {errors} errors, {warnings} warnings")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
