#include "backend_cuda/handles.h"

#include <iostream>
#include <map>
#include <mutex>

namespace streamcheck::cuda {

namespace {
ResourceError null_stream(const char* call) {
  return ResourceError::stream_misuse(std::string(call) +
                                      ": null stream rejected before any driver call; the legacy default stream is "
                                      "not supported, create a stream (cuda::Stream) instead");
}
ResourceError null_event(const char* call) {
  return ResourceError::stream_misuse(std::string(call) +
                                      ": null event rejected before any driver call; create an event first");
}
void report_drop_failure(const char* what, CUresult r) {
  std::cerr << "streamcheck: " << what << " failed while dropping a handle: " << driver().describe(r)
            << "; synchronize pending work before dropping it\n";
}
}  // namespace

Status record_event(CUevent event, CUstream stream) {
  if (!event) return null_event("cuEventRecord");
  if (!stream) return null_stream("cuEventRecord");
  return driver().check(driver().api().event_record(event, stream), "cuEventRecord");
}

Status wait_event(CUstream stream, CUevent event) {
  if (!stream) return null_stream("cuStreamWaitEvent");
  if (!event) return null_event("cuStreamWaitEvent");
  return driver().check(driver().api().stream_wait_event(stream, event, CU_EVENT_WAIT_DEFAULT), "cuStreamWaitEvent");
}

Status synchronize_stream(CUstream stream) {
  if (!stream) return null_stream("cuStreamSynchronize");
  return driver().check(driver().api().stream_synchronize(stream), "cuStreamSynchronize");
}

Status synchronize_event(CUevent event) {
  if (!event) return null_event("cuEventSynchronize");
  return driver().check(driver().api().event_synchronize(event), "cuEventSynchronize");
}

Result<bool> query_event(CUevent event) {
  if (!event) return null_event("cuEventQuery");
  const CUresult r = driver().api().event_query(event);
  if (r == CUDA_SUCCESS) return true;
  if (r == CUDA_ERROR_NOT_READY) return false;
  return driver().check(r, "cuEventQuery").error();
}

Result<bool> query_stream(CUstream stream) {
  if (!stream) return null_stream("cuStreamQuery");
  const CUresult r = driver().api().stream_query(stream);
  if (r == CUDA_SUCCESS) return true;
  if (r == CUDA_ERROR_NOT_READY) return false;
  return driver().check(r, "cuStreamQuery").error();
}

Result<Context> Context::primary(int ordinal) {
  std::string why;
  const Driver* d = Driver::get(&why);
  if (!d) return ResourceError::driver(why);
  CUdevice device{};
  if (auto st = d->check(d->api().device_get(&device, ordinal), "cuDeviceGet"); !st) return st.error();
  // The first retain creates the primary context (~100 ms) and the last
  // release destroys it; one process-lifetime retain per device keeps
  // creating and dropping backends cheap. Never released: the driver
  // cleans up at process exit.
  {
    static std::mutex keepalive_mutex;
    static std::map<int, CUcontext> keepalive;
    std::lock_guard lock(keepalive_mutex);
    if (!keepalive.contains(ordinal)) {
      CUcontext held = nullptr;
      if (auto st = d->check(d->api().primary_ctx_retain(&held, device), "cuDevicePrimaryCtxRetain"); !st)
        return st.error();
      keepalive[ordinal] = held;
    }
  }
  CUcontext ctx = nullptr;
  if (auto st = d->check(d->api().primary_ctx_retain(&ctx, device), "cuDevicePrimaryCtxRetain"); !st) return st.error();
  Context owner(ctx, device, ordinal);
  if (auto st = owner.make_current(); !st) return st.error();
  return owner;
}

Status Context::make_current() const { return driver().check(driver().api().ctx_set_current(ctx_), "cuCtxSetCurrent"); }

Result<Context::OnThisThread> Context::current_on_this_thread() const {
  CUcontext now = nullptr;
  if (auto st = driver().check(driver().api().ctx_get_current(&now), "cuCtxGetCurrent"); !st) return st.error();
  if (now == ctx_) return OnThisThread(false);
  if (auto st = driver().check(driver().api().ctx_push_current(ctx_), "cuCtxPushCurrent"); !st) return st.error();
  return OnThisThread(true);
}

Context::OnThisThread::~OnThisThread() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  if (CUresult r = driver().api().ctx_pop_current(&popped); r != CUDA_SUCCESS)
    report_drop_failure("cuCtxPopCurrent", r);
}

Context::~Context() {
  if (!ctx_) return;
  if (CUresult r = driver().api().primary_ctx_release(device_); r != CUDA_SUCCESS)
    report_drop_failure("cuDevicePrimaryCtxRelease", r);
}

Result<Stream> Stream::create(bool blocking) {
  CUstream s = nullptr;
  const unsigned flags = blocking ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING;
  if (auto st = driver().check(driver().api().stream_create(&s, flags), "cuStreamCreate"); !st) return st.error();
  return Stream(s);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    reset();
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

void Stream::reset() {
  if (!s_) return;
  if (CUresult r = driver().api().stream_destroy(s_); r != CUDA_SUCCESS) report_drop_failure("cuStreamDestroy", r);
  s_ = nullptr;
}

Stream::~Stream() { reset(); }

Result<Event> Event::create() {
  CUevent e = nullptr;
  if (auto st = driver().check(driver().api().event_create(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate"); !st)
    return st.error();
  return Event(e);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    reset();
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}

void Event::reset() {
  if (!e_) return;
  if (CUresult r = driver().api().event_destroy(e_); r != CUDA_SUCCESS) report_drop_failure("cuEventDestroy", r);
  e_ = nullptr;
}

Event::~Event() { reset(); }

}  // namespace streamcheck::cuda
