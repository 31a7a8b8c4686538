// flashattn._C: the nanobind extension that binds the C ABI (include/flashattn/flashattn.h).
//
// Tensors arrive as DLPack capsules (nb::ndarray accepts torch, NumPy, CuPy, JAX, ...), so the
// extension has no compile-time dependency on any framework: one wheel serves every PyTorch
// version. This file only translates: DLPack descriptor -> fa_tensor, Python arguments ->
// fa_options, fa_status -> a Python exception carrying fa_last_error(). Allocation of outputs
// and workspace is the caller's job (the Python layer), so CUDA-graph capture and framework
// allocators work unchanged; the library is told the stream and the workspace explicitly.
//
// Two ways in: the DLPack functions (forward, backward, ...) serve any array library; the torch_*
// functions serve the torch layer's hot path and read each torch tensor's dtype, device,
// data_ptr, shape and strides here: through torch's stable C shim where it checks out (AtenShim),
// else through the tensor's Python attributes. Exporting a torch tensor through DLPack allocates a
// capsule and a managed tensor per argument, several microseconds per call at small shapes; the
// reads cost a fraction of that, and doing them here rather than in Python saves the
// interpreter's share. For the same reason one torch_* call does all of an eager call's
// host work: it decides whether the call may bypass autograd and the custom ops, makes the
// flash_attn contiguity copies, allocates the outputs and any workspace by calling torch's own
// allocation functions (torch's allocator, so CUDA-graph capture works), and runs. No torch
// header or library is linked: torch_setup hands over the few torch objects needed, and the shim's
// C functions are looked up at run time, so one wheel still serves every torch.
#include <flashattn/flashattn.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace {

// Inputs are read-only views; nb::ro also admits read-only NumPy arrays (e.g. broadcasts).
using InArray = nb::ndarray<nb::ro>;
using OutArray = nb::ndarray<>;

const char* dlpack_dtype_name(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  switch (C(t.code)) {
    case C::Int: return t.bits == 8 ? "int8" : t.bits == 16 ? "int16" : t.bits == 32 ? "int32" : "int64";
    case C::UInt: return t.bits == 8 ? "uint8" : "unsigned integer";
    case C::Float: return t.bits == 16 ? "float16" : t.bits == 32 ? "float32" : t.bits == 64 ? "float64" : "float";
    case C::Bfloat: return "bfloat16";
    case C::Complex: return "complex";
    case C::Bool: return "bool";
    default: return "a float8/float6/float4 variant";
  }
}

[[noreturn]] void raise(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  throw nb::python_error();
}

// One place maps library status to Python exception types (STYLE.md: same text everywhere).
// Dtype complaints are TypeErrors because that is what Python users expect for a wrong dtype;
// every other bad argument is a ValueError.
[[noreturn]] void raise_status(fa_status st) {
  std::string msg = fa_last_error();
  if (msg.empty()) msg = fa_status_string(st);
  switch (st) {
    case FA_ERROR_INVALID_ARGUMENT:
      // The fp8 forward's refusal of a float32 q ("takes float16 or bfloat16 inputs") is a dtype
      // complaint too, though its text does not say "dtype".
      raise(msg.find("dtype") != std::string::npos || msg.find("takes float16 or bfloat16") != std::string::npos
                ? PyExc_TypeError
                : PyExc_ValueError,
            msg);
    case FA_ERROR_UNSUPPORTED: raise(PyExc_NotImplementedError, msg);
    case FA_ERROR_OUT_OF_MEMORY: raise(PyExc_MemoryError, msg);
    default: raise(PyExc_RuntimeError, msg);
  }
}

inline void check(fa_status st) {
  if (st != FA_OK) raise_status(st);
}

// DLPack descriptor -> fa_tensor. Checks here are only those the C ABI cannot express (dtype and
// device kinds it has no enum for, rank above FA_MAX_RANK); everything else is left to the
// library's validation so that messages are the same from C, C++ and Python.
template <typename Array>
fa_tensor to_fa(const Array& a, const char* name) {
  fa_tensor t{};
  t.data = const_cast<void*>(static_cast<const void*>(a.data()));
  const nb::dlpack::dtype dt = a.dtype();
  using C = nb::dlpack::dtype_code;
  if (dt.lanes != 1) raise(PyExc_TypeError, std::string(name) + ": vector dtypes are not supported");
  if (dt.code == uint8_t(C::Float) && dt.bits == 32) t.dtype = FA_DTYPE_FLOAT32;
  else if (dt.code == uint8_t(C::Float) && dt.bits == 16) t.dtype = FA_DTYPE_FLOAT16;
  else if (dt.code == uint8_t(C::Bfloat) && dt.bits == 16) t.dtype = FA_DTYPE_BFLOAT16;
  else if (dt.code == uint8_t(C::Float8_E4M3FN) && dt.bits == 8) t.dtype = FA_DTYPE_FLOAT8_E4M3;
  else if (dt.code == uint8_t(C::Int) && dt.bits == 32) t.dtype = FA_DTYPE_INT32;
  else
    raise(PyExc_TypeError, std::string(name) + ": unsupported dtype " + dlpack_dtype_name(dt) +
                               " (flashattn takes float16, bfloat16, float32, float8_e4m3fn; "
                               "int32 for cu_seqlens)");

  switch (a.device_type()) {
    case nb::device::cpu::value: t.device = FA_DEVICE_CPU; t.device_id = 0; break;
    case nb::device::cuda::value: t.device = FA_DEVICE_CUDA; t.device_id = a.device_id(); break;
    default:
      raise(PyExc_ValueError, std::string(name) + ": unsupported device type " +
                                  std::to_string(a.device_type()) + " (flashattn takes CPU or CUDA memory)");
  }
  const size_t rank = a.ndim();
  if (rank > FA_MAX_RANK)
    raise(PyExc_ValueError, std::string(name) + ": expected rank <= " + std::to_string(FA_MAX_RANK) +
                                ", got " + std::to_string(rank));
  t.rank = int(rank);
  for (size_t i = 0; i < rank; ++i) {
    t.shape[i] = int64_t(a.shape(i));
    t.strides[i] = int64_t(a.stride(i));  // nanobind reports strides in elements, as fa_tensor wants
  }
  return t;
}

// Options shared by every entry point, in the order the Python layer passes them.
fa_options make_options(float scale, bool causal, int window_left, int window_right, float softcap,
                        bool deterministic, int backend, int algo, int num_threads,
                        uintptr_t stream, const std::optional<OutArray>& workspace) {
  fa_options o;
  fa_options_init(&o);
  o.softmax_scale = scale;
  o.causal = causal ? 1 : 0;
  o.window_left = window_left;
  o.window_right = window_right;
  o.softcap = softcap;
  o.deterministic = deterministic ? 1 : 0;
  o.backend = fa_backend(backend);
  o.algo = fa_algo(algo);
  o.num_threads = num_threads;
  o.stream = reinterpret_cast<void*>(stream);
  if (workspace && workspace->size() > 0) {
    o.workspace = workspace->data();
    o.workspace_bytes = workspace->nbytes();
  }
  return o;
}

// Varlen descriptor; owns the fa_tensors the fa_varlen points at.
struct Varlen {
  fa_tensor cu_q{}, cu_k{}, used_k{};
  fa_varlen vl{};
  Varlen(const InArray& cu_seqlens_q, const InArray& cu_seqlens_k,
         const std::optional<InArray>& seqused_k, int64_t max_q, int64_t max_k) {
    cu_q = to_fa(cu_seqlens_q, "cu_seqlens_q");
    cu_k = to_fa(cu_seqlens_k, "cu_seqlens_k");
    vl.cu_seqlens_q = &cu_q;
    vl.cu_seqlens_k = &cu_k;
    if (seqused_k) {
      used_k = to_fa(*seqused_k, "seqused_k");
      vl.seqused_k = &used_k;
    }
    vl.max_seqlen_q = max_q;
    vl.max_seqlen_k = max_k;
  }
  Varlen(const Varlen&) = delete;
};

#define FA_OPTION_PARAMS                                                                      \
  float scale, bool causal, int window_left, int window_right, float softcap,                 \
      bool deterministic, int backend, int algo, int num_threads, uintptr_t stream,           \
      const std::optional<OutArray>&workspace
#define FA_OPTION_ARGS                                                                        \
  scale, causal, window_left, window_right, softcap, deterministic, backend, algo, num_threads, \
      stream, workspace

void forward(const InArray& q, const InArray& k, const InArray& v, const OutArray& out,
             const std::optional<OutArray>& lse, FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v");
  fa_tensor to = to_fa(out, "out"), tl{};
  if (lse) tl = to_fa(*lse, "lse");
  const fa_options o = make_options(FA_OPTION_ARGS);
  fa_status st;
  {
    // The CPU backend computes for as long as the call takes; let other Python threads run.
    nb::gil_scoped_release nogil;
    st = fa_forward(&tq, &tk, &tv, &to, lse ? &tl : nullptr, &o);
  }
  check(st);
}

void backward(const InArray& q, const InArray& k, const InArray& v, const InArray& out,
              const InArray& lse, const InArray& dout, const OutArray& dq, const OutArray& dk, const OutArray& dv,
              FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v"),
                  to = to_fa(out, "out"), tl = to_fa(lse, "lse"), tdo = to_fa(dout, "dout");
  fa_tensor tdq = to_fa(dq, "dq"), tdk = to_fa(dk, "dk"), tdv = to_fa(dv, "dv");
  const fa_options o = make_options(FA_OPTION_ARGS);
  fa_status st;
  {
    nb::gil_scoped_release nogil;
    st = fa_backward(&tq, &tk, &tv, &to, &tl, &tdo, &tdq, &tdk, &tdv, &o);
  }
  check(st);
}

