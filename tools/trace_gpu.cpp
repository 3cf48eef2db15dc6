#include "tools/trace_gpu.h"

#ifdef STREAMCHECK_WITH_CUDA

#include <limits>
#include <map>
#include <set>

#include "backend_cuda/cuda_backend.h"
#include "model/budget_resource.h"
#include "model/launch_recorder.h"
#include "model/resource.h"

namespace streamcheck::tools {

namespace {

using cuda::CudaBackend;

/// Runs the statements of a trace on a CudaBackend, in file order. Stream
/// creation order (a hidden "legacy" stream first, then the trace's) and op
/// numbering per stream are the simulator's, so delays name the same ops.
struct GpuInterpreter {
  const Trace& trace;
  CudaBackend& b;
  std::map<std::string, StreamId> streams;
  std::map<std::string, CudaBackend::Event> events;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> buffers;  // ptr, bytes
  std::map<std::string, DeviceBlock> blocks;
  std::vector<std::string> notes;
  UnallocatedBuffers unallocated;
  StreamId legacy{};

  cuda::StreamRef ref(const std::string& s) { return *b.resolve_stream(streams.at(s)); }
  void note(const Statement& st, const std::string& what, const Status& s) {
    if (!s) notes.push_back("line " + std::to_string(st.line) + ": " + what + ": " + s.error().to_string());
  }
  std::vector<KernelAccess> accesses(const Statement& st) {
    std::vector<KernelAccess> out;
    for (const auto& list : st.accesses)
      for (const auto& r : list.refs) {
        const auto& [ptr, bytes] = buffers.at(r.buffer);
        out.push_back(KernelAccess{ptr + r.lo, (r.hi ? *r.hi : bytes) - r.lo, list.access, std::nullopt});
      }
    return out;
  }

  template <class P, class R>
  void statement(const Statement& st, R* res) {
    if (auto why = unallocated.skip(st)) {
      notes.push_back("line " + std::to_string(st.line) + ": " + *why);
      return;
    }
    switch (st.kind) {
      case StmtKind::Stream:
        streams[st.name] = b.add_stream(st.name);
        break;
      case StmtKind::Event: {
        auto e = b.create_event();
        if (!e) throw std::runtime_error(e.error().to_string());
        events.emplace(st.name, std::move(e).value());
        break;
      }
      case StmtKind::Thread:
      case StmtKind::Policy:
      case StmtKind::Resource:
        break;
      case StmtKind::Buffer: {
        const bool plain = st.stream.empty();
        auto p = b.alloc_async(st.bytes, plain ? *b.resolve_stream(legacy) : ref(st.stream));
        if (!p) {
          note(st, "allocation", p.error());
          unallocated.failed(st.name, "line " + std::to_string(st.line) + ": allocation failed");
          break;
        }
        unallocated.made(st.name);
        buffers[st.name] = {p.value(), st.bytes};
        if (plain) note(st, "synchronize", b.synchronize_device());
        break;
      }
      case StmtKind::Free: {
        const bool plain = st.stream.empty();
        if (plain) note(st, "synchronize", b.synchronize_device());
        note(st, "free", b.free_async(buffers.at(st.name).first, plain ? *b.resolve_stream(legacy) : ref(st.stream)));
        if (plain) note(st, "synchronize", b.synchronize_device());
        break;
      }
      case StmtKind::Launch:
      case StmtKind::Copy:
        b.launch(ref(st.stream), accesses(st), st.name);
        break;
      case StmtKind::Record:
        note(st, "record", b.record_event(events.at(st.name), ref(st.stream)));
        break;
      case StmtKind::Wait:
        note(st, "wait", b.wait_event(ref(st.stream), events.at(st.name)));
        break;
      case StmtKind::SyncStream:
        note(st, "synchronize", b.synchronize_stream(ref(st.stream)));
        break;
      case StmtKind::SyncEvent:
        note(st, "synchronize", b.synchronize_event(events.at(st.name)));
        break;
      case StmtKind::SyncDevice:
        note(st, "synchronize", b.synchronize_device());
        break;
      case StmtKind::Query:
        (void)b.query_event(events.at(st.name));
        break;
      case StmtKind::Allocate: {
        auto r = res->allocate(st.bytes, streams.at(st.stream), AllocTag{});
        if (!r) {
          note(st, "allocate refused", r.error());
          unallocated.failed(st.name, "line " + std::to_string(st.line) + ": allocate refused");
          blocks.erase(st.name);
          break;
        }
        unallocated.made(st.name);
        blocks[st.name] = r.value();
        buffers[st.name] = {r.value().ptr, st.bytes};
        break;
      }
      case StmtKind::Deallocate:
        if (blocks.contains(st.name)) note(st, "deallocate refused", res->deallocate(blocks.at(st.name)));
        break;
      case StmtKind::Prepare:
      case StmtKind::Finish:
        if (!blocks.contains(st.name)) break;
        note(st, "prepare/finish refused",
             st.kind == StmtKind::Prepare
                 ? res->prepare_block_use(BlockId::of(blocks.at(st.name)), streams.at(st.stream), st.access)
                 : res->finish_block_use(BlockId::of(blocks.at(st.name)), streams.at(st.stream), st.access));
        break;
      case StmtKind::Reap:
        note(st, "reap refused", res->reap_pending());
        break;
      case StmtKind::Run: {
        LaunchRecorder<P> rec(streams.at(st.stream), RecorderMode::Strict);
        for (const auto& list : st.accesses)
          for (const auto& r : list.refs)
            rec.use(blocks.contains(r.buffer) ? &blocks.at(r.buffer) : nullptr, list.access);
        if (auto s = rec.preflight(*res); !s) {
          note(st, "preflight refused", s);
          break;
        }
        b.launch(ref(st.stream), accesses(st), st.name);
        if (auto s = rec.commit(*res); !s) {
          note(st, "commit refused", s);
          rec.abandon();  // reported as a note; the destructor need not print it again
        }
        break;
      }
    }
  }

