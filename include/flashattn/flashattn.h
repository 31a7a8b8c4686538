/*
 * flashattn — exact, IO-aware attention (FlashAttention 1/2/3 on CUDA, a tiled CPU backend).
 * C ABI. Stable, plain C; every function returns an fa_status and, on failure, leaves a
 * thread-local message readable with fa_last_error(). Outputs are never written when a call
 * fails validation.
 *
 * Layouts follow flash_attn:
 *   batch form:  q [B, Nq, Hq, D], k/v [B, Nk, Hk, D], out [B, Nq, Hq, D], lse [B, Hq, Nq] (fp32)
 *   varlen form: q [Tq, Hq, D], k/v [Tk, Hk, D] with cu_seqlens_q/k (int32, B+1 entries),
 *                out [Tq, Hq, D], lse [Hq, Tq] (fp32)
 * Strides are in elements; the last dimension (head_dim) must be contiguous. Hq must be a multiple
 * of Hk (GQA/MQA). Causal masks and windows are bottom-right aligned: query row i sees key j iff
 *   j <= i + (Nk - Nq) + window_right  and  j >= i + (Nk - Nq) - window_left
 * (causal is window_right = 0). A row that sees no key gives out = 0 and lse = -inf.
 */
#ifndef FLASHATTN_FLASHATTN_H
#define FLASHATTN_FLASHATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FA_API __declspec(dllexport)
#else
#define FA_API __attribute__((visibility("default")))
#endif

#define FA_VERSION_MAJOR 0
#define FA_VERSION_MINOR 1
#define FA_VERSION_PATCH 0
#define FA_MAX_RANK 4

typedef enum fa_status {
  FA_OK = 0,
  FA_ERROR_INVALID_ARGUMENT = 1, /* bad shape, stride, dtype, pointer, option */
  FA_ERROR_UNSUPPORTED = 2,      /* valid request this build/backend cannot serve */
  FA_ERROR_CUDA = 3,             /* a CUDA runtime/driver call failed */
  FA_ERROR_OUT_OF_MEMORY = 4,    /* workspace could not be allocated */
  FA_ERROR_INTERNAL = 5
} fa_status;

typedef enum fa_dtype {
  FA_DTYPE_FLOAT32 = 0,
  FA_DTYPE_FLOAT16 = 1,
  FA_DTYPE_BFLOAT16 = 2,
  FA_DTYPE_FLOAT8_E4M3 = 3,
  FA_DTYPE_INT32 = 4
} fa_dtype;

typedef enum fa_device {
  FA_DEVICE_CPU = 0,
  FA_DEVICE_CUDA = 1
} fa_device;

typedef struct fa_tensor {
  void* data;
  fa_dtype dtype;
  fa_device device;
  int device_id; /* CUDA ordinal; ignored for CPU */
  int rank;
  int64_t shape[FA_MAX_RANK];
  int64_t strides[FA_MAX_RANK]; /* in elements */
} fa_tensor;

/* Which implementation runs. AUTO: the tensors' device picks the backend, the dispatch table
 * picks the fastest kernel for the GPU found. */
typedef enum fa_backend {
  FA_BACKEND_AUTO = 0,
  FA_BACKEND_CPU = 1,
  FA_BACKEND_CUDA = 2
} fa_backend;

/* Which generation of the algorithm a CUDA call uses (for comparison and ablation). */
typedef enum fa_algo {
  FA_ALGO_AUTO = 0,
  FA_ALGO_FA1 = 1, /* FlashAttention-1: K/V loop outside, O/m/l round-trip to HBM */
  FA_ALGO_FA2 = 2, /* FlashAttention-2: sm80 mma.sync, one CTA per query block */
  FA_ALGO_FA3 = 3  /* FlashAttention-3: sm90a TMA + WGMMA, warp specialised */
} fa_algo;