void varlen_forward(const InArray& q, const InArray& k, const InArray& v,
                    const InArray& cu_seqlens_q, const InArray& cu_seqlens_k,
                    const std::optional<InArray>& seqused_k, int64_t max_seqlen_q,
                    int64_t max_seqlen_k, const OutArray& out, const std::optional<OutArray>& lse,
                    FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v");
  const Varlen vl(cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  fa_tensor to = to_fa(out, "out"), tl{};
  if (lse) tl = to_fa(*lse, "lse");
  const fa_options o = make_options(FA_OPTION_ARGS);
  fa_status st;
  {
    nb::gil_scoped_release nogil;
    st = fa_varlen_forward(&tq, &tk, &tv, &vl.vl, &to, lse ? &tl : nullptr, &o);
  }
  check(st);
}

void varlen_backward(const InArray& q, const InArray& k, const InArray& v,
                     const InArray& cu_seqlens_q, const InArray& cu_seqlens_k,
                     const std::optional<InArray>& seqused_k, int64_t max_seqlen_q,
                     int64_t max_seqlen_k, const InArray& out, const InArray& lse,
                     const InArray& dout, const OutArray& dq, const OutArray& dk, const OutArray& dv,
                     FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v"),
                  to = to_fa(out, "out"), tl = to_fa(lse, "lse"), tdo = to_fa(dout, "dout");
  const Varlen vl(cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  fa_tensor tdq = to_fa(dq, "dq"), tdk = to_fa(dk, "dk"), tdv = to_fa(dv, "dv");
  const fa_options o = make_options(FA_OPTION_ARGS);
  fa_status st;
  {
    nb::gil_scoped_release nogil;
    st = fa_varlen_backward(&tq, &tk, &tv, &vl.vl, &to, &tl, &tdo, &tdq, &tdk, &tdv, &o);
  }
  check(st);
}

// Workspace queries: the batch form passes cu_seqlens_q = None.
size_t workspace_size(bool is_backward, const InArray& q, const InArray& k, const InArray& v,
                      const std::optional<InArray>& cu_seqlens_q,
                      const std::optional<InArray>& cu_seqlens_k,
                      const std::optional<InArray>& seqused_k, int64_t max_seqlen_q,
                      int64_t max_seqlen_k, FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v");
  std::optional<Varlen> vl;
  if (cu_seqlens_q || cu_seqlens_k) {
    if (!cu_seqlens_q || !cu_seqlens_k)
      raise(PyExc_ValueError, "cu_seqlens_q and cu_seqlens_k must be given together");
    vl.emplace(*cu_seqlens_q, *cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  }
  const fa_options o = make_options(FA_OPTION_ARGS);
  size_t bytes = 0;
  const fa_varlen* pvl = vl ? &vl->vl : nullptr;
  check(is_backward ? fa_backward_workspace_size(&tq, &tk, &tv, pvl, &o, &bytes)
                    : fa_forward_workspace_size(&tq, &tk, &tv, pvl, &o, &bytes));
  return bytes;
}

// ---- KV cache (fa_kvcache_forward) ------------------------------------------------------------

// The cache description of one call; owns the descriptors its fa_kvcache points at. The caches
// are written in place (where k_new rows land), so they are never copied on the way in.
struct KvDesc {
  fa_tensor k_cache{}, v_cache{}, seqlens{}, table{}, idx{}, k_new{}, v_new{};
  fa_kvcache kv{};
  KvDesc() = default;
  KvDesc(const KvDesc&) = delete;
  void link(bool has_seqlens, bool has_table, bool has_idx, bool has_k_new, bool has_v_new, int num_splits) {
    kv.k_cache = &k_cache;
    kv.v_cache = &v_cache;
    kv.cache_seqlens = has_seqlens ? &seqlens : nullptr;
    kv.block_table = has_table ? &table : nullptr;
    kv.cache_batch_idx = has_idx ? &idx : nullptr;
    kv.k_new = has_k_new ? &k_new : nullptr;
    kv.v_new = has_v_new ? &v_new : nullptr;
    kv.num_splits = num_splits;
  }
};

using OptIn = std::optional<InArray>;

void kvcache_desc(KvDesc* d, const OutArray& k_cache, const OutArray& v_cache, const OptIn& cache_seqlens,
                  const OptIn& block_table, const OptIn& cache_batch_idx, const OptIn& k_new, const OptIn& v_new,
                  int num_splits) {
  d->k_cache = to_fa(k_cache, "k_cache");
  d->v_cache = to_fa(v_cache, "v_cache");
  if (cache_seqlens) d->seqlens = to_fa(*cache_seqlens, "cache_seqlens");
  if (block_table) d->table = to_fa(*block_table, "block_table");
  if (cache_batch_idx) d->idx = to_fa(*cache_batch_idx, "cache_batch_idx");
  if (k_new) d->k_new = to_fa(*k_new, "k_new");
  if (v_new) d->v_new = to_fa(*v_new, "v_new");
  d->link(bool(cache_seqlens), bool(block_table), bool(cache_batch_idx), bool(k_new), bool(v_new), num_splits);
}

void kvcache_forward(const InArray& q, const OutArray& k_cache, const OutArray& v_cache, const OptIn& cache_seqlens,
                     const OptIn& block_table, const OptIn& cache_batch_idx, const OptIn& k_new, const OptIn& v_new,
                     int num_splits, const OutArray& out, const std::optional<OutArray>& lse, FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q");
  KvDesc d;
  kvcache_desc(&d, k_cache, v_cache, cache_seqlens, block_table, cache_batch_idx, k_new, v_new, num_splits);
  fa_tensor to = to_fa(out, "out"), tl{};
  if (lse) tl = to_fa(*lse, "lse");
  const fa_options o = make_options(FA_OPTION_ARGS);
  fa_status st;
  {
    nb::gil_scoped_release nogil;
    st = fa_kvcache_forward(&tq, &d.kv, &to, lse ? &tl : nullptr, &o);
  }
  check(st);
}

size_t kvcache_workspace_size(const InArray& q, const OutArray& k_cache, const OutArray& v_cache,
                              const OptIn& cache_seqlens, const OptIn& block_table, const OptIn& cache_batch_idx,
                              const OptIn& k_new, const OptIn& v_new, int num_splits, FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q");
  KvDesc d;
  kvcache_desc(&d, k_cache, v_cache, cache_seqlens, block_table, cache_batch_idx, k_new, v_new, num_splits);
  const fa_options o = make_options(FA_OPTION_ARGS);
  size_t bytes = 0;
  check(fa_kvcache_workspace_size(&tq, &d.kv, &o, &bytes));
  return bytes;
}

// ---- FP8 forward (fa_fp8_forward) -------------------------------------------------------------

// The seed is a uint64 in the C ABI; torch's custom-op schema has only int64, so the torch layer
// passes seeds >= 2^63 as their two's-complement int64. Reading the low 64 bits accepts both.
uint64_t seed_bits(nb::handle seed) {
  const unsigned long long v = PyLong_AsUnsignedLongLongMask(seed.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
  return uint64_t(v);
}

// scaling: fa_fp8_scaling's value (the Python layer maps "block"/"per_head"); the library
// validates it, so a bad code gets the C ABI's message.
fa_fp8 make_fp8(int scaling, bool incoherent, nb::handle seed) {
  fa_fp8 f;
  fa_fp8_init(&f);
  f.scaling = fa_fp8_scaling(scaling);
  f.incoherent = incoherent ? 1 : 0;
  f.seed = seed_bits(seed);
  return f;
}

// workspace (the options' last argument): at least fp8_workspace_size bytes, allocated by the
// caller in the inputs' kind (the quantised copies of q, k, v live there).
void fp8_forward(const InArray& q, const InArray& k, const InArray& v, const OutArray& out,
                 const std::optional<OutArray>& lse, int scaling, bool incoherent, nb::handle seed,
                 FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v");
  fa_tensor to = to_fa(out, "out"), tl{};
  if (lse) tl = to_fa(*lse, "lse");
  const fa_fp8 f = make_fp8(scaling, incoherent, seed);
  const fa_options o = make_options(FA_OPTION_ARGS);
  fa_status st;
  {
    nb::gil_scoped_release nogil;
    st = fa_fp8_forward(&tq, &tk, &tv, &f, &to, lse ? &tl : nullptr, &o);
  }
  check(st);
}

size_t fp8_workspace_size(const InArray& q, const InArray& k, const InArray& v, int scaling, bool incoherent,
                          nb::handle seed, FA_OPTION_PARAMS) {
  const fa_tensor tq = to_fa(q, "q"), tk = to_fa(k, "k"), tv = to_fa(v, "v");
  const fa_fp8 f = make_fp8(scaling, incoherent, seed);
  const fa_options o = make_options(FA_OPTION_ARGS);
  size_t bytes = 0;
  check(fa_fp8_workspace_size(&tq, &tk, &tv, &f, &o, &bytes));
  return bytes;
}

// ---- torch fast path ------------------------------------------------------------------------

int64_t as_i64(PyObject* o) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return int64_t(v);
}

// What the torch glue needs from torch, handed over once by flashattn._torch at import
// (torch_setup) so the extension never links or includes torch: the dtype -> fa_dtype map, a
// few torch functions and objects. Attribute names are interned once.
struct TorchGlue {
  PyObject* dtype_codes = nullptr;
  PyObject* raw_stream = nullptr;
  PyObject* num_threads = nullptr;
  PyObject* tensor_type = nullptr;     // torch.Tensor: the eager path takes exactly this type
  PyObject* empty_like = nullptr;      // torch.empty_like
  PyObject* empty = nullptr;           // torch.empty
  PyObject* device_ctor = nullptr;     // torch.device
  PyObject* contiguous_format = nullptr;
  PyObject* uint8 = nullptr;
  PyObject* float32 = nullptr;
  PyObject* grad_enabled = nullptr;    // torch.is_grad_enabled
  PyObject* blockers = nullptr;        // tuple of no-argument builtins; any truthy answer: not plain eager
  PyObject* forward_ad = nullptr;      // torch.autograd.forward_ad: _current_level >= 0 is a blocker too
  PyObject* kw_memory_format = nullptr;
  PyObject *s_dtype = nullptr, *s_is_cuda, *s_is_cpu, *s_get_device, *s_data_ptr, *s_shape, *s_stride, *s_device,
           *s_requires_grad, *s_contiguous, *s_new_empty, *s_current_level, *s_untyped_storage, *s_set_;
  // Empty (0-element) tensors by (device, dtype), built on first use; slots are fa_dtype values
  // (float32 for lse, the inputs' dtype for packed outputs) and kUint8Slot (workspace).
  // Allocating with template.new_empty(shape) takes dtype and device from the template: the same
  // allocation as torch.empty(shape, dtype=, device=) without the keyword parsing, which costs
  // ~0.25 us per call on the CPU (bench/python_overhead.py rows "alloc lse ...").
  static constexpr int kMaxDevices = 64;
  static constexpr int kUint8Slot = 5, kTemplateSlots = 6;
  PyObject* dtype_by_slot[kTemplateSlots] = {};
  PyObject* cpu_templates[kTemplateSlots] = {};
  PyObject* cuda_templates[kMaxDevices][kTemplateSlots] = {};
  // Outputs of one eager call whose total is at most this many bytes share one torch allocation
  // (try_pack); 0 turns packing off. Set from FLASHATTN_PACK_BYTES by flashattn._torch.
  size_t pack_bytes = 0;
  // Test hook (torch_debug_workspace): every call gets at least this much torch-allocated
  // workspace, so the CPU tests exercise the allocation path the CUDA backward always takes.
  size_t min_workspace = 0;
  size_t last_workspace = 0;
};

TorchGlue& glue() {
  static TorchGlue g;  // references held for the process's life, like the module itself
  return g;
}

PyObject* keep(nb::handle h) { return h.inc_ref().ptr(); }

void torch_setup(nb::dict dtype_codes, nb::callable raw_stream, nb::callable num_threads, nb::handle tensor_type,
                 nb::callable empty_like, nb::callable empty, nb::callable device_ctor, nb::handle contiguous_format,
                 nb::handle uint8, nb::handle float32, nb::callable grad_enabled, nb::tuple blockers,
                 nb::handle forward_ad) {
  TorchGlue& g = glue();
  g.dtype_codes = keep(dtype_codes);
  g.raw_stream = keep(raw_stream);
  g.num_threads = keep(num_threads);
  g.tensor_type = keep(tensor_type);
  g.empty_like = keep(empty_like);
  g.empty = keep(empty);
  g.device_ctor = keep(device_ctor);
  g.contiguous_format = keep(contiguous_format);
  g.uint8 = keep(uint8);
  g.float32 = keep(float32);
  g.grad_enabled = keep(grad_enabled);
  g.blockers = keep(blockers);
  g.forward_ad = keep(forward_ad);
  g.kw_memory_format = keep(nb::make_tuple("memory_format"));
  g.s_dtype = PyUnicode_InternFromString("dtype");
  g.s_is_cuda = PyUnicode_InternFromString("is_cuda");
  g.s_is_cpu = PyUnicode_InternFromString("is_cpu");
  g.s_get_device = PyUnicode_InternFromString("get_device");
  g.s_data_ptr = PyUnicode_InternFromString("data_ptr");
  g.s_shape = PyUnicode_InternFromString("shape");
  g.s_stride = PyUnicode_InternFromString("stride");
  g.s_device = PyUnicode_InternFromString("device");
  g.s_requires_grad = PyUnicode_InternFromString("requires_grad");
  g.s_contiguous = PyUnicode_InternFromString("contiguous");
  g.s_new_empty = PyUnicode_InternFromString("new_empty");
  g.s_untyped_storage = PyUnicode_InternFromString("untyped_storage");
  g.s_set_ = PyUnicode_InternFromString("set_");
  // The torch dtype of each fa_dtype (the inverse of dtype_codes), for templates of that dtype.
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(g.dtype_codes, &pos, &key, &value)) {
    const int64_t code = as_i64(value);
    if (code >= 0 && code < TorchGlue::kUint8Slot) g.dtype_by_slot[code] = key;  // borrowed: dtype_codes is kept
  }
  g.dtype_by_slot[TorchGlue::kUint8Slot] = g.uint8;
  g.s_current_level = PyUnicode_InternFromString("_current_level");
}

const TorchGlue& ready_glue() {
  const TorchGlue& g = glue();
  if (!g.s_dtype) raise(PyExc_RuntimeError, "flashattn._C: torch_setup was not called");
  return g;
}

nb::object checked(PyObject* r) {
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::object get_attr(PyObject* o, PyObject* name) { return checked(PyObject_GetAttr(o, name)); }

nb::object call_method(PyObject* o, PyObject* name) { return checked(PyObject_CallMethodNoArgs(o, name)); }

bool truthy(nb::handle h) {
  const int r = PyObject_IsTrue(h.ptr());
  if (r < 0) throw nb::python_error();
  return r != 0;
}

// float(x), None -> 0 ("1/sqrt(head_dim)" for the scale): the same conversions the custom-op
// path makes in Python (scale_arg, float()), so both paths hand the library the same options.
float as_float(nb::handle h) {
  if (h.is_none()) return 0.0f;
  const double d = PyFloat_AsDouble(h.ptr());
  if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return float(d);
}

std::string str_of(PyObject* o) {
  nb::str s = nb::str(nb::handle(o));
  std::string r = s.c_str();
  if (r.rfind("torch.", 0) == 0) r = r.substr(6);
  return r;
}

// A torch tensor -> fa_tensor, read through its Python attributes (no DLPack capsule). Errors for
// what the C ABI has no code for (dtype, device kind) are raised here, naming the argument; the
// rest is left to the library's validation, as in to_fa.
fa_tensor torch_tensor_attr(nb::handle h, const char* name) {
  const TorchGlue& g = ready_glue();
  PyObject* t = h.ptr();
  fa_tensor r{};
  {
    nb::object dt = get_attr(t, g.s_dtype);
    PyObject* code = PyDict_GetItemWithError(g.dtype_codes, dt.ptr());  // borrowed
    if (!code) {
      if (PyErr_Occurred()) throw nb::python_error();
      raise(PyExc_TypeError, std::string(name) + ": unsupported dtype " + str_of(dt.ptr()) +
                                 " (flashattn takes float16, bfloat16, float32, float8_e4m3fn; int32 for cu_seqlens)");
    }
    r.dtype = fa_dtype(as_i64(code));
  }
  if (get_attr(t, g.s_is_cuda).ptr() == Py_True) {
    r.device = FA_DEVICE_CUDA;
    r.device_id = int(as_i64(call_method(t, g.s_get_device).ptr()));
  } else if (get_attr(t, g.s_is_cpu).ptr() == Py_True) {
    r.device = FA_DEVICE_CPU;
  } else {
    raise(PyExc_ValueError, std::string(name) + ": unsupported device " + str_of(get_attr(t, g.s_device).ptr()) +
                                " (flashattn takes CPU or CUDA tensors)");
  }
  {
    nb::object p = call_method(t, g.s_data_ptr);
    r.data = reinterpret_cast<void*>(uintptr_t(PyLong_AsUnsignedLongLong(p.ptr())));
    if (PyErr_Occurred()) throw nb::python_error();
  }
  nb::object shape = get_attr(t, g.s_shape), strides = call_method(t, g.s_stride);
  if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()) ||
      PyTuple_GET_SIZE(shape.ptr()) != PyTuple_GET_SIZE(strides.ptr()))
    raise(PyExc_TypeError, std::string(name) + ": shape/stride() are not tuples of one length");
  const Py_ssize_t rank = PyTuple_GET_SIZE(shape.ptr());
  if (rank < 1 || rank > FA_MAX_RANK)
    raise(PyExc_ValueError, std::string(name) + ": expected rank in [1, " + std::to_string(FA_MAX_RANK) +
                                "], got " + std::to_string(rank));
  r.rank = int(rank);
  for (Py_ssize_t i = 0; i < rank; ++i) {
    r.shape[i] = as_i64(PyTuple_GET_ITEM(shape.ptr(), i));
    r.strides[i] = as_i64(PyTuple_GET_ITEM(strides.ptr(), i));
  }
  return r;
}

// ---- tensor reads through torch's stable C shim (optional, verified at import) ----
// Reading a tensor through its Python attributes is six Python calls (dtype, is_cuda,
// get_device(), data_ptr(), shape, stride()), and three tensors' worth is the largest share of a
// small eager call's host time after the launch and the allocation. torch exports a C ABI meant
// to stay stable across versions (the aoti_torch_* functions of torch/csrc/inductor/aoti_torch/
// c/shim.h, what AOTInductor's compiled models and stable-ABI extensions call); given a handle,
// each read is a plain C call. The handle is an at::Tensor*, and at::Tensor is one pointer to its
// TensorImpl, which `tensor._cdata` gives: one attribute read per tensor instead of six. The
// functions are looked up at run time in the already-loaded libtorch (no header, no link: one
// wheel still serves every torch), and the whole path is used only if it passes
// torch_setup_shim's checks on probe tensors in this process; otherwise, or with
// FLASHATTN_TENSOR_READ=attr, the attribute path below serves every tensor. Only exact
// torch.Tensor objects take it (subclasses may have no storage or override anything).
struct AtenShim {
  using Handle = void*;
  using Err = int32_t;
  Err (*get_data_ptr)(Handle, void**) = nullptr;
  Err (*get_sizes)(Handle, int64_t**) = nullptr;
  Err (*get_strides)(Handle, int64_t**) = nullptr;
  Err (*get_dim)(Handle, int64_t*) = nullptr;
  Err (*get_dtype)(Handle, int32_t*) = nullptr;
  Err (*get_device_type)(Handle, int32_t*) = nullptr;
  Err (*get_device_index)(Handle, int32_t*) = nullptr;
  Err (*delete_tensor)(Handle) = nullptr;
  // torch's current stream on a CUDA device (libtorch_cuda), in place of the pybind11 call
  // torch._C._cuda_getCurrentRawStream; checked against that call on the first CUDA call
  // (cuda_stream_checked), since checking at import would initialise CUDA.
  Err (*cuda_stream)(int32_t, void**) = nullptr;
  bool cuda_stream_checked = false;
  // Allocation without a Python call: torch.empty_like / new_empty go through torch's argument
  // parser and release and retake the GIL around the op, about as much host time as the rest of a
  // small call's glue. aoti_torch_empty_strided is at::empty_strided (the dispatcher, so the
  // caching allocator on the current stream, inference mode and deterministic fills behave as for
  // torch.empty_like); THPVariable_Wrap(const at::TensorBase&) from libtorch_python makes the
  // Python tensor, as torch's own bindings do (the handle is an at::Tensor*, and at::Tensor is an
  // at::TensorBase with nothing added, so it passes as that reference). The wrapper is not part of
  // the stable shim, so it is looked up by its mangled name (which encodes the parameter type: a
  // changed signature is simply not found) and the pair is used only after torch_setup_shim's
  // allocation probe, and on CUDA after the first allocation read back (cuda_alloc_checked).
  Err (*empty_strided)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, Handle*) = nullptr;
  PyObject* (*wrap)(const void*) = nullptr;
  bool alloc_ready = false;  // the probes passed (and no CUDA read-back disagreed)
  bool alloc_on = false;     // in use: alloc_ready, unless turned off by torch_shim_alloc (A/B)
  bool cuda_alloc_checked = false;
  std::string alloc_why_off = "not set up";
  // fa_dtype (and TorchGlue::kUint8Slot) -> torch's dtype code; -1: none.
  int32_t torch_dtype_of[TorchGlue::kTemplateSlots] = {-1, -1, -1, -1, -1, -1};
  // torch's dtype code -> fa_dtype (-1: not one flashattn takes), for codes below kCodes.
  static constexpr int kCodes = 64;
  int fa_dtype_of[kCodes];
  int32_t device_cpu = -1, device_cuda = -1;
  PyObject* s_cdata = nullptr;
  bool on = false;
  std::string why_off = "not set up (torch_setup_shim was not called)";
};

