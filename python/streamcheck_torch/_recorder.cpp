// The C++ recorder of streamcheck_torch (docs/CAPTURE.md, "PyTorch"): the
// same actions as the Python dispatch-mode recorder, seen from PyTorch's
// C++ hooks, so that a recording costs a tenth of CSAN's overhead or less
// (docs/PERFORMANCE.md, "Capture"). Built on first use by
// torch.utils.cpp_extension (stdlib + torch: no other dependency); when it
// cannot be built the Python recorder runs instead and the trace says so.
//
// - Ops: an at::RecordFunction callback, thread-local to the recording
//   thread (the autograd engine carries it into backward), with the op's
//   boxed inputs and outputs. It records each outermost op that is not a
//   composite (a composite's own ops are recorded instead), which is what a
//   TorchDispatchMode sees; the op's schema decides, once per op, which
//   arguments it reads and writes.
// - Streams, events, syncs and the caching allocator's blocks: the CUDA
//   trace callbacks (torch.cuda._gpu_trace) call this module's functions
//   directly, with no Python frame between.
//
// Everything goes to one buffer of 64-bit words under one mutex, in the
// order it happened; `take` turns it into the flat action list of
// writer.py when the recording ends.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <Python.h>  // first: Python's headers set feature macros the others must see
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// The buffer's record kinds. The first ones are writer.py's kinds, in the
// order `start` receives their names; the others are written as one of them.
enum Kind : std::uint64_t {
  kOp,                             // plan, stream (c10), file, line, count, count x kAccessWords
  kStream,                         // handle
  kEvent,                          // handle
  kEventGone,                      // handle
  kRecord,                         // event, stream handle
  kWait,                           // event, stream handle
  kSyncStream,                     // stream handle, file, line
  kSyncEvent,                      // event
  kSyncDevice,                     //
  kAlloc,                          // address, stream (c10)
  kFree,                           // address
  kRecordStream,                   // storage address, stream (c10), file, line
  kWriterKinds,                    // how many names `start` takes
  kSyncStreamOfOp = kWriterKinds,  // stream (c10), file, line: a blocking host copy
};

constexpr int kAccessWords = 5;  // storage address, storage bytes, data address, bytes, mode | contiguous << 2
constexpr std::uint64_t kRead = 1;
constexpr std::uint64_t kWrite = 2;

// What an op does, worked out from its schema the first time it runs.
struct Plan {
  enum class Role { kComposite, kNothing, kAccesses, kRecordStream };
  Role role = Role::kNothing;
  std::string name;  // aten.mul.out, as str(OpOverload) writes it
  struct Argument {
    std::size_t index;
    std::uint64_t mode;
  };
  std::vector<Argument> arguments;
  std::vector<bool> returns_written;
  bool host_copy = false;    // returns once done when it touches host memory
  bool scalar_read = false;  // .item(): always returns once done
  int non_blocking = -1;     // the argument that can make a host copy asynchronous
};

struct Recorder {
  std::mutex mutex;  // buffer, plans, plan_of
  std::vector<std::uint64_t> buffer;
  std::deque<Plan> plans;                                  // pointed to by ops in flight: never moved
  std::unordered_map<const char*, std::uint32_t> plan_of;  // schema name (its storage is the operator's)
  std::atomic<bool> active{false};
  std::atomic<std::uint64_t> ops_seen{0};  // op callbacks run while active: the hook is live
  std::atomic<std::uint64_t> failures{0};  // ops the recorder could not record
  std::string first_failure;               // under mutex
  std::string fail_op;                     // test hook: an op whose recording throws (empty: none)
  bool sites = true;
  at::CallbackHandle callback = at::INVALID_CALLBACK_HANDLE;
  unsigned long recording_thread = 0;
  // Under the GIL: the writer's kind names, whether a frame's file is
  // torch's or streamcheck_torch's (a Python callable: the Python
  // recorder's own rule), and the files seen (index 0: no site).
  PyObject* kind_names = nullptr;
  PyObject* library_file = nullptr;
  std::unordered_map<PyObject*, std::uint64_t> file_index;  // file name -> index, or 0: a library's
  std::vector<PyObject*> files{nullptr};
};

