# FA2 forward, sm80 class (mma.sync + cp.async + ldmatrix): src/cuda/sm80/flash_fwd.cuh.
# Built for sm_80 and sm_90a (the H200 runs it as its FA2 path); no workspace.
family("fwd", "sm80", "cuda/sm80/flash_fwd.cuh", "run_sm80_fwd", "FA_ALGO_FA2", "Forward", 80, 90,
       [32, 64, 96, 128, 192, 256])