AtenShim& shim() {
  static AtenShim s;
  return s;
}

// The TensorImpl* of an exact torch.Tensor (nullptr after a Python error).
void* tensor_impl(PyObject* t) {
  nb::object cd = get_attr(t, shim().s_cdata);
  void* p = PyLong_AsVoidPtr(cd.ptr());
  if (!p && PyErr_Occurred()) throw nb::python_error();
  return p;
}

// shim_read without the on/type checks: torch_setup_shim's probes use it before the shim is on.
bool shim_read_any(PyObject* t, fa_tensor& r) {
  const AtenShim& s = shim();
  void* impl = tensor_impl(t);
  if (!impl) return false;
  void* tensor = impl;  // an at::Tensor: one pointer to its TensorImpl (checked at set-up)
  AtenShim::Handle h = &tensor;
  int32_t dt = -1, devtype = -1, devindex = -1;
  int64_t dim = 0;
  int64_t *sizes = nullptr, *strides = nullptr;
  void* data = nullptr;
  if (s.get_dtype(h, &dt) || dt < 0 || dt >= AtenShim::kCodes || s.fa_dtype_of[dt] < 0) return false;
  if (s.get_device_type(h, &devtype) || (devtype != s.device_cuda && devtype != s.device_cpu)) return false;
  if (devtype == s.device_cuda && s.get_device_index(h, &devindex)) return false;
  if (s.get_dim(h, &dim) || dim < 1 || dim > FA_MAX_RANK) return false;
  if (s.get_sizes(h, &sizes) || s.get_strides(h, &strides) || s.get_data_ptr(h, &data)) return false;
  r = fa_tensor{};
  r.dtype = fa_dtype(s.fa_dtype_of[dt]);
  if (devtype == s.device_cuda) {
    r.device = FA_DEVICE_CUDA;
    r.device_id = int(devindex);
  } else {
    r.device = FA_DEVICE_CPU;
  }
  r.data = data;
  r.rank = int(dim);
  for (int i = 0; i < r.rank; ++i) {
    r.shape[i] = sizes[i];
    r.strides[i] = strides[i];
  }
  return true;
}

// Reads t through the shim. False (r untouched in meaning) when the shim is off, t is not an
// exact torch.Tensor, or t is something the attribute path must report (dtype, device kind, rank):
// that path then reads it again and raises the usual error.
bool shim_read(PyObject* t, fa_tensor& r) {
  return shim().on && Py_TYPE(t) == reinterpret_cast<PyTypeObject*>(glue().tensor_type) && shim_read_any(t, r);
}

fa_tensor torch_tensor_attr(nb::handle h, const char* name);

