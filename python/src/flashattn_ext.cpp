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
// data_ptr, shape and stride() through the C API. Exporting a torch tensor through DLPack
// allocates a capsule and a managed tensor per argument, several microseconds per call at small
// shapes; the attribute reads cost a fraction of that, and doing them here rather than in Python
// saves the interpreter's share. Outputs the torch layer allocates itself (contiguous, in torch's
// allocator) cross as bare pointers and are described here. No torch header or library is used:
// torch_setup hands over the few torch objects needed, so one wheel still serves every torch.
#include <flashattn/flashattn.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

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
      raise(msg.find("dtype") != std::string::npos ? PyExc_TypeError : PyExc_ValueError, msg);
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

// ---- torch fast path ------------------------------------------------------------------------

int64_t as_i64(PyObject* o) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return int64_t(v);
}

// What the torch glue needs from torch, handed over once by flashattn._torch at import
// (torch_setup) so the extension never links or includes torch: the dtype -> fa_dtype map, the
// current-raw-stream function and torch.get_num_threads. Attribute names are interned once.
struct TorchGlue {
  PyObject* dtype_codes = nullptr;
  PyObject* raw_stream = nullptr;
  PyObject* num_threads = nullptr;
  PyObject *s_dtype = nullptr, *s_is_cuda, *s_is_cpu, *s_get_device, *s_data_ptr, *s_shape, *s_stride, *s_device;
};

TorchGlue& glue() {
  static TorchGlue g;  // references held for the process's life, like the module itself
  return g;
}

void torch_setup(nb::dict dtype_codes, nb::callable raw_stream, nb::callable num_threads) {
  TorchGlue& g = glue();
  g.dtype_codes = dtype_codes.inc_ref().ptr();
  g.raw_stream = raw_stream.inc_ref().ptr();
  g.num_threads = num_threads.inc_ref().ptr();
  g.s_dtype = PyUnicode_InternFromString("dtype");
  g.s_is_cuda = PyUnicode_InternFromString("is_cuda");
  g.s_is_cpu = PyUnicode_InternFromString("is_cpu");
  g.s_get_device = PyUnicode_InternFromString("get_device");
  g.s_data_ptr = PyUnicode_InternFromString("data_ptr");
  g.s_shape = PyUnicode_InternFromString("shape");
  g.s_stride = PyUnicode_InternFromString("stride");
  g.s_device = PyUnicode_InternFromString("device");
}