typedef struct fa_options {
  float softmax_scale;  /* 0 -> 1/sqrt(head_dim) */
  int causal;           /* bottom-right aligned */
  int window_left;      /* -1 = unbounded */
  int window_right;     /* -1 = unbounded */
  float softcap;        /* 0 = off; else scores = softcap * tanh(scores / softcap) */
  int deterministic;    /* backward: fixed-order dQ accumulation, bit-identical run to run */
  fa_backend backend;
  fa_algo algo;
  int num_threads;      /* CPU backend; 0 = all hardware threads */
  void* stream;         /* cudaStream_t; NULL = default stream */
  void* workspace;      /* device (or host for CPU) scratch, 16-byte aligned; NULL = library allocates */
  size_t workspace_bytes;
} fa_options;

/* Variable-length batch description. Every pointer is device memory for CUDA calls. */
typedef struct fa_varlen {
  const fa_tensor* cu_seqlens_q; /* int32 [B+1], non-decreasing, starts at 0 */
  const fa_tensor* cu_seqlens_k; /* int32 [B+1] */
  const fa_tensor* seqused_k;    /* optional int32 [B]: keys actually used per sequence */
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
} fa_varlen;

FA_API void fa_options_init(fa_options* opt);
FA_API const char* fa_last_error(void);
FA_API const char* fa_status_string(fa_status s);
FA_API const char* fa_version(void);

/* lse may be NULL when the caller does not want it (the forward still computes it internally
 * only where needed). */
FA_API fa_status fa_forward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                            fa_tensor* out, fa_tensor* lse, const fa_options* opt);

/* out and lse are the forward's outputs (lse required). dk/dv have k/v's shape: for GQA the
 * gradient of each KV head is summed over its query-head group. */
FA_API fa_status fa_backward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                             const fa_tensor* out, const fa_tensor* lse, const fa_tensor* dout,
                             fa_tensor* dq, fa_tensor* dk, fa_tensor* dv, const fa_options* opt);

FA_API fa_status fa_varlen_forward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                   const fa_varlen* vl, fa_tensor* out, fa_tensor* lse,
                                   const fa_options* opt);

FA_API fa_status fa_varlen_backward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                    const fa_varlen* vl, const fa_tensor* out,
                                    const fa_tensor* lse, const fa_tensor* dout, fa_tensor* dq,
                                    fa_tensor* dk, fa_tensor* dv, const fa_options* opt);

/* Workspace the call would need with these arguments (0 when none). Pass vl = NULL for the
 * batch form. A caller that passes opt->workspace of at least this size (16-byte aligned, as any
 * cudaMalloc is) makes the call free of allocations (CUDA-graph safe). */
FA_API fa_status fa_forward_workspace_size(const fa_tensor* q, const fa_tensor* k,
                                           const fa_tensor* v, const fa_varlen* vl,
                                           const fa_options* opt, size_t* bytes);
FA_API fa_status fa_backward_workspace_size(const fa_tensor* q, const fa_tensor* k,
                                            const fa_tensor* v, const fa_varlen* vl,
                                            const fa_options* opt, size_t* bytes);

/* KV-cache attention for decoding (flash_attn_with_kvcache's semantics, batch form only).
 * q [B, Nq, Hq, D]; out [B, Nq, Hq, D]; lse [B, Hq, Nq] (fp32, may be NULL).
 * The cache, in one of two forms:
 *   contiguous: k_cache/v_cache [Bc, Nc, Hk, D]; sequence b uses cache entry cache_batch_idx[b]
 *               (b when cache_batch_idx is NULL, then Bc >= B); capacity C = Nc keys.
 *   paged:      k_cache/v_cache [num_pages, page_size, Hk, D] and block_table int32 [B, P]; key j
 *               of sequence b is row j % page_size of page block_table[b, j / page_size];
 *               capacity C = P * page_size.
 * k_new/v_new [B, Nnew, Hk, D] (optional, both or neither; cache_seqlens required with them) are
 * first written into the cache, in place, at rows cache_seqlens[b] .. cache_seqlens[b] + Nnew - 1.
 * Sequence b then attends over cache rows 0 .. L_b - 1, L_b = cache_seqlens[b] + Nnew (C when
 * cache_seqlens is NULL), with the usual bottom-right causal/window alignment (query i sees key
 * j <= i + L_b - Nq + window_right). Index values (cache_seqlens, block_table, cache_batch_idx)
 * live in device memory for CUDA calls, so they cannot be checked there without a
 * synchronisation: CUDA kernels clamp L_b to C and skip new rows past C (never reading or writing
 * out of bounds), the CPU backend rejects such values. num_splits: split-KV, the key range of each
 * (sequence, KV head) divided over up to that many CTAs whose partial results are merged by their
 * log-sum-exp (0 = chosen from the shape and the GPU, 1 = off). */