// Whether two descriptors give the same dtype, place, shape and strides (data pointers aside):
// how each shim path is checked against what the attributes say.
bool same_layout(const fa_tensor& a, const fa_tensor& b) {
  bool same = a.dtype == b.dtype && a.device == b.device && a.device_id == b.device_id && a.rank == b.rank;
  for (int d = 0; same && d < a.rank; ++d) same = a.shape[d] == b.shape[d] && a.strides[d] == b.strides[d];
  return same;
}

// The descriptor of an allocation asked of shim_empty_any, as the attribute path reads it back.
fa_tensor asked_for(fa_device device, int device_id, int rank, const int64_t* sizes, const int64_t* strides,
                    int slot) {
  fa_tensor t{};
  t.dtype = fa_dtype(slot);
  t.device = device;
  t.device_id = device_id;
  t.rank = rank;
  std::copy(sizes, sizes + rank, t.shape);
  std::copy(strides, strides + rank, t.strides);
  return t;
}

// A new uninitialised torch tensor through the shim, or an empty object where that fails (the
// caller then allocates through Python, which raises torch's own error, e.g. out of memory).
// slot: an fa_dtype or TorchGlue::kUint8Slot.
nb::object shim_empty_any(int32_t device_type, int32_t device_index, int rank, const int64_t* sizes,
                          const int64_t* strides, int slot) {
  const AtenShim& s = shim();
  const int32_t dt = s.torch_dtype_of[slot];
  AtenShim::Handle h = nullptr;
  if (dt < 0 || s.empty_strided(rank, sizes, strides, dt, device_type, device_index, &h) || !h) return {};
  PyObject* o = s.wrap(h);
  s.delete_tensor(h);  // the Python tensor holds its own reference
  if (!o) {
    PyErr_Clear();
    return {};
  }
  return nb::steal(o);
}

void standard_strides(int rank, const int64_t* sizes, int64_t* strides) {
  int64_t st = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = st;
    st *= std::max<int64_t>(sizes[i], 1);
  }
}

// Finds the allocation pair and checks it on a probe: a strided bf16 CPU tensor must come back as
// an exact torch.Tensor whose attributes say what was asked. Returns "" or why not.
template <class Find, class FindPython>
std::string shim_setup_alloc(Find&& find, FindPython&& find_python) {
  AtenShim& s = shim();
  s.empty_strided = reinterpret_cast<decltype(s.empty_strided)>(find("aoti_torch_empty_strided"));
  s.wrap = reinterpret_cast<decltype(s.wrap)>(find_python("_Z16THPVariable_WrapRKN2at10TensorBaseE"));
  if (!s.empty_strided) return "libtorch has no aoti_torch_empty_strided";
  if (!s.wrap) return "libtorch_python has no THPVariable_Wrap(const at::TensorBase&)";
  const int64_t sizes[3] = {2, 3, 4}, strides[3] = {1, 2, 6};
  nb::object t = shim_empty_any(s.device_cpu, -1, 3, sizes, strides, FA_DTYPE_BFLOAT16);
  if (!t.is_valid()) return "the probe allocation failed";
  if (Py_TYPE(t.ptr()) != reinterpret_cast<PyTypeObject*>(glue().tensor_type)) return "the probe is not a torch.Tensor";
  const fa_tensor r = torch_tensor_attr(t, "probe");
  if (!r.data || !same_layout(r, asked_for(FA_DEVICE_CPU, 0, 3, sizes, strides, FA_DTYPE_BFLOAT16)) ||
      get_attr(t.ptr(), glue().s_requires_grad).ptr() != Py_False)
    return "the probe allocation reads back differently";
  return "";
}

// Looks up the shim in the loaded libtorch (lib_dir: torch's lib folder, for when its symbols are
// not global) and turns it on if it reads every probe exactly as the attribute path does.
// to_handles: torch._C._aoti.unsafe_alloc_void_ptrs_from_tensors, which gives torch's own
// at::Tensor* for each tensor: its first word must be that tensor's _cdata, or the one-pointer
// handle built from _cdata would be wrong. Returns "shim" or why not.
std::string torch_setup_shim(nb::list probes, nb::handle to_handles, const std::string& lib_dir, bool alloc) {
  AtenShim& s = shim();
  if (s.on) return "shim";
  s.why_off.clear();
  // RTLD_NOLOAD: only a library torch has already loaded, never a second copy; kept open, as
  // torch keeps it loaded anyway.
  void* libs[3] = {};
  auto find_in = [&](int which, const char* n) -> void* {
    if (void* p = dlsym(RTLD_DEFAULT, n)) return p;
    static const char* const files[] = {"/libtorch_cpu.so", "/libtorch_cuda.so", "/libtorch_python.so"};
    const char* file = files[which];
    if (!libs[which] && !lib_dir.empty()) libs[which] = dlopen((lib_dir + file).c_str(), RTLD_NOLOAD | RTLD_LAZY);
    return libs[which] ? dlsym(libs[which], n) : nullptr;
  };
  auto find = [&](const char* n) { return find_in(0, n); };
  auto sym = [&](const char* n) -> void* {
    void* p = find(n);
    if (!p && s.why_off.empty()) s.why_off = std::string("libtorch has no ") + n;
    return p;
  };
  using Code = int32_t (*)();
  s.get_data_ptr = reinterpret_cast<decltype(s.get_data_ptr)>(sym("aoti_torch_get_data_ptr"));
  s.get_sizes = reinterpret_cast<decltype(s.get_sizes)>(sym("aoti_torch_get_sizes"));
  s.get_strides = reinterpret_cast<decltype(s.get_strides)>(sym("aoti_torch_get_strides"));
  s.get_dim = reinterpret_cast<decltype(s.get_dim)>(sym("aoti_torch_get_dim"));
  s.get_dtype = reinterpret_cast<decltype(s.get_dtype)>(sym("aoti_torch_get_dtype"));
  s.get_device_type = reinterpret_cast<decltype(s.get_device_type)>(sym("aoti_torch_get_device_type"));
  s.get_device_index = reinterpret_cast<decltype(s.get_device_index)>(sym("aoti_torch_get_device_index"));
  s.delete_tensor = reinterpret_cast<decltype(s.delete_tensor)>(sym("aoti_torch_delete_tensor_object"));
  // Absent from a CPU-only torch: the stream then comes from the Python call.
  s.cuda_stream = reinterpret_cast<decltype(s.cuda_stream)>(
      find_in(1, "aoti_torch_get_current_cuda_stream"));
  const std::pair<const char*, int> dtypes[] = {{"aoti_torch_dtype_float32", FA_DTYPE_FLOAT32},
                                                {"aoti_torch_dtype_float16", FA_DTYPE_FLOAT16},
                                                {"aoti_torch_dtype_bfloat16", FA_DTYPE_BFLOAT16},
                                                {"aoti_torch_dtype_float8_e4m3fn", FA_DTYPE_FLOAT8_E4M3},
                                                {"aoti_torch_dtype_int32", FA_DTYPE_INT32}};
  std::fill(std::begin(s.fa_dtype_of), std::end(s.fa_dtype_of), -1);
  for (const auto& [n, code] : dtypes)
    if (auto f = reinterpret_cast<Code>(find(n))) {  // a dtype this torch lacks stays unmapped
      const int32_t c = f();
      if (c >= 0 && c < AtenShim::kCodes) s.fa_dtype_of[c] = code;
      s.torch_dtype_of[code] = c;
    }
  if (auto f = reinterpret_cast<Code>(find("aoti_torch_dtype_uint8"))) s.torch_dtype_of[TorchGlue::kUint8Slot] = f();
  auto cpu = reinterpret_cast<Code>(sym("aoti_torch_device_type_cpu"));
  auto cuda = reinterpret_cast<Code>(sym("aoti_torch_device_type_cuda"));
  if (!s.why_off.empty()) return s.why_off;
  s.device_cpu = cpu();
  s.device_cuda = cuda();
  s.s_cdata = PyUnicode_InternFromString("_cdata");
  if (to_handles.is_none()) return s.why_off = "torch has no _C._aoti.unsafe_alloc_void_ptrs_from_tensors";

  nb::object handles = checked(PyObject_CallOneArg(to_handles.ptr(), probes.ptr()));
  const Py_ssize_t n = PyList_Size(probes.ptr());
  if (!PyList_Check(handles.ptr()) || PyList_Size(handles.ptr()) != n) return s.why_off = "unexpected handle list";
  // Every handle is freed, whatever the checks find or throw.
  struct Owned {
    std::vector<void*> p;
    AtenShim::Err (*del)(AtenShim::Handle);
    ~Owned() {
      for (void* h : p)
        if (h) del(h);
    }
  } owned_handles{{}, s.delete_tensor};
  std::vector<void*>& owned = owned_handles.p;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* cap = PyList_GET_ITEM(handles.ptr(), i);
    void* p = PyCapsule_CheckExact(cap) ? PyCapsule_GetPointer(cap, PyCapsule_GetName(cap)) : nullptr;
    if (!p) {
      PyErr_Clear();
      s.why_off = "a handle is not a capsule";
    }
    owned.push_back(p);
  }
  for (Py_ssize_t i = 0; i < n && s.why_off.empty(); ++i) {
    PyObject* t = PyList_GET_ITEM(probes.ptr(), i);
    if (*static_cast<void**>(owned[size_t(i)]) != tensor_impl(t)) {
      s.why_off = "tensor._cdata is not the first word of torch's at::Tensor";
      break;
    }
    fa_tensor a{}, b{};
    const bool read = shim_read_any(t, a);
    b = torch_tensor_attr(t, "probe");
    if (!read || a.data != b.data || !same_layout(a, b))
      s.why_off = "the shim read a probe differently from its attributes";
  }
  if (!s.why_off.empty()) return s.why_off;
  s.on = true;
  // The read shim stays on whatever the allocation probe finds: a probe that raises only keeps the
  // Python allocation.
  try {
    s.alloc_why_off = alloc ? shim_setup_alloc(find, [&](const char* n) { return find_in(2, n); })
                            : "FLASHATTN_TENSOR_ALLOC=python";
  } catch (const nb::python_error& e) {
    s.alloc_why_off = std::string("the probe allocation raised ") + e.what();
  }
  s.alloc_ready = s.alloc_on = s.alloc_why_off.empty();
  return "shim";
}

// "shim" or why outputs are allocated through Python calls (bench/python_overhead.py prints it).
std::string torch_tensor_alloc() {
  const AtenShim& s = shim();
  if (!s.on) return "python: the shim is off";
  if (!s.alloc_ready) return "python: " + s.alloc_why_off;
  if (!s.alloc_on) return "python: turned off by torch_shim_alloc(False)";
  return std::string("shim; CUDA ") + (s.cuda_alloc_checked ? "checked" : "not yet checked");
}

// The A/B switch of bench/python_overhead.py --ab-alloc: allocation through the shim off, or back
// on where it is ready. Returns the previous state.
bool torch_shim_alloc(bool on) {
  AtenShim& s = shim();
  const bool previous = s.alloc_on;
  s.alloc_on = on && s.alloc_ready;
  return previous;
}

// "shim" or why the attribute path reads tensors (bench/python_overhead.py prints it).
std::string torch_tensor_read() {
  const AtenShim& s = shim();
  if (!s.on) return "attr: " + s.why_off;
  return std::string("shim; stream ") +
         (!s.cuda_stream ? "from Python" : s.cuda_stream_checked ? "from the shim" : "not yet checked");
}

// A torch tensor -> fa_tensor: through the shim where it is on, else through the attributes.
fa_tensor torch_tensor(nb::handle h, const char* name) {
  fa_tensor r;
  if (shim_read(h.ptr(), r)) return r;
  return torch_tensor_attr(h, name);
}

