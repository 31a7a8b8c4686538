# Hopper FA3 FP8 (e4m3) forward (src/cuda/sm90/flash_fwd.cuh, FwdKernel with Element = e4m3):
# the kernel behind fa::cuda::fp8_attention (src/cuda/dispatch.cu), which the fa_fp8_forward path
# calls on the quantised copies (core/fp8.hpp). dtypes name the OUTPUT type (the launcher's Element
# argument); the inputs are F8E4M3. Head dims 64/128/256, unmasked and masked (causal / window);
# no softcap. Every tile is 128 × 128 with base wgmma shapes, so no tile macros are needed.
family("fwd_fp8", "sm90", "cuda/sm90/flash_fwd.cuh", "run_sm90_fwd_fp8", "FA_ALGO_FA3", "Forward", 90, 90,
       [64, 128, 256], variants=[(False, False), (True, False)], in_dtype="F8E4M3")
