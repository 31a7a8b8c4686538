# Blackwell (sm100a) FA4-style forward (src/cuda/sm100/flash_fwd.cuh), COMPILE-ONLY: never run on
# hardware. Registered as FA3-generation entries for sm 100 only; the dispatcher skips them unless
# FA_SM100_UNVERIFIED=1 (src/cuda/sm100/gate.hpp). Head dim 128, unmasked and masked (causal /
# window), no softcap.
family("fwd", "sm100", "cuda/sm100/flash_fwd.cuh", "run_sm100_fwd", "FA_ALGO_FA3", "Forward", 100, 100,
       [128], variants=[(False, False), (True, False)])