// torch's is_contiguous(), from the descriptor: size-1 dimensions' strides do not count, an
// empty tensor is contiguous.
bool contiguous(const fa_tensor& t) {
  int64_t want = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    if (t.shape[i] == 0) return true;
    if (t.shape[i] != 1 && t.strides[i] != want) return false;
    want *= t.shape[i];
  }
  return true;
}

// An input tensor as the library will read it, and the object that owns that memory (a copy
// made here must live until the call has been enqueued). flash_attn's convention: only a
// non-contiguous last dimension forces a copy; other strides (q/k/v sliced out of a packed qkv,
// transformers' transposed heads) pass as they are. full = true copies anything non-contiguous
// (dout: autograd may hand an expanded view, stride 0 everywhere).
struct Input {
  nb::object owner;
  fa_tensor t;
  Input(nb::handle h, const char* name, bool full = false) : t(torch_tensor(h, name)) {
    const bool copy = full ? !contiguous(t) : (t.shape[t.rank - 1] != 1 && t.strides[t.rank - 1] != 1 && !contiguous(t));
    if (copy) {
      owner = call_method(h.ptr(), glue().s_contiguous);
      t = torch_tensor(owner, name);
    } else {
      owner = nb::borrow(h);
    }
  }
};

// Where a torch call runs: torch's current stream on q's CUDA device; on the CPU, torch's
// intra-op thread count, so torch.set_num_threads governs the CPU backend too.
void torch_exec(const fa_tensor& q, fa_options* o) {
  const TorchGlue& g = glue();
  if (q.device == FA_DEVICE_CUDA) {
    AtenShim& sh = shim();
    void* fast = nullptr;
    const bool use_shim = sh.on && sh.cuda_stream && !sh.cuda_stream(q.device_id, &fast);
    if (use_shim && sh.cuda_stream_checked) {
      o->stream = fast;
      return;
    }
    nb::object dev = nb::int_(q.device_id);
    nb::object s = checked(PyObject_CallOneArg(g.raw_stream, dev.ptr()));
    o->stream = reinterpret_cast<void*>(uintptr_t(PyLong_AsUnsignedLongLong(s.ptr())));
    if (PyErr_Occurred()) throw nb::python_error();
    if (use_shim) {  // the first CUDA call: keep the shim's stream query only if it agrees
      sh.cuda_stream_checked = fast == o->stream;
      if (!sh.cuda_stream_checked) sh.cuda_stream = nullptr;
    }
  } else {
    nb::object n = checked(PyObject_CallNoArgs(g.num_threads));
    o->num_threads = int(as_i64(n.ptr()));
  }
}

// ---- allocation through torch (outputs and workspace come from torch's allocator: CUDA-graph
// capture and torch's memory accounting see them) ----

// The 0-element tensor of this dtype where `like` lives (see TorchGlue's templates). Built with
// torch.empty(0, dtype=, device=): no memory is allocated, so building it inside a CUDA-graph
// capture is harmless.
PyObject* template_of(const fa_tensor& like, int which) {
  TorchGlue& g = glue();
  PyObject** slot = nullptr;
  nb::object dev;
  if (like.device == FA_DEVICE_CPU) {
    slot = &g.cpu_templates[which];
    if (!*slot) dev = checked(PyObject_CallOneArg(g.device_ctor, nb::str("cpu").ptr()));
  } else if (like.device_id >= 0 && like.device_id < TorchGlue::kMaxDevices) {
    slot = &g.cuda_templates[like.device_id][which];
    if (!*slot) dev = checked(PyObject_CallFunction(g.device_ctor, "si", "cuda", like.device_id));
  } else {
    raise(PyExc_ValueError, "CUDA device index " + std::to_string(like.device_id) + " is out of range");
  }
  if (!*slot) {
    if (!g.dtype_by_slot[which]) raise(PyExc_RuntimeError, "flashattn._C: no torch dtype for slot " + std::to_string(which));
    nb::object size = nb::make_tuple(0), kw = nb::make_tuple("dtype", "device");
    PyObject* args[] = {size.ptr(), g.dtype_by_slot[which], dev.ptr()};
    *slot = checked(PyObject_Vectorcall(g.empty, args, 1, kw.ptr())).release().ptr();
  }
  return *slot;
}

uintptr_t data_ptr(const nb::object& t) {
  const AtenShim& s = shim();
  if (s.on && Py_TYPE(t.ptr()) == reinterpret_cast<PyTypeObject*>(glue().tensor_type)) {
    void* tensor = tensor_impl(t.ptr());
    void* data = nullptr;
    if (tensor && !s.get_data_ptr(&tensor, &data)) return reinterpret_cast<uintptr_t>(data);
  }
  nb::object p = call_method(t.ptr(), glue().s_data_ptr);
  const uintptr_t r = uintptr_t(PyLong_AsUnsignedLongLong(p.ptr()));
  if (PyErr_Occurred()) throw nb::python_error();
  return r;
}

// shim_empty_any where `where` lives, once the shim allocates (else an empty object). The first
// CUDA allocation is read back through its attributes before CUDA allocations are trusted (the
// import-time probe could only use the CPU without initialising CUDA).
nb::object shim_empty(const fa_tensor& where, int rank, const int64_t* sizes, const int64_t* strides, int slot) {
  AtenShim& s = shim();
  const bool cuda = where.device == FA_DEVICE_CUDA;
  if (cuda && !s.cuda_alloc_checked && slot == TorchGlue::kUint8Slot) return {};  // no attribute read for uint8
  nb::object t = shim_empty_any(cuda ? s.device_cuda : s.device_cpu, cuda ? where.device_id : -1, rank, sizes,
                                strides, slot);
  if (cuda && !s.cuda_alloc_checked && t.is_valid()) {
    const fa_tensor asked = asked_for(FA_DEVICE_CUDA, where.device_id, rank, sizes, strides, slot);
    if (!same_layout(torch_tensor_attr(t, "out"), asked)) {
      s.alloc_ready = s.alloc_on = false;
      s.alloc_why_off = "a CUDA allocation read back differently";
      return {};
    }
    s.cuda_alloc_checked = true;
  }
  return t;
}

// A contiguous tensor shaped like `like` (its descriptor `tl`). torch.empty_like without keyword
// preserves the layout, which for a contiguous tensor is contiguous, and costs about half of the
// call with memory_format= (torch's argument parser), so the keyword is passed only when needed.
nb::object alloc_like(nb::handle like, const fa_tensor& tl) {
  const TorchGlue& g = glue();
  if (shim().alloc_on) {  // the strides empty_like gives: like's if contiguous, else contiguous ones
    int64_t strides[FA_MAX_RANK];
    if (contiguous(tl))
      std::copy(tl.strides, tl.strides + tl.rank, strides);
    else
      standard_strides(tl.rank, tl.shape, strides);
    if (nb::object t = shim_empty(tl, tl.rank, tl.shape, strides, tl.dtype); t.is_valid()) return t;
  }
  if (contiguous(tl)) return checked(PyObject_CallOneArg(g.empty_like, like.ptr()));
  PyObject* args[] = {like.ptr(), g.contiguous_format};
  return checked(PyObject_Vectorcall(g.empty_like, args, 1, g.kw_memory_format));
}

// torch.empty(shape, dtype=, device=where `like` lives), as template.new_empty(shape).
nb::object alloc_empty(const fa_tensor& like, std::initializer_list<int64_t> shape, int dtype) {
  const TorchGlue& g = glue();
  if (shim().alloc_on) {
    int64_t strides[FA_MAX_RANK];
    const int rank = int(shape.size());
    standard_strides(rank, shape.begin(), strides);
    if (nb::object t = shim_empty(like, rank, shape.begin(), strides, dtype); t.is_valid()) return t;
  }
  nb::object size = checked(PyTuple_New(Py_ssize_t(shape.size())));
  Py_ssize_t i = 0;
  for (int64_t s : shape) PyTuple_SET_ITEM(size.ptr(), i++, checked(PyLong_FromLongLong(s)).release().ptr());
  PyObject* args[] = {template_of(like, dtype), size.ptr()};
  return checked(PyObject_VectorcallMethod(g.s_new_empty, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr));
}

// A contiguous tensor the caller allocated: `like`'s place, the given dtype and shape.
fa_tensor contiguous_like(const fa_tensor& like, uintptr_t ptr, fa_dtype dtype, std::initializer_list<int64_t> shape) {
  fa_tensor t{};
  t.data = reinterpret_cast<void*>(ptr);
  t.dtype = dtype;
  t.device = like.device;
  t.device_id = like.device_id;
  t.rank = int(shape.size());
  int i = 0;
  for (int64_t s : shape) t.shape[i++] = s;
  t.strides[t.rank - 1] = 1;
  for (int j = t.rank - 2; j >= 0; --j) t.strides[j] = t.strides[j + 1] * t.shape[j + 1];
  return t;
}

fa_tensor contiguous_like(const fa_tensor& like, uintptr_t ptr) {
  fa_tensor t = like;
  t.data = reinterpret_cast<void*>(ptr);
  t.strides[t.rank - 1] = 1;
  for (int j = t.rank - 2; j >= 0; --j) t.strides[j] = t.strides[j + 1] * t.shape[j + 1];
  return t;
}

// An output tensor allocated here and its descriptor. `like` must be the object `tl` describes
// (an Input's owner, i.e. after any copy): empty_like without memory_format copies its strides.
struct Output {
  nb::object obj;
  fa_tensor t;
  Output(nb::handle like, const fa_tensor& tl) : obj(alloc_like(like, tl)), t(contiguous_like(tl, data_ptr(obj))) {}
  Output(const fa_tensor& like, std::initializer_list<int64_t> shape)
      : obj(alloc_empty(like, shape, FA_DTYPE_FLOAT32)),
        t(contiguous_like(like, data_ptr(obj), FA_DTYPE_FLOAT32, shape)) {}
};

// ---- packed outputs (FLASHATTN_PACK_BYTES) ----
// A small eager call's host time is mostly torch calls, and on CUDA each allocation also goes
// through the caching allocator (and its free through it again). try_pack gives a call's outputs
// one allocation: the first output is that allocation, reshaped in place with set_, the others are
// 0-element tensors set_ onto the same storage at 256-byte aligned offsets. They are ordinary
// tensors (not views: no _base, own version counters, in-place ops and autograd behave as for
// separate allocations) that share a storage: untyped_storage() is the whole block, and the block
// lives while any of them does -- why packing is limited to small calls. It trades one allocation
// per extra output for two metadata calls; bench/python_overhead.py's "packed" rows measure which
// is cheaper on a given host. Only the eager path packs: custom ops must not return aliasing outputs.

size_t dtype_bytes(fa_dtype d) {
  return d == FA_DTYPE_FLOAT32 || d == FA_DTYPE_INT32 ? 4 : d == FA_DTYPE_FLOAT8_E4M3 ? 1 : 2;
}

nb::object int_tuple(const int64_t* v, int n) {
  nb::object t = checked(PyTuple_New(n));
  for (int i = 0; i < n; ++i) PyTuple_SET_ITEM(t.ptr(), i, checked(PyLong_FromLongLong(v[i])).release().ptr());
  return t;
}

// t.set_(storage, offset_in_elements, shape, strides) for the contiguous descriptor d.
void set_onto(const nb::object& t, const nb::object& storage, int64_t offset, const fa_tensor& d) {
  nb::object off = checked(PyLong_FromLongLong(offset));
  nb::object shape = int_tuple(d.shape, d.rank), strides = int_tuple(d.strides, d.rank);
  PyObject* args[] = {t.ptr(), storage.ptr(), off.ptr(), shape.ptr(), strides.ptr()};
  checked(PyObject_VectorcallMethod(glue().s_set_, args, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr));
}