Recorder& recorder() {
  static Recorder* r = new Recorder();  // never destroyed: callbacks may run at exit
  return *r;
}

thread_local bool inside_recorded_op = false;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool holds_tensors(const c10::Argument& a) { return a.type()->str().find("Tensor") != std::string::npos; }

// Whether the op's CUDA calls run through its decomposition: a
// CompositeImplicitAutograd kernel and no kernel of its own for CUDA or for
// every backend (docs/CAPTURE.md: then its decomposition's ops are recorded).
bool composite(const c10::OperatorName& name) {
  auto op = c10::Dispatcher::singleton().findOp(name);
  if (!op) return false;
  using K = c10::DispatchKey;
  return op->hasKernelForDispatchKey(K::CompositeImplicitAutograd) && !op->hasKernelForDispatchKey(K::CUDA) &&
         !op->hasKernelForDispatchKey(K::AutogradCUDA) && !op->hasKernelForDispatchKey(K::CompositeExplicitAutograd) &&
         !op->hasKernelForDispatchKey(K::CompositeExplicitAutogradNonFunctional);
}

// The same rules as the Python recorder's plan_of (__init__.py).
Plan make_plan(const c10::FunctionSchema& schema) {
  static const char* const no_kernel[] = {"aten.empty", "aten.new_empty", "aten.empty_strided", "aten._unsafe_view",
                                          "aten.lift_fresh"};
  static const char* const host_copy[] = {"aten._to_copy", "aten.copy_", "aten._copy_from"};
  Plan plan;
  std::string name = schema.name();
  const auto colons = name.find("::");
  if (colons != std::string::npos) name.replace(colons, 2, ".");
  plan.name = name + "." + (schema.overload_name().empty() ? std::string("default") : schema.overload_name());
  if (plan.name == "aten.record_stream.default") {
    plan.role = Plan::Role::kRecordStream;
    return plan;
  }
  if (composite(schema.operator_name())) {
    plan.role = Plan::Role::kComposite;
    return plan;
  }
  for (const char* prefix : no_kernel) {
    if (starts_with(plan.name, prefix)) return plan;  // kNothing: no kernel reads its arguments either
  }
  const auto& arguments = schema.arguments();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const auto& a = arguments[i];
    if (a.name() == "non_blocking") plan.non_blocking = static_cast<int>(i);
    if (!holds_tensors(a)) continue;
    const auto* alias = a.alias_info();
    if (alias != nullptr && !alias->isWrite()) continue;  // a view of its input: no kernel touches it
    const std::uint64_t mode = alias == nullptr ? kRead : (a.name() == "out" ? kWrite : kRead | kWrite);
    plan.arguments.push_back({i, mode});
  }
  bool any_return = false;
  for (const auto& r : schema.returns()) {
    // A return with alias_info is a view, or the written input again.
    const bool written = r.alias_info() == nullptr && holds_tensors(r);
    plan.returns_written.push_back(written);
    any_return = any_return || written;
  }
  if (!any_return) plan.returns_written.clear();
  plan.scalar_read = starts_with(plan.name, "aten._local_scalar_dense");
  for (const char* prefix : host_copy) plan.host_copy = plan.host_copy || starts_with(plan.name, prefix);
  if (!plan.arguments.empty() || !plan.returns_written.empty()) plan.role = Plan::Role::kAccesses;
  return plan;
}

// The op's plan, made on first sight (an op's schema lives as long as the
// process: its name's address names it).
std::pair<const Plan*, std::uint32_t> plan_for(const at::RecordFunction& fn) {
  Recorder& r = recorder();
  const char* key = fn.name();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.plan_of.find(key);
    if (it != r.plan_of.end()) return {&r.plans[it->second], it->second};
  }
  auto schema = fn.operator_schema();  // a copy: once per op
  if (!schema) return {nullptr, 0};    // not an operator (a named range)
  Plan plan = make_plan(*schema);
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.plan_of.find(key);
  if (it != r.plan_of.end()) return {&r.plans[it->second], it->second};
  r.plans.push_back(std::move(plan));
  const auto index = static_cast<std::uint32_t>(r.plans.size() - 1);
  r.plan_of.emplace(key, index);
  return {&r.plans.back(), index};
}

