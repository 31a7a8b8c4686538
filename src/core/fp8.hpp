// FP8 (e4m3) forward: the quantised form of Q, K, V that the quantisers write (CUDA:
// src/cuda/fp8/quantize.cu; CPU: src/cpu/fp8.cpp) and the FA3 fp8 kernel (src/cuda/sm90) reads.
//
// Block quantisation (FA3 §3.3): every block gets its own scale = amax(block) / 448, so an
// outlier only coarsens the block it sits in; dequantised value = e4m3 value × scale.
//   Q: one scale per (sequence, query head, kQBlock rows)  -> one scalar per consumer warpgroup tile;
//   K: one scale per (sequence, KV head, kKBlock keys)      -> one scalar per key block of the kernel;
//   V: one scale per (sequence, KV head)                   -> applied once to O in the epilogue
//      (a per-block V scale would have to be folded into P before its e4m3 rounding).
// Scales are always > 0 (an all-zero block gets 1), so the kernel never multiplies -inf by 0.
// Scaling::PerHead gives every block of a (sequence, head) the same scale (the per-tensor
// baseline FA3's Table 3 compares against); the kernel does not know the difference.
//
// Incoherent processing (FA3 §3.3): Q and K are multiplied by M = D·H/√d before quantising (D a
// diagonal of random signs, H the d×d Hadamard matrix, d a power of two): M is orthogonal, so
// (QM)(KM)ᵀ = QKᵀ exactly, while M spreads an outlier channel over all d, shrinking the amax that
// sets each block's scale. V is not transformed.
//
// Vᵀ: the P·V wgmma takes an 8-bit B operand only K-major (the key index contiguous), so V is
// stored transposed, [B, Hk, d, vt_keys] with vt_keys = Nk rounded up to kKBlock (zero-padded).
// Within each 32-key chunk the keys are permuted (vt_key below) so that the fp32 accumulator of
// S, converted in place to e4m3, already is the A-operand fragment of the k32 wgmma: a thread
// holds S columns {2t, 2t+1} + 8j (j = 0..3) of a chunk, and the A fragment wants k = 4t..4t+3
// and 16+4t..16+4t+3 (CuTe's ALayout_64x32); summing over k in another order changes nothing,
// so V's rows follow P's columns instead of a shuffle moving P's bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace fa::core::fp8 {

constexpr float kE4M3Max = 448.f;
constexpr int kQBlock = 64;    // query rows per Q scale
constexpr int kKBlock = 128;   // keys per K scale; the fp8 kernel's key block
constexpr int kVtChunk = 32;   // keys per k32 wgmma step (vt_key's period)

enum class Scaling : int { Block = 0, PerHead = 1 };

// Key stored at column s (0..31) of a 32-key chunk of Vᵀ. s = 16h + 4t + i (h: chunk half,
// t: thread in quad, i: byte in register) holds key 16h + 8(i/2) + 2t + (i%2). A bijection.
FA_HD constexpr int vt_key(int s) {
  return 16 * (s >> 4) + 8 * ((s & 3) >> 1) + 2 * ((s >> 2) & 3) + (s & 1);
}

// Random sign of channel i (±1) for incoherent processing; the same for Q and K and every head.
FA_HD constexpr float hadamard_sign(uint64_t seed, int i) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (x & 1) ? -1.f : 1.f;
}

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int64_t align16(int64_t n) { return (n + 15) & ~int64_t(15); }

// Where the quantised tensors sit in the workspace (byte offsets, each 16-byte aligned; the
// caller's workspace is 16-byte aligned, TMA needs 16-byte aligned bases and row strides).
//   q8 [B, Nq, Hq, d] e4m3, contiguous;  k8 [B, Nk, Hk, d] e4m3, contiguous;
//   vt8 [B, Hk, d, vt_keys] e4m3;
//   q_scale f32 [B, Hq, q_blocks];  k_scale f32 [B, Hk, k_blocks];  v_scale f32 [B, Hk].
struct Layout {
  int64_t q_blocks = 0, k_blocks = 0, vt_keys = 0;
  int64_t q8 = 0, k8 = 0, vt8 = 0, q_scale = 0, k_scale = 0, v_scale = 0, bytes = 0;
};

inline Layout layout(int64_t batch, int64_t nq, int64_t nk, int64_t hq, int64_t hk, int64_t d) {
  Layout l;
  l.q_blocks = ceil_div(nq, kQBlock);
  l.k_blocks = ceil_div(nk, kKBlock);
  l.vt_keys = l.k_blocks * kKBlock;
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    const int64_t o = at;
    at = align16(at + bytes);
    return o;
  };
  l.q8 = take(batch * nq * hq * d);
  l.k8 = take(batch * nk * hk * d);
  l.vt8 = take(batch * hk * d * l.vt_keys);
  l.q_scale = take(batch * hq * l.q_blocks * int64_t(sizeof(float)));
  l.k_scale = take(batch * hk * l.k_blocks * int64_t(sizeof(float)));
  l.v_scale = take(batch * hk * int64_t(sizeof(float)));
  l.bytes = at;
  return l;
}

}  // namespace fa::core::fp8