  template <class P>
  void run_all() {
    legacy = b.add_stream("legacy");
    std::unique_ptr<Resource<CudaBackend, P>> res;
    std::unique_ptr<BudgetResource<Resource<CudaBackend, P>>> budget;
    if (trace.uses_resource) {
      res = std::make_unique<Resource<CudaBackend, P>>(b);
      if (trace.budget) budget = std::make_unique<BudgetResource<Resource<CudaBackend, P>>>(*res, *trace.budget);
    }
    for (const auto& st : trace.statements) {
      if (budget)
        statement<P>(st, budget.get());
      else
        statement<P>(st, res.get());
    }
    b.drain();
    events.clear();
  }
};

}  // namespace

GpuReplayResult replay_trace_on_gpu(const Trace& trace, const Report& sim_report, const TraceCheckOptions& o,
                                    std::uint32_t runs, std::uint64_t delay_ns) {
  GpuReplayResult out;
  std::string why;
  if (!cuda::Driver::get(&why)) {
    out.why = why;
    return out;
  }
  out.available = true;
  std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
  for (const auto& f : sim_report.findings)
    if (f.severity == Severity::Error) delays.insert({f.first.ref.stream.value, f.first.ref.index});
  for (std::uint32_t k = 0; k < runs; ++k) {
    cuda::CudaBackendOptions bo;
    bo.policy = apply_policy_overrides(trace.policy, o.policy_overrides);
    // Keep freed memory mapped: a use after free then reads stale data we
    // can count, instead of faulting and ending the CUDA context.
    bo.policy.release_threshold = std::numeric_limits<std::uint64_t>::max();
    auto backend = CudaBackend::create(bo);
    if (!backend) throw std::runtime_error("creating the CUDA backend failed: " + backend.error().to_string());
    if (out.device.empty()) out.device = backend.value()->device_description();
    backend.value()->force_delays(delays, delay_ns);
    GpuInterpreter in{trace, *backend.value(), {}, {}, {}, {}, {}, {}, {}};
    with_protocol(trace.mutant, [&]<class P>() { in.run_all<P>(); });
    ++out.runs;
    const std::uint64_t m = backend.value()->mismatches_total();
    out.mismatching_words += m;
    if (m > 0) ++out.runs_with_mismatches;
    if (k == 0) out.notes = in.notes;
  }
  return out;
}

}  // namespace streamcheck::tools

#else

namespace streamcheck::tools {

GpuReplayResult replay_trace_on_gpu(const Trace&, const Report&, const TraceCheckOptions&, std::uint32_t,
                                    std::uint64_t) {
  GpuReplayResult out;
  out.why = "this streamcheck was built without the CUDA Toolkit (backend_cuda/ not built)";
  return out;
}

}  // namespace streamcheck::tools

#endif