std::uint64_t stream_word(c10::DeviceIndex device) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return impl->getStream(c10::Device(c10::DeviceType::CUDA, device)).hash();
}

// The file and line of the program's own frame that led here (the GIL
// held): the first frame outwards whose file library_file says is not a
// library's (asked once per file).
void append_site(std::vector<std::uint64_t>& words) {
  Recorder& r = recorder();
  std::uint64_t file = 0, line = 0;
  PyFrameObject* frame = r.sites ? PyThreadState_GetFrame(PyThreadState_Get()) : nullptr;
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    PyObject* name = code->co_filename;
    auto it = r.file_index.find(name);
    if (it == r.file_index.end()) {
      PyObject* answer = PyObject_CallOneArg(r.library_file, name);
      const int inside = answer == nullptr ? 1 : PyObject_IsTrue(answer);  // no answer: not a site to name
      Py_XDECREF(answer);
      if (PyErr_Occurred()) PyErr_Clear();
      Py_INCREF(name);  // kept: its address stays its own
      std::uint64_t index = 0;
      if (inside == 0) {
        index = r.files.size();
        r.files.push_back(name);
      }
      it = r.file_index.emplace(name, index).first;
    }
    Py_DECREF(code);
    if (it->second != 0) {
      file = it->second;
      line = static_cast<std::uint64_t>(PyFrame_GetLineNumber(frame));
      Py_DECREF(frame);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  words.push_back(file);
  words.push_back(line);
}

// The site from an op's callback, which may run without the GIL: taken for
// the while, on threads Python knows (the autograd engine's are not: no site).
void append_site_from_op(std::vector<std::uint64_t>& words) {
  if (!recorder().sites || !Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) {
    words.insert(words.end(), {0, 0});
    return;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  append_site(words);
  PyGILState_Release(gil);
}

void append(const std::uint64_t* words, std::size_t n) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.buffer.insert(r.buffer.end(), words, words + n);
}

// One op being recorded: what its start saw, finished by its end.
struct OpContext : at::ObserverContext {
  const Plan* plan = nullptr;
  std::vector<std::uint64_t> words;  // kOp's header, then accesses
  c10::DeviceIndex device = -1;
  bool on_host = false;
  bool non_blocking = false;
};

void add_tensor(OpContext& op, const at::Tensor& t, std::uint64_t mode) {
  if (!t.defined()) return;
  if (!t.is_cuda()) {
    op.on_host = true;
    return;
  }
  if (!t.has_storage()) return;
  if (op.device < 0) op.device = t.device().index();
  const auto& storage = t.storage();
  op.words.insert(op.words.end(), {reinterpret_cast<std::uint64_t>(storage.data()), storage.nbytes(),
                                   reinterpret_cast<std::uint64_t>(t.const_data_ptr()), t.nbytes(),
                                   mode | (t.is_contiguous() ? 4u : 0u)});
}

void add_value(OpContext& op, const c10::IValue& v, std::uint64_t mode) {
  if (v.isTensor()) {
    add_tensor(op, v.toTensor(), mode);
  } else if (v.isTensorList()) {
    const auto list = v.toTensorList();  // hands out proxies: get() makes each a Tensor
    for (std::size_t i = 0; i < list.size(); ++i) add_tensor(op, list.get(i), mode);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) {
      if (e.isTensor()) add_tensor(op, e.toTensor(), mode);
    }
  }
}

// An op the recorder could not record: the trace would miss it, so `take`
// refuses to hand out the recording (an op left out could hide a race).
void failed(const char* what) {
  Recorder& r = recorder();
  if (r.failures.fetch_add(1) == 0) {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.first_failure = what;
  }
}

