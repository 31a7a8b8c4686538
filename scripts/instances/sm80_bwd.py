# FA2 backward, sm80 class (mma.sync, cp.async, ldmatrix); runs on sm_80 and on sm_90 (own SASS).
family("bwd", "sm80", "cuda/sm80/flash_bwd.cuh", "run_sm80_bwd", "FA_ALGO_FA2", "Backward",
       80, 90, [32, 64, 96, 128, 192, 256], workspace="sm80_bwd_workspace", variants=MASKED)
