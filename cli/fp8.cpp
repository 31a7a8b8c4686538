#include "fp8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "args.hpp"
#include "core/fp8.hpp"
#include "core/mask.hpp"
#include "core/params.hpp"
#include "cpu/convert.hpp"
#include "cpu/fp8.hpp"
#include "cpu/reference.hpp"

namespace fa::cli {

namespace cf = core::fp8;

namespace {

// The naive's output rounded to the output dtype, as the backends round theirs.
double round_to_dtype(double x, fa_dtype dt) {
  const float f = float(x);
  return dt == FA_DTYPE_FLOAT16 ? cpu::f16_to_f32(cpu::f32_to_f16(f))
                                : cpu::bf16_to_f32(cpu::f32_to_bf16(f));
}

}  // namespace

fa_fp8 Fp8Spec::fp8() const {
  fa_fp8 f;
  fa_fp8_init(&f);
  f.scaling = scaling;
  f.incoherent = incoherent ? 1 : 0;
  if (seed_given) f.seed = seed;
  return f;
}

std::string Fp8Spec::text() const {
  std::string t = scaling == FA_FP8_SCALING_PER_HEAD ? "per-head scales" : "block scales";
  if (incoherent) t += ", incoherent";
  if (reuse_quantized) t += ", timed: kernel only (quantised once)";
  return t;
}

fa_fp8_scaling parse_fp8_scaling(const std::string& s) {
  if (s == "block") return FA_FP8_SCALING_BLOCK;
  if (s == "per-head" || s == "per_head") return FA_FP8_SCALING_PER_HEAD;
  throw UsageError("--scaling must be block or per-head, got '" + s + "'");
}

double Fp8Check::worst() const {
  return std::max({o.max_err / bound_o(), lse.max_err / bound_lse(), rms_o / bound_rms_o(),
                   rms_lse / bound_rms_lse()});
}

Fp8Workload::Fp8Workload(const Problem& p, const Fp8Spec& s) : p_(p), s_(s) {
  opt_ = p_.options();
  const int64_t B = p_.batch, Nq = p_.seqlen_q, Nk = p_.seqlen_k, Hq = p_.heads_q, Hk = p_.heads_kv,
                D = p_.head_dim;
  const fa_dtype dt = p_.dtype;
  const fa_fp8 f = s_.fp8();
  size_t ws_bytes = 0;
  {
    static char placeholder[1];
    fa_tensor q = describe(placeholder, dt, {B, Nq, Hq, D}, p_.gpu);
    fa_tensor k = describe(placeholder, dt, {B, Nk, Hk, D}, p_.gpu);
    throw_if_failed(fa_fp8_workspace_size(&q, &k, &k, &f, &opt_, &ws_bytes));
  }
  io_ = ForwardTensors(p_);
  ws_ = Buffer(std::max<size_t>(ws_bytes, 16), p_.gpu);
  // The caller's workspace: reuse_quantized needs it, and it is what check() reads back.
  opt_.workspace = ws_.data();
  opt_.workspace_bytes = ws_.bytes();
}

void Fp8Workload::forward(bool reuse) {
  fa_fp8 f = s_.fp8();
  f.reuse_quantized = reuse ? 1 : 0;
  throw_if_failed(fa_fp8_forward(&io_.tq, &io_.tk, &io_.tv, &f, &io_.tout, &io_.tlse, &opt_));
}

double Fp8Workload::time_ms(int warmup, int repeats, std::vector<double>* all) {
  forward(false);  // reuse_quantized needs a workspace an earlier call filled
  return median_ms(
      p_.gpu, warmup, repeats, [&] { forward(s_.reuse_quantized); }, all);
}

Fp8Check Fp8Workload::check(int64_t max_rows, int heads) {
  const int64_t B = p_.batch, Nq = p_.seqlen_q, Nk = p_.seqlen_k, Hq = p_.heads_q, Hk = p_.heads_kv,
                D = p_.head_dim;
  const fa_dtype dt = p_.dtype;
  const int64_t G = Hq / Hk;

  io_.out.fill_byte(0xff);  // NaN in every format: an unwritten result cannot pass
  io_.lse.fill_byte(0xff);
  ws_.fill_byte(0xff);
  forward(false);
  if (p_.gpu) gpu_synchronize();
  std::vector<uint8_t> out_h(io_.out.bytes()), lse_h(io_.lse.bytes()), ws(ws_.bytes());
  io_.out.download(out_h.data());
  io_.lse.download(lse_h.data());
  ws_.download(ws.data());

  // The library's view of the call (resolved scale, causal as window_right = 0) for the reference.
  const core::AttnParams full =
      host_params(p_, opt_, io_.q_h.data(), io_.k_h.data(), io_.v_h.data(), out_h.data());

  const cf::Layout l = cf::layout(B, Nq, Nk, Hq, Hk, D);
  auto scales = [&](int64_t off) { return reinterpret_cast<const float*>(ws.data() + off); };
  double lut[256];
  for (int c = 0; c < 256; ++c) lut[c] = cpu::fp8::e4m3_to_float(uint8_t(c));
  int inv_vt[cf::kVtChunk];
  for (int s = 0; s < cf::kVtChunk; ++s) inv_vt[cf::vt_key(s)] = s;
  const bool round_p = p_.gpu;
  const core::Mask mask(Nq, Nk, full.window_left, full.window_right);

  Fp8Check r;
  r.naive_kind = round_p ? "the sm90 kernel's arithmetic (P rounded to e4m3 before P.V)"
                         : "the CPU backend's arithmetic (attention on the dequantised inputs)";
  const int64_t m = (max_rows <= 0 || max_rows >= Nq) ? Nq : max_rows;
  const int64_t row0 = Nq - m;
  const auto picks = sample_kv_heads(B, Hk, heads);

  const int64_t e = elem_bytes(dt);
  double err_sq = 0, naive_sq = 0, ref_sq = 0, lse_sq = 0, naive_lse_sq = 0;
  int64_t n_o = 0, n_lse = 0;
  std::vector<double> s_row(static_cast<size_t>(std::max<int64_t>(Nk, 1))),
      acc(static_cast<size_t>(D));
  for (auto [b, kvh] : picks) {
    // Reference: float64 on the original inputs of the sub-problem, as Workload::check takes it.
    const core::AttnParams sub = sub_problem(full, io_, e, b, kvh, row0, m);
    std::vector<double> o_ref, lse_ref;
    ref::forward(sub, ref::load(sub), o_ref, lse_ref);

    const int64_t ks_base = (b * Hk + kvh) * l.k_blocks;
    const double vs = scales(l.v_scale)[b * Hk + kvh];
    const uint8_t* vt = ws.data() + l.vt8 + (b * Hk + kvh) * D * l.vt_keys;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = kvh * G + g, row = row0 + i;
        // Naive: the quantised bytes of this row in float64.
        const uint8_t* q8 = ws.data() + l.q8 + ((b * Nq + row) * Hq + h) * D;
        const double qs = scales(l.q_scale)[(b * Hq + h) * l.q_blocks + row / cf::kQBlock];
        double mx = -INFINITY;
        for (int64_t j = 0; j < Nk; ++j) {
          s_row[size_t(j)] = -INFINITY;
          if (!mask.allowed(row, j)) continue;
          const uint8_t* k8 = ws.data() + l.k8 + ((b * Nk + j) * Hk + kvh) * D;
          double dot = 0;
          for (int64_t c = 0; c < D; ++c) dot += lut[q8[c]] * lut[k8[c]];
          const double ks = scales(l.k_scale)[ks_base + j / cf::kKBlock];
          s_row[size_t(j)] = dot * qs * ks * double(full.scale);
          mx = std::max(mx, s_row[size_t(j)]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        double lsum = 0;
        if (mx != -INFINITY)
          for (int64_t j = 0; j < Nk; ++j) {
            if (s_row[size_t(j)] == -INFINITY) continue;
            const double pj = std::exp(s_row[size_t(j)] - mx);
            lsum += pj;
            const double pv = round_p ? lut[cpu::fp8::e4m3_from_float(float(pj))] : pj;
            const int64_t col = j / cf::kVtChunk * cf::kVtChunk + inv_vt[j % cf::kVtChunk];
            for (int64_t c = 0; c < D; ++c) acc[size_t(c)] += pv * lut[vt[c * l.vt_keys + col]];
          }
        const double naive_lse = mx == -INFINITY ? -INFINITY : mx + std::log(lsum);

        const int64_t ours_row = ((b * Nq + row) * Hq + h) * D;
        for (int64_t c = 0; c < D; ++c) {
          const double ref_v = o_ref[size_t((i * G + g) * D + c)];
          const double ours = load_elem(out_h, dt, ours_row + c);
          const double naive = mx == -INFINITY ? 0.0 : vs * acc[size_t(c)] / lsum;
          const double naive_r = round_to_dtype(naive, dt);
          r.o.add(ours, ref_v);
          r.naive_o.add(naive_r, ref_v);
          err_sq += (ours - ref_v) * (ours - ref_v);
          naive_sq += (naive_r - ref_v) * (naive_r - ref_v);
          ref_sq += ref_v * ref_v;
          ++n_o;
        }
        float ours_lse;
        std::memcpy(&ours_lse, &lse_h[size_t(((b * Hq + h) * Nq + row) * 4)], 4);
        const double ref_lse = lse_ref[size_t(g * m + i)];
        r.lse.add(ours_lse, ref_lse);
        r.naive_lse.add(naive_lse, ref_lse);
        if (std::isfinite(ref_lse) && std::isfinite(double(ours_lse)) && std::isfinite(naive_lse)) {
          lse_sq += (ours_lse - ref_lse) * (ours_lse - ref_lse);
          naive_lse_sq += (naive_lse - ref_lse) * (naive_lse - ref_lse);
          ++n_lse;
        }
      }
  }
  auto rms = [](double sq, int64_t n) { return n > 0 ? std::sqrt(sq / double(n)) : 0.0; };
  r.rms_o = rms(err_sq, n_o);
  r.naive_rms_o = rms(naive_sq, n_o);
  r.rms_lse = rms(lse_sq, n_lse);
  r.naive_rms_lse = rms(naive_lse_sq, n_lse);
  r.rel_rms = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : 0.0;
  r.sample = sample_text(m, Nq, int64_t(picks.size()), B * Hk);
  return r;
}

}  // namespace fa::cli