std::unique_ptr<at::ObserverContext> op_start_recording(const at::RecordFunction& fn) {
  const auto [plan, plan_index] = plan_for(fn);
  if (plan == nullptr || plan->role == Plan::Role::kComposite) return nullptr;
  if (!recorder().fail_op.empty() && plan->name == recorder().fail_op) {
    throw std::runtime_error("the test hook failed " + plan->name + " (start's fail_op)");
  }
  inside_recorded_op = true;  // its own ops are its: not recorded again
  auto op = std::make_unique<OpContext>();
  op->plan = plan;
  const auto inputs = fn.inputs();
  if (plan->role == Plan::Role::kRecordStream) {
    if (inputs.size() >= 2 && inputs[0].isTensor() && inputs[1].isStream()) {
      const at::Tensor& t = inputs[0].toTensor();
      if (t.has_storage()) {
        op->words = {kRecordStream, reinterpret_cast<std::uint64_t>(t.storage().data()), inputs[1].toStream().hash()};
      }
    }
    return op;
  }
  if (plan->role != Plan::Role::kAccesses) return op;
  op->words = {kOp, plan_index, 0, 0, 0, 0};
  for (const auto& a : plan->arguments) {
    if (a.index < inputs.size()) add_value(*op, inputs[a.index], a.mode);
  }
  if (plan->non_blocking >= 0 && static_cast<std::size_t>(plan->non_blocking) < inputs.size() &&
      inputs[plan->non_blocking].isBool()) {
    op->non_blocking = inputs[plan->non_blocking].toBool();
  }
  return op;
}

std::unique_ptr<at::ObserverContext> op_start(const at::RecordFunction& fn) {
  if (inside_recorded_op || !recorder().active.load(std::memory_order_relaxed)) return nullptr;
  recorder().ops_seen.fetch_add(1, std::memory_order_relaxed);
  try {
    return op_start_recording(fn);
  } catch (const std::exception& e) {
    failed(e.what());
  } catch (...) {
    failed("an exception that is not a std::exception");
  }
  inside_recorded_op = false;  // no context: op_end will not run for it
  return nullptr;
}

void op_end_recording(const at::RecordFunction& fn, at::ObserverContext* context) {
  auto& op = *static_cast<OpContext*>(context);
  if (op.words.empty()) return;  // an op that runs no kernel
  if (op.words[0] == kRecordStream) {
    append_site_from_op(op.words);
    append(op.words.data(), op.words.size());
    return;
  }
  const Plan& plan = *op.plan;
  const auto& outputs = fn.outputs();
  for (std::size_t i = 0; i < plan.returns_written.size() && i < outputs.size(); ++i) {
    if (plan.returns_written[i]) add_value(op, outputs[i], kWrite);
  }
  const std::size_t count = (op.words.size() - 6) / kAccessWords;
  if (count == 0) return;  // no CUDA tensor
  const std::uint64_t stream = stream_word(op.device);
  std::vector<std::uint64_t> site;
  append_site_from_op(site);
  op.words[2] = stream;
  op.words[3] = site[0];
  op.words[4] = site[1];
  op.words[5] = count;
  if (((plan.host_copy && op.on_host) || plan.scalar_read) && !op.non_blocking) {
    // A copy to or from host memory (.cpu(), .item(), .to("cuda")): it
    // returns once the copy is done.
    op.words.insert(op.words.end(), {kSyncStreamOfOp, stream, site[0], site[1]});
  }
  append(op.words.data(), op.words.size());
}

void op_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context == nullptr) return;
  inside_recorded_op = false;
  try {
    op_end_recording(fn, context);
  } catch (const std::exception& e) {
    failed(e.what());
  } catch (...) {
    failed("an exception that is not a std::exception");
  }
}

// -- the module's functions ----------------------------------------------

