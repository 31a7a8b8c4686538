# FA2 forward, sm80 class (mma.sync + cp.async + ldmatrix): src/cuda/sm80/flash_fwd.cuh.
# Built for sm_80 and sm_90a (the H200 runs it as its FA2 path); no workspace.
# Three variants: no mask; masked without softcap (causal/local calls, the common masked case);
# masked with softcap. Without the middle one, causal calls ran the softcap instance, whose
# tanh ptxas if-converts into the loop: 411 predicated-off instructions per key block at d128
# (28% of the step's issue slots) even when softcap = 0. A build whose FA_INSTANCE_FILTER drops
# `_mask$` instances measures that old behaviour (the dispatcher falls back to `_mask_softcap`).
family("fwd", "sm80", "cuda/sm80/flash_fwd.cuh", "run_sm80_fwd", "FA_ALGO_FA2", "Forward", 80, 90,
       [32, 64, 96, 128, 192, 256], variants=[(False, False), (True, False), (True, True)])
