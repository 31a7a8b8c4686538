import os

# JAX (used by one GPU test) would otherwise reserve most of the GPU's memory on first use,
# starving the torch tests that run in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