bool unsigned_arguments(PyObject* const* args, Py_ssize_t n, Py_ssize_t expected, std::uint64_t* out) {
  if (n != expected) {
    PyErr_Format(PyExc_TypeError, "expected %zd arguments, got %zd", expected, n);
    return false;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    out[i] = PyLong_AsUnsignedLongLongMask(args[i]);
    if (out[i] == static_cast<std::uint64_t>(-1) && PyErr_Occurred()) return false;
  }
  return true;
}

// A CUDA trace callback that appends its kind and arguments as they are.
template <Kind kind, int fields>
PyObject* on_trace(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (!recorder().active.load(std::memory_order_relaxed)) Py_RETURN_NONE;
  std::uint64_t words[1 + fields + 1];
  words[0] = kind;
  if (!unsigned_arguments(args, n, fields, words + 1)) return nullptr;
  append(words, 1 + fields);
  Py_RETURN_NONE;
}

PyObject* on_sync_stream(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (!recorder().active.load(std::memory_order_relaxed)) Py_RETURN_NONE;
  std::uint64_t stream;
  if (!unsigned_arguments(args, n, 1, &stream)) return nullptr;
  std::vector<std::uint64_t> words{kSyncStream, stream};
  append_site(words);
  append(words.data(), words.size());
  Py_RETURN_NONE;
}

PyObject* on_alloc(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (!recorder().active.load(std::memory_order_relaxed)) Py_RETURN_NONE;
  std::uint64_t words[3] = {kAlloc, 0, 0};
  if (!unsigned_arguments(args, n, 1, words + 1)) return nullptr;
  words[2] = stream_word(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getDevice().index());
  append(words, 3);
  Py_RETURN_NONE;
}

// start(kind_names, library_file, sites, fail_op): records the calling
// thread's ops and the trace callbacks' actions until stop(). fail_op, a
// test hook, names an op whose recording fails ("": none).
PyObject* start(PyObject*, PyObject* const* args, Py_ssize_t n) {
  Recorder& r = recorder();
  if (n != 4 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != kWriterKinds || !PyCallable_Check(args[1]) ||
      !PyUnicode_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError,
                    "start(kind_names: tuple of 12 str, library_file: callable(str) -> bool, sites, fail_op: str)");
    return nullptr;
  }
  const char* fail_op = PyUnicode_AsUTF8(args[3]);
  if (fail_op == nullptr) return nullptr;
  if (r.active.load()) {
    PyErr_SetString(PyExc_RuntimeError, "the C++ recorder is already recording; recordings do not nest");
    return nullptr;
  }
  const int sites = PyObject_IsTrue(args[2]);
  if (sites < 0) return nullptr;
  Py_INCREF(args[0]);
  Py_XDECREF(r.kind_names);
  r.kind_names = args[0];
  Py_INCREF(args[1]);
  Py_XDECREF(r.library_file);
  r.library_file = args[1];
  // The answers were for the last recording's rule. One reference a file
  // name, held by file_index (files shares it).
  for (auto& [name, index] : r.file_index) Py_DECREF(name);
  r.file_index.clear();
  r.files.resize(1);
  r.sites = sites != 0;
  r.fail_op = fail_op;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.buffer.clear();
    r.first_failure.clear();
  }
  r.ops_seen = 0;
  r.failures = 0;
  r.recording_thread = PyThread_get_thread_ident();
  r.callback = at::addThreadLocalCallback(at::RecordFunctionCallback(op_start, op_end)
                                              .needsInputs(true)
                                              .needsOutputs(true)
                                              .scopes({at::RecordScope::FUNCTION}));
  r.active.store(true);
  Py_RETURN_NONE;
}

PyObject* stop(PyObject*, PyObject* const*, Py_ssize_t) {
  Recorder& r = recorder();
  if (!r.active.load()) Py_RETURN_NONE;
  if (PyThread_get_thread_ident() != r.recording_thread) {
    PyErr_SetString(PyExc_RuntimeError, "the C++ recorder must be stopped on the thread that started it");
    return nullptr;
  }
  r.active.store(false);
  at::removeCallback(r.callback);
  r.callback = at::INVALID_CALLBACK_HANDLE;
  Py_RETURN_NONE;
}

