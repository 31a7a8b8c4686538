import os

# JAX (used by one GPU test) would otherwise reserve most of the GPU's memory on first use,
# starving the torch tests that run in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402

_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_script():
    """Loads a script of the repository (bench/, scripts/) as a module, by its path from the root:
    the CPU tests of the benchmark and GPU-report tools call their functions directly."""
    def load(relpath):
        path = _ROOT / relpath
        spec = importlib.util.spec_from_file_location("fa_" + path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return load

# A library built with FA_INSTANCE_FILTER (a development build that compiles only some kernel
# instances) says so in fa_build_info(). There a GPU case whose kernel was left out is skipped,
# with the library's message as the reason; in a full build the same error is a failure (AUTO
# must serve every fp16/bf16 case it claims), as tests/cuda/harness.cpp's classify() decides.
_MISSING_KERNEL = re.compile(r"no CUDA (forward|backward|KV-cache decode) kernel for [^\n]*")


def _instance_filtered() -> bool:
    try:
        import flashattn
    except ImportError:
        return False
    return "(instance-filtered build)" in flashattn.build_info()


_FILTERED = _instance_filtered()


def _missing_kernel(exc):
    """The library's "no CUDA ... kernel" message if exc is (or wraps, as torch.compile's errors
    do) a NotImplementedError about a kernel the build lacks; None otherwise."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        m = _MISSING_KERNEL.search(str(exc))
        if m and (isinstance(exc, NotImplementedError) or "NotImplementedError" in str(exc)):
            return m.group(0)
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not (_FILTERED and rep.failed and call.excinfo is not None):
        return
    msg = _missing_kernel(call.excinfo.value)
    if msg:
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0,
                        f"Skipped: instance-filtered build lacks the kernel: {msg}")