// descs: contiguous descriptors of the outputs (data unset). Fills objs and descs' data and
// returns true, or returns false having allocated nothing (packing off, or the call too large).
bool try_pack(fa_tensor* const* descs, nb::object* const* objs, int n) {
  const TorchGlue& g = glue();
  if (g.pack_bytes == 0) return false;
  constexpr size_t kAlign = 256;  // >= the kernels' 16-byte vector/TMA alignment, a whole cache line
  size_t offset[4], total = 0;
  for (int i = 0; i < n; ++i) {
    size_t bytes = dtype_bytes(descs[i]->dtype);
    for (int d = 0; d < descs[i]->rank; ++d) bytes *= size_t(descs[i]->shape[d]);
    offset[i] = total;
    total = (total + bytes + kAlign - 1) / kAlign * kAlign;
  }
  if (total == 0 || total > g.pack_bytes) return false;
  const fa_tensor& first = *descs[0];
  const size_t e0 = dtype_bytes(first.dtype);
  nb::object buf = alloc_empty(first, {int64_t((total + e0 - 1) / e0)}, first.dtype);
  const uintptr_t base = data_ptr(buf);
  nb::object storage = call_method(buf.ptr(), g.s_untyped_storage);
  for (int i = 0; i < n; ++i) {
    nb::object t = i == 0 ? buf : alloc_empty(first, {0}, descs[i]->dtype);
    set_onto(t, storage, int64_t(offset[i] / dtype_bytes(descs[i]->dtype)), *descs[i]);
    descs[i]->data = reinterpret_cast<void*>(base + offset[i]);
    *objs[i] = std::move(t);
  }
  return true;
}

// The forward's outputs: out like q (contiguous) and, with want_lse, lse float32 of lse_shape.
struct FwdOutputs {
  nb::object out_obj, lse_obj;
  fa_tensor out{}, lse{};
  bool has_lse = false;
  FwdOutputs(const Input& q, bool want_lse, std::initializer_list<int64_t> lse_shape, bool may_pack)
      : has_lse(want_lse) {
    out = contiguous_like(q.t, 0);
    if (want_lse) lse = contiguous_like(q.t, 0, FA_DTYPE_FLOAT32, lse_shape);
    fa_tensor* descs[] = {&out, &lse};
    nb::object* objs[] = {&out_obj, &lse_obj};
    if (want_lse && may_pack && try_pack(descs, objs, 2)) return;
    Output o(q.owner, q.t);
    out_obj = std::move(o.obj);
    out = o.t;
    if (want_lse) {
      Output l(q.t, lse_shape);
      lse_obj = std::move(l.obj);
      lse = l.t;
    }
  }
  fa_tensor* lse_ptr() { return has_lse ? &lse : nullptr; }
  nb::object result() const { return has_lse ? nb::object(nb::make_tuple(out_obj, lse_obj)) : out_obj; }
};

// The backward's outputs dq, dk, dv like q, k, v (contiguous).
struct BwdOutputs {
  nb::object objs[3];
  fa_tensor d[3]{};
  BwdOutputs(const Input& q, const Input& k, const Input& v, bool may_pack) {
    const Input* in[] = {&q, &k, &v};
    for (int i = 0; i < 3; ++i) d[i] = contiguous_like(in[i]->t, 0);
    fa_tensor* descs[] = {&d[0], &d[1], &d[2]};
    nb::object* os[] = {&objs[0], &objs[1], &objs[2]};
    if (may_pack && try_pack(descs, os, 3)) return;
    for (int i = 0; i < 3; ++i) {
      Output o(in[i]->owner, in[i]->t);
      objs[i] = std::move(o.obj);
      d[i] = o.t;
    }
  }
  nb::object result() const { return nb::make_tuple(objs[0], objs[1], objs[2]); }
};

// Varlen descriptor from torch tensors; seqused_k is () when absent (nanobind's positional
// handles refuse None without per-argument annotations).
struct RawVarlen {
  fa_tensor cu_q{}, cu_k{}, used_k{};
  fa_varlen vl{};
  RawVarlen(nb::handle cu_seqlens_q, nb::handle cu_seqlens_k, nb::handle seqused_k, int64_t max_q, int64_t max_k) {
    cu_q = torch_tensor(cu_seqlens_q, "cu_seqlens_q");
    cu_k = torch_tensor(cu_seqlens_k, "cu_seqlens_k");
    vl.cu_seqlens_q = &cu_q;
    vl.cu_seqlens_k = &cu_k;
    if (!(PyTuple_Check(seqused_k.ptr()) && PyTuple_GET_SIZE(seqused_k.ptr()) == 0)) {
      used_k = torch_tensor(seqused_k, "seqused_k");
      vl.seqused_k = &used_k;
    }
    vl.max_seqlen_q = max_q;
    vl.max_seqlen_k = max_k;
  }
  RawVarlen(const RawVarlen&) = delete;
};

// Options as the torch layer passes them: Python objects, converted as Python's float()/bool()
// would (the custom-op path converts in Python; the eager path leaves it to this one crossing).
fa_options torch_options(const fa_tensor& q, nb::handle scale, nb::handle causal, int window_left, int window_right,
                         nb::handle softcap, nb::handle deterministic) {
  fa_options o;
  fa_options_init(&o);
  o.softmax_scale = as_float(scale);
  o.causal = truthy(causal) ? 1 : 0;
  o.window_left = window_left;
  o.window_right = window_right;
  o.softcap = as_float(softcap);
  o.deterministic = truthy(deterministic) ? 1 : 0;
  torch_exec(q, &o);
  return o;
}

#define FA_TORCH_OPTION_PARAMS                                                                    \
  nb::handle scale, nb::handle causal, int window_left, int window_right, nb::handle softcap, \
      nb::handle deterministic
#define FA_TORCH_OPTION_ARGS scale, causal, window_left, window_right, softcap, deterministic

// What an eager call may do. Direct: plain tensors, nothing watching; run it here. Grad: the
// same, but autograd must record it (the caller wraps it in its autograd.Function). Ops: a tracer,
// transform or dispatch mode is active, or an input is not a plain torch.Tensor (a subclass, fake
// tensor, or not a tensor at all): the caller goes through the custom ops, which also give the
// type errors.
enum class Route { Direct, Grad, Ops };

Route route(nb::handle q, nb::handle k, nb::handle v) {
  const TorchGlue& g = ready_glue();
  PyTypeObject* tt = reinterpret_cast<PyTypeObject*>(g.tensor_type);
  if (Py_TYPE(q.ptr()) != tt || Py_TYPE(k.ptr()) != tt || Py_TYPE(v.ptr()) != tt) return Route::Ops;
  const Py_ssize_t n = PyTuple_GET_SIZE(g.blockers);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (truthy(checked(PyObject_CallNoArgs(PyTuple_GET_ITEM(g.blockers, i))))) return Route::Ops;
  // Forward-mode AD: the direct path would drop the tangents silently; the custom op refuses. Read
  // here rather than through a Python lambda in the blockers (a frame per call, ~0.1 us).
  if (as_i64(get_attr(g.forward_ad, g.s_current_level).ptr()) >= 0) return Route::Ops;
  for (nb::handle t : {q, k, v})
    if (get_attr(t.ptr(), g.s_requires_grad).ptr() == Py_True)
      return checked(PyObject_CallNoArgs(g.grad_enabled)).ptr() == Py_True ? Route::Grad : Route::Direct;
  return Route::Direct;
}

nb::object route_answer(Route r) { return r == Route::Grad ? nb::none() : nb::borrow(Py_NotImplemented); }

// The workspace a batch-form forward or backward needs is a function of the tensors' shapes,
// strides, dtypes and device and of the options, never of the data: each thread keeps its last
// successful answer per pass, so a repeated call is validated once (by the call itself) instead
// of twice. The query is ~0.2-0.3 us of validation and kernel-table lookup on the H200's host
// (fa_host_overhead's "fa_forward_workspace_size" row), on every eager call. Compared field by
// field, data pointers and stream left out. Off: FLASHATTN_WS_MEMO=0, or torch_ws_memo(False)
// (bench/python_overhead.py --ab-ws).
class WsMemo {
 public:
  enum Pass { kForward = 0, kBackward = 1 };
  // query(&need) on a miss; the cached need on a hit.
  template <class Query>
  static fa_status need(Pass pass, const fa_tensor& q, const fa_tensor& k, const fa_tensor& v, const fa_options& o,
                        Query&& query, size_t* need) {
    if (!on()) {
      ++stats().queries;
      return query(need);
    }
    Entry e;
    e.t[0] = q, e.t[1] = k, e.t[2] = v;
    e.scale = o.softmax_scale, e.softcap = o.softcap;
    e.ints[0] = o.causal, e.ints[1] = o.window_left, e.ints[2] = o.window_right, e.ints[3] = o.deterministic;
    e.ints[4] = int(o.backend), e.ints[5] = int(o.algo), e.ints[6] = o.num_threads;
    Entry& slot = last(pass);
    if (slot.valid && same(slot, e)) {
      ++stats().hits;
      *need = slot.need;
      return FA_OK;
    }
    ++stats().queries;
    const fa_status st = query(need);
    if (st == FA_OK) {
      e.need = *need;
      e.valid = true;
      slot = e;
    }
    return st;
  }
  // Per thread, for tests: a key that left out a field would show as a hit where a query is due.
  struct Stats {
    uint64_t hits = 0, queries = 0;
  };
  static Stats& stats() {
    thread_local Stats st;
    return st;
  }
  static bool& on() {
    static bool v = [] {
      const char* s = std::getenv("FLASHATTN_WS_MEMO");
      return !(s && std::strcmp(s, "0") == 0);
    }();
    return v;
  }

 private:
  // The tensors are kept whole; `same` never looks at their data pointers.
  struct Entry {
    fa_tensor t[3] = {};
    float scale = 0.f, softcap = 0.f;
    int ints[7] = {};
    size_t need = 0;
    bool valid = false;
  };
  static Entry& last(Pass pass) {
    thread_local Entry entries[2];
    return entries[pass];
  }
  static bool same_tensor(const fa_tensor& a, const fa_tensor& b) {
    if (a.dtype != b.dtype || a.device != b.device || a.device_id != b.device_id || a.rank != b.rank) return false;
    for (int i = 0; i < a.rank && i < FA_MAX_RANK; ++i)
      if (a.shape[i] != b.shape[i] || a.strides[i] != b.strides[i]) return false;
    return true;
  }
  static bool same(const Entry& a, const Entry& b) {
    // Bit patterns for the floats: -0.0 and 0.0, or two NaNs, are then different keys (a miss,
    // never a wrong answer).
    return std::memcmp(&a.scale, &b.scale, sizeof(float)) == 0 && std::memcmp(&a.softcap, &b.softcap, sizeof(float)) == 0 &&
           std::memcmp(a.ints, b.ints, sizeof a.ints) == 0 && same_tensor(a.t[0], b.t[0]) &&
           same_tensor(a.t[1], b.t[1]) && same_tensor(a.t[2], b.t[2]);
  }
};

// The A/B switch of bench/python_overhead.py --ab-ws. Returns the previous state.
bool torch_ws_memo(bool on) {
  const bool previous = WsMemo::on();
  WsMemo::on() = on;
  return previous;
}

// (hits, queries) of this thread's workspace memo so far.
nb::tuple torch_ws_memo_stats() { return nb::make_tuple(WsMemo::stats().hits, WsMemo::stats().queries); }