typedef struct fa_kvcache {
  fa_tensor* k_cache;               /* written only where k_new rows land */
  fa_tensor* v_cache;
  const fa_tensor* cache_seqlens;   /* int32 [B] or NULL */
  const fa_tensor* block_table;     /* int32 [B, P] or NULL (contiguous cache) */
  const fa_tensor* cache_batch_idx; /* int32 [B] or NULL; contiguous cache only */
  const fa_tensor* k_new;           /* [B, Nnew, Hk, D] or NULL */
  const fa_tensor* v_new;
  int num_splits;
} fa_kvcache;

FA_API fa_status fa_kvcache_forward(const fa_tensor* q, const fa_kvcache* kv, fa_tensor* out,
                                    fa_tensor* lse, const fa_options* opt);
/* Workspace fa_kvcache_forward needs (split-KV partial results); out/lse are not read. */
FA_API fa_status fa_kvcache_workspace_size(const fa_tensor* q, const fa_kvcache* kv,
                                           const fa_options* opt, size_t* bytes);

/* FP8 (e4m3) forward: FlashAttention-3's 8-bit path (sm90a GPUs; the CPU backend quantises the
 * same way and computes in float32, for testing). q, k, v are float16/bfloat16 in the batch
 * form's layout ([B, N, H, D], any strides with a unit last stride); the call quantises them into
 * the workspace, then runs attention on the e4m3 copies. out: q's dtype, [B, Nq, Hq, D];
 * lse: as fa_forward (may be NULL). Head dims 64, 128, 256; causal / sliding window, GQA/MQA;
 * softcap, varlen and backward are not available (FA_ERROR_UNSUPPORTED).
 * Quantisation: one scale per block (scaling BLOCK: 64 query rows, 128 keys; V per head) or per
 * head (PER_HEAD: the per-tensor baseline); incoherent = 1 multiplies Q and K by random signs and
 * a Hadamard transform first (QKᵀ unchanged), which spreads outlier channels before scaling.
 * reuse_quantized = 1 skips the quantiser: the workspace must hold what an earlier call with the
 * same shapes, data and fa_fp8 options wrote there (the kernel alone, e.g. to time it);
 * reuse_quantized = 2 quantises q only (new queries against K/V quantised by an earlier call). */
typedef enum fa_fp8_scaling {
  FA_FP8_SCALING_BLOCK = 0,
  FA_FP8_SCALING_PER_HEAD = 1
} fa_fp8_scaling;

typedef struct fa_fp8 {
  fa_fp8_scaling scaling;
  int incoherent;      /* 1: random signs + Hadamard on Q and K's head dim before quantising */
  uint64_t seed;       /* of the random signs */
  int reuse_quantized; /* 0: quantise q, k, v; 1: quantise nothing; 2: quantise q only */
} fa_fp8;

/* BLOCK scaling, incoherent processing on, a fixed seed, reuse_quantized 0. */
FA_API void fa_fp8_init(fa_fp8* f);
/* opt->workspace: at least fa_fp8_workspace_size bytes (NULL: the library allocates, and then
 * reuse_quantized must be 0). */
FA_API fa_status fa_fp8_forward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                const fa_fp8* f, fa_tensor* out, fa_tensor* lse,
                                const fa_options* opt);
FA_API fa_status fa_fp8_workspace_size(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                       const fa_fp8* f, const fa_options* opt, size_t* bytes);

/* Build and device information. */
FA_API int fa_cuda_built(void);           /* 1 when the library holds CUDA kernels */
FA_API int fa_cuda_device_count(void);    /* 0 without a usable GPU */
FA_API const char* fa_build_info(void);   /* compiler, flags, archs, kernel list (multi-line) */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FLASHATTN_FLASHATTN_H */
