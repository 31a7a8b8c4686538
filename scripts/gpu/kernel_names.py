"""Readable kernel names for the GPU reports: demangle (cu++filt or c++filt) and shorten."""
import shutil
import subprocess


class KernelNames:
    def __init__(self, mangled):
        names = sorted(set(mangled))
        self.full = {}
        filt = shutil.which("cu++filt") or shutil.which("c++filt")
        if filt and names:
            try:
                out = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True,
                                     timeout=60).stdout
                self.full = dict(zip(names, out.splitlines()))
            except Exception:
                pass  # reports fall back to mangled names

    def demangled(self, n):
        return self.full.get(n, n)

    def short(self, n, width):
        s = self.demangled(n)
        s = s.replace("cutlass::bfloat16_t", "bf16").replace("cutlass::half_t", "fp16").replace("fa::cuda::", "")
        return s if len(s) <= width else s[: width - 3] + "..."
