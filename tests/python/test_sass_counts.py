"""scripts/gpu/sass_counts.py, without a GPU: which kernels its SASS check flags, on a dump shaped
like `cuobjdump --dump-sass` output."""
import pytest


@pytest.fixture(scope="module")
def sc(repo_script):
    return repo_script("scripts/gpu/sass_counts.py")


class _Names:
    def demangled(self, n):
        return n

    def short(self, n, width):
        return n[:width]


def _func(name, ops, pad=0):
    """A kernel of ops, then pad FFMAs (a body), EXIT and alignment NOPs (not counted)."""
    lines = [f"\t\tFunction : {name}"]
    for i, op in enumerate(list(ops) + ["FFMA"] * pad + ["EXIT"] + ["NOP"] * 12):
        lines.append(f"        /*{16 * i:04x}*/                   {op} R0, R1 ;   /* 0x000000000000 */")
    return lines


def _dump(*funcs):
    lines = ["Fatbin elf code:", "================", "arch = sm_90a", "code version = [1,8]", ""]
    for f in funcs:
        lines += f + [""]
    return "\n".join(lines)


def _flags(sc, dump):
    funcs = sc.parse(dump)
    return {n: sc.classify(n, c) for (n, _), c in funcs.items()}


def test_attention_kernels_are_held_to_their_instructions(sc):
    dump = _dump(
        _func("sm90_fwd_kernel_bf16", ["UTMALDG", "HGMMA.64x128x16.F32.BF16", "SYNCS.ARRIVE"], pad=40),
        _func("sm90_fwd_kernel_e4m3", ["UTMALDG", "QGMMA.64x128x32.F32.E4M3.E4M3"], pad=40),
        _func("sm90_fwd_kernel_no_wgmma", ["UTMALDG", "FFMA"], pad=40),
        _func("sm90_fwd_kernel_no_loads", ["HGMMA.64x128x16.F32.BF16", "LDG.E.128"], pad=40),
        # The no-TMA ablation loads by cp.async: built that way on purpose.
        _func("sm90_fwd_kernel_cp_async", ["LDGSTS.E.BYPASS.128", "HGMMA.64x128x16.F32.BF16"], pad=40),
        _func("sm80_flash_fwd_kernel", ["LDGSTS.E.128", "LDSM.16.M88.4", "HMMA.16816.F32.BF16"], pad=40),
        _func("sm80_flash_fwd_kernel_no_mma", ["LDGSTS.E.128", "FFMA"], pad=40),
        _func("sm80_bwd_main_kernel_spills", ["LDSM.16.M88.4", "HMMA.16816.F32", "STL", "LDL"], pad=40),
    )
    got = _flags(sc, dump)
    assert got["sm90_fwd_kernel_bf16"] == (True, [], False)
    # fp8 wgmma is QGMMA in SASS: the check must count it as the wgmma it is.
    assert got["sm90_fwd_kernel_e4m3"] == (True, [], False)
    assert got["sm90_fwd_kernel_no_wgmma"][1] == ["sm90 without wgmma or async loads"]
    assert got["sm90_fwd_kernel_no_loads"][1] == ["sm90 without wgmma or async loads"]
    assert got["sm90_fwd_kernel_cp_async"] == (True, [], False)
    assert got["sm80_flash_fwd_kernel"] == (False, [], False)
    assert got["sm80_flash_fwd_kernel_no_mma"][1] == ["sm80-class without HMMA/LDSM"]
    assert got["sm80_bwd_main_kernel_spills"][1] == ["local memory"]


def test_helpers_and_compiled_out_kernels_are_not_flagged(sc):
    dump = _dump(
        _func("sm90_bwd_convert_dq_kernel", ["LDG.E.128", "F2FP.BF16", "STG.E.128"], pad=40),
        _func("sm80_bwd_prepass_kernel", ["LDG.E.128", "FFMA"], pad=40),
        _func("decode_combine_kernel", ["LDG.E", "MUFU.EX2"], pad=40),
        # A template compiled out for this arch (flash_bwd.cuh kThisArch): a trap, then NOPs.
        _func("sm80_bwd_main_kernel_small_smem_d256", ["LDC", "BPT.TRAP 0x1", "BRA"]),
        # A helper that spills is still flagged: local memory counts everywhere.
        _func("sm90_bwd_preprocess_spills", ["STL", "LDL"], pad=40),
    )
    got = _flags(sc, dump)
    assert got["sm90_bwd_convert_dq_kernel"][1] == []
    assert got["sm80_bwd_prepass_kernel"][1] == []
    assert got["decode_combine_kernel"][1] == []
    assert got["sm80_bwd_main_kernel_small_smem_d256"] == (False, [], True)
    assert got["sm90_bwd_preprocess_spills"][1] == ["local memory"]
    lines = sc.report(sc.parse(dump), _Names())
    assert lines[-1].endswith("1 kernel(s) flagged, 1 attention kernel(s) compiled empty")
    assert "compiled empty: 4 instructions" in "\n".join(lines)


def test_an_attention_kernel_with_a_body_but_no_mma_is_not_taken_for_empty(sc):
    dump = _dump(_func("sm80_flash_fwd_kernel_lost_mma", ["FFMA"] * 20))
    is90, problems, empty = _flags(sc, dump)["sm80_flash_fwd_kernel_lost_mma"]
    assert not empty and problems == ["sm80-class without HMMA/LDSM"]
