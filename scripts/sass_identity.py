#!/usr/bin/env python3
"""Does a change alter generated code? Compiles the CUDA units matching --filter twice, from a
git revision (--base, default HEAD) and from the working tree, with the project's own compile
commands, and compares:
  - device code: the SASS instruction text of every kernel (cuobjdump -sass), exactly;
  - host code: objdump -d of the object, as a multiset of lines (functions may be emitted in
    another order; nvcc's temporary file names are masked).
Exit status 0 when every unit is identical in both. No GPU needed: this is how a refactor of a
kernel file is checked on the CPU machine (LOG.md, session 37).

    python3 scripts/sass_identity.py --filter 'sm90_fwd_|fwd_ablation_' [--base REV] [--jobs 2]
                                     [--nvcc-flags='-DFA_SM90_FWD_Q_AHEAD=14'] [--diff-dir DIR]

--nvcc-flags appends the same flags to both sides' compile commands, so that a refactor of code a
build switch compiles in (off by default) is checked with the switch on.

Needs .deps (scripts/setup.sh) and nvcc. cuobjdump and nvdisasm come from NVIDIA's PyPI wheels
(nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm; any 13.x disassembles sm_90a), unpacked once into
.deps/sass_tools. Each unit costs what it costs in the build (20-60 s on 2 cores).
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, ".deps", "sass_tools")
CMAKE_ARGS = [
    "-DFA_CUDA_ARCHS=90a",
    "-DFA_BUILD_TESTS=OFF",
    "-DFA_BUILD_CLI=OFF",
    "-DFA_BUILD_BENCH=OFF",
    "-DFA_NATIVE=OFF",
    "-DFA_COMPILE_REPORT=OFF",
    "-DFA_LINEINFO=OFF",
    "-DFA_BUILD_ABLATIONS=ON",
]


def tools():
    """cuobjdump with nvdisasm beside it (cuobjdump runs nvdisasm from its PATH)."""
    bin_dir = os.path.join(TOOLS, "bin")
    if not (
        os.path.exists(os.path.join(bin_dir, "cuobjdump"))
        and os.path.exists(os.path.join(bin_dir, "nvdisasm"))
    ):
        os.makedirs(bin_dir, exist_ok=True)
        wheels = tempfile.mkdtemp()
        for pkg in ("nvidia-cuda-cuobjdump>=13,<14", "nvidia-cuda-nvdisasm>=13,<14"):
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", pkg, "-d", wheels],
                check=True,
            )
        for whl in glob.glob(os.path.join(wheels, "*.whl")):
            with zipfile.ZipFile(whl) as z:
                for n in z.namelist():
                    if n.endswith("/bin/cuobjdump") or n.endswith("/bin/nvdisasm"):
                        dst = os.path.join(bin_dir, os.path.basename(n))
                        with z.open(n) as src, open(dst, "wb") as out:
                            shutil.copyfileobj(src, out)
                        os.chmod(dst, 0o755)
        shutil.rmtree(wheels)
    return bin_dir


def compile_commands(src_root, build_dir, pattern):
    subprocess.run(
        ["cmake", "-S", src_root, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"]
        + CMAKE_ARGS,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    entries = json.load(open(os.path.join(build_dir, "compile_commands.json")))
    rx = re.compile(pattern)
    return {
        os.path.relpath(e["file"], src_root): e
        for e in entries
        if e["file"].endswith(".cu") and rx.search(os.path.relpath(e["file"], src_root))
    }


def dump(entry, out_dir, bin_dir, extra_flags=""):
    """Compiles one unit to out_dir and returns (sass lines, sorted host lines) or an error text."""
    name = os.path.basename(entry["file"])
    obj = os.path.join(out_dir, name + ".o")
    cmd = re.sub(r"-o \S+", "-o " + obj, entry["command"]) + (" " + extra_flags if extra_flags else "")
    r = subprocess.run(cmd, shell=True, cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"compile failed:\n{r.stderr[-2000:]}"
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    sass = subprocess.run(
        [os.path.join(bin_dir, "cuobjdump"), "-sass", obj], env=env, capture_output=True, text=True
    ).stdout
    # Instruction lines: /*addr*/ with 4 hex digits or more (a kernel past 4096 instructions).
    sass = [
        ln.strip()
        for ln in sass.splitlines()
        if re.match(r"\s+/\*[0-9a-f]{4,}\*/|\s*Function :", ln)
    ]
    host = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True
    ).stdout
    host = sorted(
        re.sub(r"tmpxft_[0-9a-f_]+", "T", re.sub(r"^\s*[0-9a-f]+:\s*", "", ln))
        for ln in host.splitlines()
        if "file format" not in ln
    )
    os.remove(obj)
    if not sass:
        return "no SASS (cuobjdump failed?)"
    return sass, host


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--filter", required=True, help="regex on the unit's path relative to the repository"
    )
    ap.add_argument(
        "--base", default="HEAD", help="git revision to compare the working tree against"
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--nvcc-flags", default="", help="flags appended to both sides' compile commands")
    ap.add_argument(
        "--diff-dir",
        help="where to write <unit>.base.sass / <unit>.tree.sass of each unit whose SASS differs",
    )
    a = ap.parse_args()
    # Killed, it still removes its git worktree (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_dir = tools()
    work = tempfile.mkdtemp(prefix="sass_identity_")
    base_tree = os.path.join(work, "base")
    subprocess.run(
        ["git", "-C", ROOT, "worktree", "add", "-q", "--detach", base_tree, a.base], check=True
    )
    os.symlink(os.path.join(ROOT, ".deps"), os.path.join(base_tree, ".deps"))
    try:
        units = {}
        for label, tree in (("base", base_tree), ("tree", ROOT)):
            out = os.path.join(work, "obj-" + label)
            os.makedirs(out)
            units[label] = (
                compile_commands(tree, os.path.join(work, "build-" + label), a.filter),
                out,
            )
        names = sorted(set(units["base"][0]) | set(units["tree"][0]))
        jobs = {}
        # Verdicts print as the units finish, in name order. Not a `with`: on SIGTERM the pool
        # must drop its queued units rather than compile them all before the cleanup.
        pool = concurrent.futures.ThreadPoolExecutor(a.jobs)
        try:
            for n in names:
                for label in ("base", "tree"):
                    cmds, out = units[label]
                    if n in cmds:
                        jobs[(n, label)] = pool.submit(dump, cmds[n], out, bin_dir, a.nvcc_flags)
            bad = 0
            for n in names:
                res = {
                    label: jobs[(n, label)].result() if (n, label) in jobs else "absent"
                    for label in ("base", "tree")
                }
                if any(isinstance(v, str) for v in res.values()):
                    verdict = "; ".join(f"{k}: {v}" for k, v in res.items() if isinstance(v, str))
                else:
                    same_sass = res["base"][0] == res["tree"][0]
                    same_host = res["base"][1] == res["tree"][1]
                    verdict = (
                        "identical"
                        if same_sass and same_host
                        else ("SASS differs" if not same_sass else "")
                        + (" host differs" if not same_host else "")
                    )
                    count = {
                        k: sum(1 for s in v[0] if not s.startswith("Function"))
                        for k, v in res.items()
                    }
                    if same_sass:
                        verdict += f" ({count['tree']} SASS lines)"
                    else:
                        verdict += f" ({count['base']} -> {count['tree']} SASS lines)"
                        if a.diff_dir:
                            os.makedirs(a.diff_dir, exist_ok=True)
                            for k, v in res.items():
                                path = os.path.join(a.diff_dir, f"{os.path.basename(n)}.{k}.sass")
                                with open(path, "w") as out:
                                    out.write("\n".join(v[0]) + "\n")
                bad += not verdict.startswith("identical")
                print(f"{n}: {verdict}", flush=True)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        print(f"{len(names) - bad} of {len(names)} units identical to {a.base}")
        return 1 if bad else 0
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base_tree], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