nb::object get_attr(PyObject* o, PyObject* name) {
  PyObject* r = PyObject_GetAttr(o, name);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::object call_method(PyObject* o, PyObject* name) {
  PyObject* r = PyObject_CallMethodNoArgs(o, name);
  if (!r) throw nb::python_error();
  return nb::steal(r);
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
fa_tensor torch_tensor(nb::handle h, const char* name) {
  const TorchGlue& g = glue();
  if (!g.s_dtype) raise(PyExc_RuntimeError, "flashattn._C: torch_setup was not called");
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

// Where a torch call runs: torch's current stream on q's CUDA device; on the CPU, torch's
// intra-op thread count, so torch.set_num_threads governs the CPU backend too.
void torch_exec(const fa_tensor& q, fa_options* o) {
  const TorchGlue& g = glue();
  if (q.device == FA_DEVICE_CUDA) {
    nb::object dev = nb::int_(q.device_id);
    nb::object s = nb::steal(PyObject_CallOneArg(g.raw_stream, dev.ptr()));
    if (!s.is_valid()) throw nb::python_error();
    o->stream = reinterpret_cast<void*>(uintptr_t(PyLong_AsUnsignedLongLong(s.ptr())));
    if (PyErr_Occurred()) throw nb::python_error();
  } else {
    nb::object n = nb::steal(PyObject_CallNoArgs(g.num_threads));
    if (!n.is_valid()) throw nb::python_error();
    o->num_threads = int(as_i64(n.ptr()));
  }
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

fa_options raw_options(float scale, bool causal, int window_left, int window_right, float softcap,
                       bool deterministic, uintptr_t ws, size_t ws_bytes) {
  fa_options o;
  fa_options_init(&o);
  o.softmax_scale = scale;
  o.causal = causal ? 1 : 0;
  o.window_left = window_left;
  o.window_right = window_right;
  o.softcap = softcap;
  o.deterministic = deterministic ? 1 : 0;
  o.workspace = reinterpret_cast<void*>(ws);
  o.workspace_bytes = ws_bytes;
  return o;
}

#define FA_RAW_OPTION_PARAMS                                                                   \
  float scale, bool causal, int window_left, int window_right, float softcap, bool deterministic, \
      uintptr_t ws, size_t ws_bytes
#define FA_RAW_OPTION_ARGS scale, causal, window_left, window_right, softcap, deterministic, ws, ws_bytes

// Workspace protocol of the torch_* calls: called with ws = 0, a call that needs workspace returns
// the bytes it needs and launches nothing; the caller allocates (in its framework's allocator,
// which CUDA-graph capture requires) and calls again with it. A call that needs none (most
// forwards) launches at once: one crossing, no size query from Python, no cache to key.
// The GIL is released only for CPU tensors, where the call computes for as long as it takes; a
// CUDA call only enqueues, and releasing and re-taking the GIL would cost more than it frees.
template <class Query, class Launch>
size_t run_raw(const fa_tensor& q, const fa_options& o, Query&& query, Launch&& launch) {
  size_t need = 0;
  auto body = [&] {
    fa_status st = FA_OK;
    if (!o.workspace) st = query(&need);
    if (st == FA_OK && need == 0) st = launch();
    return st;
  };
  fa_status st;
  if (q.device == FA_DEVICE_CPU) {
    nb::gil_scoped_release nogil;
    st = body();
  } else {
    st = body();
  }
  check(st);
  return need;
}

size_t torch_forward(nb::handle q, nb::handle k, nb::handle v, uintptr_t out, uintptr_t lse, FA_RAW_OPTION_PARAMS) {
  const fa_tensor tq = torch_tensor(q, "q"), tk = torch_tensor(k, "k"), tv = torch_tensor(v, "v");
  fa_tensor to = contiguous_like(tq, out);
  fa_tensor tl{};
  if (lse) {
    if (tq.rank != 4) raise(PyExc_ValueError, "q: expected rank 4, got " + std::to_string(tq.rank));
    tl = contiguous_like(tq, lse, FA_DTYPE_FLOAT32, {tq.shape[0], tq.shape[2], tq.shape[1]});
  }
  fa_options o = raw_options(FA_RAW_OPTION_ARGS);
  torch_exec(tq, &o);
  return run_raw(
      tq, o, [&](size_t* need) { return fa_forward_workspace_size(&tq, &tk, &tv, nullptr, &o, need); },
      [&] { return fa_forward(&tq, &tk, &tv, &to, lse ? &tl : nullptr, &o); });
}

size_t torch_backward(nb::handle q, nb::handle k, nb::handle v, nb::handle out, nb::handle lse, nb::handle dout,
                    uintptr_t dq, uintptr_t dk, uintptr_t dv, FA_RAW_OPTION_PARAMS) {
  const fa_tensor tq = torch_tensor(q, "q"), tk = torch_tensor(k, "k"), tv = torch_tensor(v, "v"),
                  to = torch_tensor(out, "out"), tl = torch_tensor(lse, "lse"), tdo = torch_tensor(dout, "dout");
  fa_tensor tdq = contiguous_like(tq, dq), tdk = contiguous_like(tk, dk), tdv = contiguous_like(tv, dv);
  fa_options o = raw_options(FA_RAW_OPTION_ARGS);
  torch_exec(tq, &o);
  return run_raw(
      tq, o, [&](size_t* need) { return fa_backward_workspace_size(&tq, &tk, &tv, nullptr, &o, need); },
      [&] { return fa_backward(&tq, &tk, &tv, &to, &tl, &tdo, &tdq, &tdk, &tdv, &o); });
}

size_t torch_varlen_forward(nb::handle q, nb::handle k, nb::handle v, nb::handle cu_seqlens_q, nb::handle cu_seqlens_k,
                          nb::handle seqused_k, int64_t max_seqlen_q, int64_t max_seqlen_k, uintptr_t out,
                          uintptr_t lse, FA_RAW_OPTION_PARAMS) {
  const fa_tensor tq = torch_tensor(q, "q"), tk = torch_tensor(k, "k"), tv = torch_tensor(v, "v");
  const RawVarlen vl(cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  fa_tensor to = contiguous_like(tq, out);
  fa_tensor tl{};
  if (lse) {
    if (tq.rank != 3) raise(PyExc_ValueError, "q: expected rank 3, got " + std::to_string(tq.rank));
    tl = contiguous_like(tq, lse, FA_DTYPE_FLOAT32, {tq.shape[1], tq.shape[0]});
  }
  fa_options o = raw_options(FA_RAW_OPTION_ARGS);
  torch_exec(tq, &o);
  return run_raw(
      tq, o, [&](size_t* need) { return fa_forward_workspace_size(&tq, &tk, &tv, &vl.vl, &o, need); },
      [&] { return fa_varlen_forward(&tq, &tk, &tv, &vl.vl, &to, lse ? &tl : nullptr, &o); });
}

size_t torch_varlen_backward(nb::handle q, nb::handle k, nb::handle v, nb::handle cu_seqlens_q,
                           nb::handle cu_seqlens_k, nb::handle seqused_k, int64_t max_seqlen_q,
                           int64_t max_seqlen_k, nb::handle out, nb::handle lse, nb::handle dout, uintptr_t dq,
                           uintptr_t dk, uintptr_t dv, FA_RAW_OPTION_PARAMS) {
  const fa_tensor tq = torch_tensor(q, "q"), tk = torch_tensor(k, "k"), tv = torch_tensor(v, "v"),
                  to = torch_tensor(out, "out"), tl = torch_tensor(lse, "lse"), tdo = torch_tensor(dout, "dout");
  const RawVarlen vl(cu_seqlens_q, cu_seqlens_k, seqused_k, max_seqlen_q, max_seqlen_k);
  fa_tensor tdq = contiguous_like(tq, dq), tdk = contiguous_like(tk, dk), tdv = contiguous_like(tv, dv);
  fa_options o = raw_options(FA_RAW_OPTION_ARGS);
  torch_exec(tq, &o);
  return run_raw(
      tq, o, [&](size_t* need) { return fa_backward_workspace_size(&tq, &tk, &tv, &vl.vl, &o, need); },
      [&] { return fa_varlen_backward(&tq, &tk, &tv, &vl.vl, &to, &tl, &tdo, &tdq, &tdk, &tdv, &o); });
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
  // outputs as pointers, options positional; returns the workspace bytes still needed (0: the
  // call ran).
  m.def("torch_setup", &torch_setup);
  m.def("torch_forward", &torch_forward);
  m.def("torch_backward", &torch_backward);
  m.def("torch_varlen_forward", &torch_varlen_forward);
  m.def("torch_varlen_backward", &torch_varlen_backward);

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
}