// Workspace: the library says how much scratch the call needs (nothing, for most forwards); it
// is allocated here through torch, in the same crossing, and held until the call has been
// enqueued (torch's allocator is stream-ordered, so freeing it afterwards is safe). The GIL is
// released only for CPU tensors, where the call computes for as long as it takes; a CUDA call
// only enqueues, and releasing and re-taking the GIL would cost more than it frees.
template <class Query, class Launch>
void run_torch(const fa_tensor& q, fa_options& o, Query&& query, Launch&& launch) {
  TorchGlue& g = glue();
  size_t need = 0;
  check(query(&need));
  need = std::max(need, g.min_workspace);
  nb::object ws;
  if (need > 0) {
    ws = alloc_empty(q, {int64_t(need)}, TorchGlue::kUint8Slot);
    o.workspace = reinterpret_cast<void*>(data_ptr(ws));
    o.workspace_bytes = need;
  }
  g.last_workspace = need;
  fa_status st;
  if (q.device == FA_DEVICE_CPU) {
    nb::gil_scoped_release nogil;
    st = launch();
  } else {
    st = launch();
  }
  check(st);
}

// How a forward entry point was reached (the `mode` argument).
enum FwdMode : int {
  kFwdPlain = 0,   // custom-op implementation: run, separate allocations
  kFwdRoute = 1,   // public function, eager: decide the route first; outputs may be packed
  kFwdEager = 2,   // the eager autograd.Function's forward: run; outputs may be packed
};

// Forward: allocates out (and lse when want_lse) through torch and runs. Returns out, or
// (out, lse). With kFwdRoute (the public functions' eager path) it first decides the route and
// returns None (needs autograd) or NotImplemented (use the custom ops) instead of running.
nb::object torch_fwd(nb::handle q, nb::handle k, nb::handle v, int mode, nb::handle want_lse_obj,
                     FA_TORCH_OPTION_PARAMS) {
  if (mode == kFwdRoute) {
    const Route r = route(q, k, v);
    if (r != Route::Direct) return route_answer(r);
  }
  const bool want_lse = truthy(want_lse_obj);
  const Input iq(q, "q"), ik(k, "k"), iv(v, "v");
  fa_options o = torch_options(iq.t, FA_TORCH_OPTION_ARGS);
  // Without lse the library's validation reports a wrong rank (same message).
  if (want_lse && iq.t.rank != 4) raise(PyExc_ValueError, "q: expected rank 4, got " + std::to_string(iq.t.rank));
  FwdOutputs res(iq, want_lse, {iq.t.shape[0], iq.t.shape[2], iq.t.shape[1]}, mode != kFwdPlain);
  run_torch(
      iq.t, o,
      [&](size_t* need) {
        return WsMemo::need(WsMemo::kForward, iq.t, ik.t, iv.t, o, [&](size_t* n) {
          return fa_forward_workspace_size(&iq.t, &ik.t, &iv.t, nullptr, &o, n);
        }, need);
      },
      [&] { return fa_forward(&iq.t, &ik.t, &iv.t, &res.out, res.lse_ptr(), &o); });
  return res.result();
}

// Backward: allocates dq, dk, dv (and the workspace) through torch; returns (dq, dk, dv).
// may_pack: the eager autograd.Function's backward (not the custom op's).
nb::object torch_bwd(bool may_pack, nb::handle dout, nb::handle q, nb::handle k, nb::handle v, nb::handle out,
                     nb::handle lse, FA_TORCH_OPTION_PARAMS) {
  const Input idout(dout, "dout", true), iq(q, "q"), ik(k, "k"), iv(v, "v"), iout(out, "out"), ilse(lse, "lse");
  fa_options o = torch_options(iq.t, FA_TORCH_OPTION_ARGS);
  BwdOutputs res(iq, ik, iv, may_pack);
  run_torch(
      iq.t, o,
      [&](size_t* need) {
        return WsMemo::need(WsMemo::kBackward, iq.t, ik.t, iv.t, o, [&](size_t* n) {
          return fa_backward_workspace_size(&iq.t, &ik.t, &iv.t, nullptr, &o, n);
        }, need);
      },
      [&] {
        return fa_backward(&iq.t, &ik.t, &iv.t, &iout.t, &ilse.t, &idout.t, &res.d[0], &res.d[1], &res.d[2], &o);
      });
  return res.result();
}