// take(raw_stream): the recorded actions as writer.py's flat list, c10
// streams turned into CUDA stream handles by raw_stream(id, device index,
// device type), once per stream; the buffer emptied.
PyObject* take(PyObject*, PyObject* const* args, Py_ssize_t n) {
  Recorder& r = recorder();
  if (n != 1 || r.kind_names == nullptr) {
    PyErr_SetString(PyExc_TypeError, "take(raw_stream) after start()");
    return nullptr;
  }
  // Held throughout: the plans may grow on a thread still finishing an op.
  // Nothing below takes it again: the callbacks see `active` false first.
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::uint64_t> buffer;
  buffer.swap(r.buffer);
  if (r.failures.load() != 0) {
    PyErr_Format(PyExc_RuntimeError,
                 "streamcheck_torch: the C++ recorder could not record %llu ops (the first: %s), so its trace "
                 "would miss them; no trace written. record(..., recorder=\"python\") records without it",
                 static_cast<unsigned long long>(r.failures.load()), r.first_failure.c_str());
    return nullptr;
  }
  std::unordered_map<std::uint64_t, PyObject*> handles;  // c10 stream word -> handle (owned)
  PyObject* out = PyList_New(0);
  bool ok = out != nullptr;
  auto put = [&](PyObject* item) {  // steals item
    if (!ok || item == nullptr || PyList_Append(out, item) < 0) ok = false;
    Py_XDECREF(item);
  };
  auto put_u = [&](std::uint64_t v) { put(PyLong_FromUnsignedLongLong(v)); };
  auto put_kind = [&](std::uint64_t k) {
    PyObject* name = PyTuple_GET_ITEM(r.kind_names, k);
    Py_INCREF(name);
    put(name);
  };
  auto put_stream = [&](std::uint64_t word) {
    auto it = handles.find(word);
    if (it == handles.end()) {
      // Stream::hash(): type << 56 | index << 48 | the id's low 48 bits.
      std::int64_t id = static_cast<std::int64_t>(word << 16) >> 16;
      PyObject* handle =
          PyObject_CallFunction(args[0], "Lii", static_cast<long long>(id),
                                static_cast<int>(static_cast<std::int8_t>(word >> 48)), static_cast<int>(word >> 56));
      if (handle == nullptr) {
        ok = false;
        return;
      }
      it = handles.emplace(word, handle).first;
    }
    Py_INCREF(it->second);
    put(it->second);
  };
  auto put_site = [&](std::uint64_t file, std::uint64_t line) {
    if (file == 0) {
      Py_INCREF(Py_None);
      put(Py_None);
    } else {
      Py_INCREF(r.files[file]);
      put(r.files[file]);
    }
    put_u(line);
  };
  std::size_t i = 0;
  while (ok && i < buffer.size()) {
    const std::uint64_t* w = buffer.data() + i;
    switch (w[0]) {
      case kOp: {
        put_kind(kOp);
        put(PyUnicode_FromString(r.plans[w[1]].name.c_str()));
        put_stream(w[2]);
        put_site(w[3], w[4]);
        put_u(w[5]);
        for (std::uint64_t a = 0; a < w[5]; ++a) {
          const std::uint64_t* access = w + 6 + a * kAccessWords;
          for (int f = 0; f < 4; ++f) put_u(access[f]);
          put_u(access[4] & 3);
          put(PyBool_FromLong((access[4] & 4) != 0));
        }
        i += 6 + w[5] * kAccessWords;
        break;
      }
      case kSyncStreamOfOp:
        put_kind(kSyncStream);
        put_stream(w[1]);
        put_site(w[2], w[3]);
        i += 4;
        break;
      case kSyncStream:
        put_kind(kSyncStream);
        put_u(w[1]);
        put_site(w[2], w[3]);
        i += 4;
        break;
      case kRecordStream:
        put_kind(kRecordStream);
        put_u(w[1]);
        put_stream(w[2]);
        put_site(w[3], w[4]);
        i += 5;
        break;
      case kAlloc:
        put_kind(kAlloc);
        put_u(w[1]);
        put_stream(w[2]);
        i += 3;
        break;
      case kSyncDevice:
        put_kind(kSyncDevice);
        i += 1;
        break;
      case kRecord:
      case kWait:
        put_kind(w[0]);
        put_u(w[1]);
        put_u(w[2]);
        i += 3;
        break;
      case kStream:
      case kEvent:
      case kEventGone:
      case kSyncEvent:
      case kFree:
        put_kind(w[0]);
        put_u(w[1]);
        i += 2;
        break;
      default:
        PyErr_Format(PyExc_RuntimeError, "streamcheck_torch C++ recorder: unknown record %llu at word %zu",
                     static_cast<unsigned long long>(w[0]), i);
        ok = false;
    }
  }
  for (auto& [word, handle] : handles) Py_DECREF(handle);
  if (!ok) {
    Py_XDECREF(out);
    return nullptr;
  }
  return out;
}

