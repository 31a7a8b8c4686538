# FA1 forward (Algorithm 1 of the first paper: K/V loop outside, O/m/l round trip through HBM),
# sm80-class tensor cores: src/cuda/sm80/fa1_fwd.cuh. For comparison with FA2, d64 and d128 only.
family("fa1_fwd", "sm80", "cuda/sm80/fa1_fwd.cuh", "run_sm80_fa1_fwd", "FA_ALGO_FA1", "Forward",
       80, 90, [64, 128], workspace="sm80_fa1_fwd_workspace")