nb::object torch_varlen_fwd(nb::handle q, nb::handle k, nb::handle v, nb::handle cu_seqlens_q,
                            nb::handle cu_seqlens_k, nb::handle seqused_k, int64_t max_seqlen_q,
                            int64_t max_seqlen_k, int mode, nb::handle want_lse_obj, FA_TORCH_OPTION_PARAMS) {
  if (mode == kFwdRoute) {
    const Route r = route(q, k, v);
    if (r != Route::Direct) return route_answer(r);
  }
  const bool want_lse = truthy(want_lse_obj);
  const Input iq(q, "q"), ik(k, "k"), iv(v, "v");
  const RawVarlen vl(cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  fa_options o = torch_options(iq.t, FA_TORCH_OPTION_ARGS);
  if (want_lse && iq.t.rank != 3) raise(PyExc_ValueError, "q: expected rank 3, got " + std::to_string(iq.t.rank));
  FwdOutputs res(iq, want_lse, {iq.t.shape[1], iq.t.shape[0]}, mode != kFwdPlain);
  run_torch(
      iq.t, o, [&](size_t* need) { return fa_forward_workspace_size(&iq.t, &ik.t, &iv.t, &vl.vl, &o, need); },
      [&] { return fa_varlen_forward(&iq.t, &ik.t, &iv.t, &vl.vl, &res.out, res.lse_ptr(), &o); });
  return res.result();
}

nb::object torch_varlen_bwd(nb::handle dout, nb::handle q, nb::handle k, nb::handle v, nb::handle out,
                            nb::handle lse, nb::handle cu_seqlens_q, nb::handle cu_seqlens_k, nb::handle seqused_k,
                            int64_t max_seqlen_q, int64_t max_seqlen_k, FA_TORCH_OPTION_PARAMS) {
  const Input idout(dout, "dout", true), iq(q, "q"), ik(k, "k"), iv(v, "v"), iout(out, "out"), ilse(lse, "lse");
  const RawVarlen vl(cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  fa_options o = torch_options(iq.t, FA_TORCH_OPTION_ARGS);
  Output dq(iq.owner, iq.t), dk(ik.owner, ik.t), dv(iv.owner, iv.t);
  run_torch(
      iq.t, o, [&](size_t* need) { return fa_backward_workspace_size(&iq.t, &ik.t, &iv.t, &vl.vl, &o, need); },
      [&] {
        return fa_varlen_backward(&iq.t, &ik.t, &iv.t, &vl.vl, &iout.t, &ilse.t, &idout.t, &dq.t, &dk.t, &dv.t,
                                  &o);
      });
  return nb::make_tuple(dq.obj, dk.obj, dv.obj);
}

// flash_attn_with_kvcache: allocates out (and lse) and the workspace through torch and runs on
// torch's current stream. Optional tensors arrive as None. No autograd (flash_attn's has none):
// requires_grad inputs do not change the route, the output simply carries no graph. With
// kFwdRoute it returns NotImplemented where a tracer, mode or tensor subclass needs the custom op.
// k_cache/v_cache are read as they are (never copied: the append must land in the caller's cache).
nb::object torch_kvcache_fwd(nb::handle q, nb::handle k_cache, nb::handle v_cache, nb::handle k_new,
                             nb::handle v_new, nb::handle cache_seqlens, nb::handle cache_batch_idx,
                             nb::handle block_table, int mode, nb::handle want_lse_obj, nb::handle scale,
                             nb::handle causal, int window_left, int window_right, nb::handle softcap,
                             int num_splits) {
  if (mode == kFwdRoute && route(q, k_cache, v_cache) == Route::Ops) return nb::borrow(Py_NotImplemented);
  const bool want_lse = truthy(want_lse_obj);
  const Input iq(q, "q");
  std::optional<Input> ik, iv;
  KvDesc d;
  d.k_cache = torch_tensor(k_cache, "k_cache");
  d.v_cache = torch_tensor(v_cache, "v_cache");
  if (!k_new.is_none()) d.k_new = ik.emplace(k_new, "k_new").t;
  if (!v_new.is_none()) d.v_new = iv.emplace(v_new, "v_new").t;
  if (!cache_seqlens.is_none()) d.seqlens = torch_tensor(cache_seqlens, "cache_seqlens");
  if (!cache_batch_idx.is_none()) d.idx = torch_tensor(cache_batch_idx, "cache_batch_idx");
  if (!block_table.is_none()) d.table = torch_tensor(block_table, "block_table");
  d.link(!cache_seqlens.is_none(), !block_table.is_none(), !cache_batch_idx.is_none(), bool(ik), bool(iv),
         num_splits);
  fa_options o = torch_options(iq.t, scale, causal, window_left, window_right, softcap, Py_False);
  if (iq.t.rank != 4) raise(PyExc_ValueError, "q: expected rank 4, got " + std::to_string(iq.t.rank));
  FwdOutputs res(iq, want_lse, {iq.t.shape[0], iq.t.shape[2], iq.t.shape[1]}, mode != kFwdPlain);
  run_torch(
      iq.t, o, [&](size_t* need) { return fa_kvcache_workspace_size(&iq.t, &d.kv, &o, need); },
      [&] { return fa_kvcache_forward(&iq.t, &d.kv, &res.out, res.lse_ptr(), &o); });
  return res.result();
}

// flash_attn_fp8_func: the FP8 forward on torch tensors. Outputs (out in q's dtype, lse) and the
// workspace that holds the quantised q, k, v come from torch's allocator, on torch's current
// stream, as for torch_fwd. Forward only: with kFwdRoute, None means autograd would have to record
// the call (an input requires grad under grad mode), which the Python layer refuses, having no
// backward to offer; NotImplemented sends tracers, modes and subclasses to the custom op.
nb::object torch_fp8_fwd(nb::handle q, nb::handle k, nb::handle v, int mode, nb::handle want_lse_obj, nb::handle scale,
                         nb::handle causal, int window_left, int window_right, int scaling, nb::handle incoherent,
                         nb::handle seed) {
  if (mode == kFwdRoute) {
    const Route r = route(q, k, v);
    if (r != Route::Direct) return route_answer(r);
  }
  const bool want_lse = truthy(want_lse_obj);
  const Input iq(q, "q"), ik(k, "k"), iv(v, "v");
  const fa_fp8 f = make_fp8(scaling, truthy(incoherent), seed);
  fa_options o = torch_options(iq.t, scale, causal, window_left, window_right, nb::none(), Py_False);
  if (want_lse && iq.t.rank != 4) raise(PyExc_ValueError, "q: expected rank 4, got " + std::to_string(iq.t.rank));
  FwdOutputs res(iq, want_lse, {iq.t.shape[0], iq.t.shape[2], iq.t.shape[1]}, mode != kFwdPlain);
  run_torch(
      iq.t, o, [&](size_t* need) { return fa_fp8_workspace_size(&iq.t, &ik.t, &iv.t, &f, &o, need); },
      [&] { return fa_fp8_forward(&iq.t, &ik.t, &iv.t, &f, &res.out, res.lse_ptr(), &o); });
  return res.result();
}

// The thinnest torch layer, for bench/python_overhead.py's first row: tensors read here, outputs
// preallocated by the caller and passed as pointers, no workspace (0 returned: it ran; otherwise
// the bytes it would need, and nothing ran).
size_t torch_forward_preallocated(nb::handle q, nb::handle k, nb::handle v, uintptr_t out, uintptr_t lse,
                                  FA_TORCH_OPTION_PARAMS) {
  const fa_tensor tq = torch_tensor(q, "q"), tk = torch_tensor(k, "k"), tv = torch_tensor(v, "v");
  fa_tensor to = contiguous_like(tq, out);
  fa_tensor tl{};
  if (lse) {
    if (tq.rank != 4) raise(PyExc_ValueError, "q: expected rank 4, got " + std::to_string(tq.rank));
    tl = contiguous_like(tq, lse, FA_DTYPE_FLOAT32, {tq.shape[0], tq.shape[2], tq.shape[1]});
  }
  fa_options o = torch_options(tq, FA_TORCH_OPTION_ARGS);
  size_t need = 0;
  check(fa_forward_workspace_size(&tq, &tk, &tv, nullptr, &o, &need));
  if (need) return need;
  fa_status st;
  if (tq.device == FA_DEVICE_CPU) {
    nb::gil_scoped_release nogil;
    st = fa_forward(&tq, &tk, &tv, &to, lse ? &tl : nullptr, &o);
  } else {
    st = fa_forward(&tq, &tk, &tv, &to, lse ? &tl : nullptr, &o);
  }
  check(st);
  return 0;
}

// Largest total of outputs packed into one allocation (0: off); returns the previous value.
size_t torch_pack_bytes(size_t max_bytes) {
  TorchGlue& g = glue();
  const size_t previous = g.pack_bytes;
  g.pack_bytes = max_bytes;
  return previous;
}

// Test hook: at least min_bytes of workspace per torch call (0: only what the library asks for);
// returns the workspace bytes the previous torch call allocated.
size_t torch_debug_workspace(size_t min_bytes) {
  TorchGlue& g = glue();
  const size_t last = g.last_workspace;
  g.min_workspace = min_bytes;
  return last;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "Low-level bindings of the flashattn C ABI. Use flashattn's Python functions instead.";

  // Option arguments common to every call, positional in this order (the Python layer builds
  // them; positional passing keeps per-call overhead low).
  m.def("forward", &forward, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
        nb::arg("lse").none(), nb::arg("scale"), nb::arg("causal"), nb::arg("window_left"),
        nb::arg("window_right"), nb::arg("softcap"), nb::arg("deterministic"), nb::arg("backend"),
        nb::arg("algo"), nb::arg("num_threads"), nb::arg("stream"), nb::arg("workspace").none());
  m.def("backward", &backward, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
        nb::arg("lse"), nb::arg("dout"), nb::arg("dq"), nb::arg("dk"), nb::arg("dv"),
        nb::arg("scale"), nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"),
        nb::arg("softcap"), nb::arg("deterministic"), nb::arg("backend"), nb::arg("algo"),
        nb::arg("num_threads"), nb::arg("stream"), nb::arg("workspace").none());
  m.def("varlen_forward", &varlen_forward, nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("cu_seqlens_q"), nb::arg("cu_seqlens_k"), nb::arg("seqused_k").none(),
        nb::arg("max_seqlen_q"), nb::arg("max_seqlen_k"), nb::arg("out"), nb::arg("lse").none(),
        nb::arg("scale"), nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"),
        nb::arg("softcap"), nb::arg("deterministic"), nb::arg("backend"), nb::arg("algo"),
        nb::arg("num_threads"), nb::arg("stream"), nb::arg("workspace").none());
  m.def("varlen_backward", &varlen_backward, nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("cu_seqlens_q"), nb::arg("cu_seqlens_k"), nb::arg("seqused_k").none(),
        nb::arg("max_seqlen_q"), nb::arg("max_seqlen_k"), nb::arg("out"), nb::arg("lse"),
        nb::arg("dout"), nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("scale"),
        nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"), nb::arg("softcap"),
        nb::arg("deterministic"), nb::arg("backend"), nb::arg("algo"), nb::arg("num_threads"),
        nb::arg("stream"), nb::arg("workspace").none());
  m.def("workspace_size", &workspace_size, nb::arg("is_backward"), nb::arg("q"), nb::arg("k"),
        nb::arg("v"), nb::arg("cu_seqlens_q").none(), nb::arg("cu_seqlens_k").none(),
        nb::arg("seqused_k").none(), nb::arg("max_seqlen_q"), nb::arg("max_seqlen_k"),
        nb::arg("scale"), nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"),
        nb::arg("softcap"), nb::arg("deterministic"), nb::arg("backend"), nb::arg("algo"),
        nb::arg("num_threads"), nb::arg("stream"), nb::arg("workspace").none());

  // The torch fast path (see the top of this file): torch tensors read through their attributes,
  // outputs and workspace allocated through torch in the same call, options positional.
  m.def("kvcache_forward", &kvcache_forward, nb::arg("q"), nb::arg("k_cache"), nb::arg("v_cache"),
        nb::arg("cache_seqlens").none(), nb::arg("block_table").none(), nb::arg("cache_batch_idx").none(),
        nb::arg("k_new").none(), nb::arg("v_new").none(), nb::arg("num_splits"), nb::arg("out"),
        nb::arg("lse").none(), nb::arg("scale"), nb::arg("causal"), nb::arg("window_left"),
        nb::arg("window_right"), nb::arg("softcap"), nb::arg("deterministic"), nb::arg("backend"),
        nb::arg("algo"), nb::arg("num_threads"), nb::arg("stream"), nb::arg("workspace").none());
  m.def("kvcache_workspace_size", &kvcache_workspace_size, nb::arg("q"), nb::arg("k_cache"), nb::arg("v_cache"),
        nb::arg("cache_seqlens").none(), nb::arg("block_table").none(), nb::arg("cache_batch_idx").none(),
        nb::arg("k_new").none(), nb::arg("v_new").none(), nb::arg("num_splits"), nb::arg("scale"),
        nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"), nb::arg("softcap"),
        nb::arg("deterministic"), nb::arg("backend"), nb::arg("algo"), nb::arg("num_threads"), nb::arg("stream"),
        nb::arg("workspace").none());
  m.def("torch_kvcache_fwd", &torch_kvcache_fwd, nb::arg("q"), nb::arg("k_cache"), nb::arg("v_cache"),
        nb::arg("k_new").none(), nb::arg("v_new").none(), nb::arg("cache_seqlens").none(),
        nb::arg("cache_batch_idx").none(), nb::arg("block_table").none(), nb::arg("mode"), nb::arg("want_lse"),
        nb::arg("scale").none(), nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"),
        nb::arg("softcap"), nb::arg("num_splits"));
  m.def("fp8_forward", &fp8_forward, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
        nb::arg("lse").none(), nb::arg("scaling"), nb::arg("incoherent"), nb::arg("seed"), nb::arg("scale"),
        nb::arg("causal"), nb::arg("window_left"), nb::arg("window_right"), nb::arg("softcap"),
        nb::arg("deterministic"), nb::arg("backend"), nb::arg("algo"), nb::arg("num_threads"), nb::arg("stream"),
        nb::arg("workspace").none());
  m.def("fp8_workspace_size", &fp8_workspace_size, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("scaling"),
        nb::arg("incoherent"), nb::arg("seed"), nb::arg("scale"), nb::arg("causal"), nb::arg("window_left"),
        nb::arg("window_right"), nb::arg("softcap"), nb::arg("deterministic"), nb::arg("backend"),
        nb::arg("algo"), nb::arg("num_threads"), nb::arg("stream"), nb::arg("workspace").none());
  m.def("torch_fp8_fwd", &torch_fp8_fwd, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("mode"),
        nb::arg("want_lse").none(), nb::arg("softmax_scale").none(), nb::arg("causal").none(),
        nb::arg("window_left"), nb::arg("window_right"), nb::arg("scaling"), nb::arg("incoherent").none(),
        nb::arg("seed"));
  m.def("torch_setup", &torch_setup);
  m.def("torch_setup_shim", &torch_setup_shim, nb::arg("probes"), nb::arg("to_handles").none(), nb::arg("lib_dir"),
        nb::arg("alloc") = true);
  m.def("torch_tensor_read", &torch_tensor_read);
  m.def("torch_tensor_alloc", &torch_tensor_alloc);
  m.def("torch_shim_alloc", &torch_shim_alloc, nb::arg("on"));
  m.def("torch_ws_memo", &torch_ws_memo, nb::arg("on"));
  m.def("torch_ws_memo_stats", &torch_ws_memo_stats);
  // Option objects pass as given (softmax_scale may be None); the macro names them and lets None through.
#define FA_TORCH_OPTION_NB_ARGS                                                                       \
  nb::arg("softmax_scale").none(), nb::arg("causal").none(), nb::arg("window_left"), nb::arg("window_right"), \
      nb::arg("softcap").none(), nb::arg("deterministic").none()
  m.def("torch_fwd", &torch_fwd, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("mode"),
        nb::arg("want_lse").none(), FA_TORCH_OPTION_NB_ARGS);
  m.def("torch_bwd", &torch_bwd, nb::arg("may_pack"), nb::arg("dout"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
        nb::arg("lse"), FA_TORCH_OPTION_NB_ARGS);
  m.def("torch_varlen_fwd", &torch_varlen_fwd, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("cu_seqlens_q"),
        nb::arg("cu_seqlens_k"), nb::arg("seqused_k"), nb::arg("max_seqlen_q"), nb::arg("max_seqlen_k"),
        nb::arg("mode"), nb::arg("want_lse").none(), FA_TORCH_OPTION_NB_ARGS);
  m.def("torch_varlen_bwd", &torch_varlen_bwd, nb::arg("dout"), nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("out"), nb::arg("lse"), nb::arg("cu_seqlens_q"), nb::arg("cu_seqlens_k"), nb::arg("seqused_k"),
        nb::arg("max_seqlen_q"), nb::arg("max_seqlen_k"), FA_TORCH_OPTION_NB_ARGS);
  m.def("torch_forward_preallocated", &torch_forward_preallocated, nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("out"), nb::arg("lse"), FA_TORCH_OPTION_NB_ARGS);
  m.def("torch_debug_workspace", &torch_debug_workspace);
  m.def("torch_pack_bytes", &torch_pack_bytes, nb::arg("max_bytes"));

  m.def("version", [] { return std::string(fa_version()); });
  m.def("build_info", [] { return std::string(fa_build_info()); });
  m.def("cuda_built", [] { return fa_cuda_built() != 0; });
  m.def("cuda_device_count", [] { return fa_cuda_device_count(); });

  m.attr("BACKEND_AUTO") = int(FA_BACKEND_AUTO);
  m.attr("BACKEND_CPU") = int(FA_BACKEND_CPU);
  m.attr("BACKEND_CUDA") = int(FA_BACKEND_CUDA);
  m.attr("ALGO_AUTO") = int(FA_ALGO_AUTO);
  m.attr("ALGO_FA1") = int(FA_ALGO_FA1);
  m.attr("ALGO_FA2") = int(FA_ALGO_FA2);
  m.attr("ALGO_FA3") = int(FA_ALGO_FA3);
  m.attr("FP8_SCALING_BLOCK") = int(FA_FP8_SCALING_BLOCK);
  m.attr("FP8_SCALING_PER_HEAD") = int(FA_FP8_SCALING_PER_HEAD);
  {
    fa_fp8 f;
    fa_fp8_init(&f);
    m.attr("FP8_DEFAULT_SEED") = nb::int_(f.seed);  // fa_fp8_init's seed: seed=None in Python
  }
}