// ops_seen(): how many op callbacks ran in this recording (the hook is live).
PyObject* ops_seen(PyObject*, PyObject* const*, Py_ssize_t) {
  return PyLong_FromUnsignedLongLong(recorder().ops_seen.load());
}

// A function Python calls: a C++ exception (a c10::Error from a device
// query, std::bad_alloc) becomes a Python RuntimeError rather than ending
// the process; during a recording it is also a failure `take` reports (the
// trace callbacks' caller only logs an error, and the action would be lost).
template <PyObject* (*F)(PyObject*, PyObject* const*, Py_ssize_t)>
PyObject* guarded(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  try {
    return F(self, args, n);
  } catch (const std::exception& e) {
    if (recorder().active.load()) failed(e.what());
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

#define STREAMCHECK_METHOD(name, function) \
  { name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(guarded<function>)), METH_FASTCALL, nullptr }

PyMethodDef methods[] = {
    STREAMCHECK_METHOD("ops_seen", ops_seen),
    STREAMCHECK_METHOD("start", start),
    STREAMCHECK_METHOD("stop", stop),
    STREAMCHECK_METHOD("take", take),
    STREAMCHECK_METHOD("on_stream", (on_trace<kStream, 1>)),
    STREAMCHECK_METHOD("on_event", (on_trace<kEvent, 1>)),
    STREAMCHECK_METHOD("on_event_gone", (on_trace<kEventGone, 1>)),
    STREAMCHECK_METHOD("on_record", (on_trace<kRecord, 2>)),
    STREAMCHECK_METHOD("on_wait", (on_trace<kWait, 2>)),
    STREAMCHECK_METHOD("on_sync_event", (on_trace<kSyncEvent, 1>)),
    STREAMCHECK_METHOD("on_sync_device", (on_trace<kSyncDevice, 0>)),
    STREAMCHECK_METHOD("on_free", (on_trace<kFree, 1>)),
    STREAMCHECK_METHOD("on_sync_stream", on_sync_stream),
    STREAMCHECK_METHOD("on_alloc", on_alloc),
    {nullptr, nullptr, 0, nullptr},
};
#undef STREAMCHECK_METHOD

#define STREAMCHECK_STRING_(x) #x
#define STREAMCHECK_STRING(x) STREAMCHECK_STRING_(x)
PyModuleDef module = {PyModuleDef_HEAD_INIT,
                      STREAMCHECK_STRING(TORCH_EXTENSION_NAME),
                      "streamcheck_torch's C++ recorder",
                      -1,
                      methods,
                      nullptr,
                      nullptr,
                      nullptr,
                      nullptr};

}  // namespace

#define STREAMCHECK_CONCAT_(a, b) a##b
#define STREAMCHECK_CONCAT(a, b) STREAMCHECK_CONCAT_(a, b)
PyMODINIT_FUNC STREAMCHECK_CONCAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&module); }
