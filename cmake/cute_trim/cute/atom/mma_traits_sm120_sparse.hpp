// Empty stand-in for CuTe 4.2.0's <cute/atom/mma_traits_sm120_sparse.hpp>: see cmake/cute_trim/README.md.
#pragma once
