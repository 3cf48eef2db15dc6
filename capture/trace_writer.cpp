#include "capture/trace_writer.h"

#include <algorithm>
#include <utility>

#include "model/trace_keywords.h"

namespace streamcheck::capture {

namespace {

// CUDA's special stream handles (driver_types.h): 0 is the default stream,
// cudaStreamLegacy and cudaStreamPerThread name the two defaults explicitly.
constexpr Handle kStreamLegacy = 1;
constexpr Handle kStreamPerThread = 2;
constexpr std::size_t kMaxKernelName = 64;

std::string numbered(char prefix, std::uint64_t n) { return prefix + std::to_string(n); }

std::string_view access_word(Access a) {
  switch (a) {
    case Access::Reads:
      return trace_language::word::kReads;
    case Access::Writes:
      return trace_language::word::kWrites;
    default:
      return trace_language::word::kReadWrites;
  }
}

Access merged(Access a, Access b) {
  if (a == Access::None) return b;
  if (b == Access::None || a == b) return a;
  return Access::ReadWrites;
}

}  // namespace

std::size_t parameter_list_start(std::string_view signature) {
  // The parameter list is the last parenthesized group: "(anonymous
  // namespace)::k(int*)" has another one before it.
  if (signature.empty() || signature.back() != ')') return std::string_view::npos;
  int depth = 0;
  for (std::size_t i = signature.size(); i-- > 0;) {
    if (signature[i] == ')') ++depth;
    if (signature[i] == '(' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

std::string_view kernel_name_of(std::string_view signature) {
  std::string_view head = signature.substr(0, std::min(parameter_list_start(signature), signature.size()));
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  // A function template's demangled name starts with its return type: keep
  // what follows the last space outside brackets.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '<' || head[i] == '(') ++depth;
    if (head[i] == '>' || head[i] == ')') --depth;
    if (head[i] == ' ' && depth == 0) start = i + 1;
  }
  return head.substr(start);
}

std::string kernel_trace_name(std::string_view signature) {
  const std::string_view head = kernel_name_of(signature);
  std::string name;
  for (std::size_t i = 0; i < head.size() && name.size() < kMaxKernelName; ++i) {
    const char c = head[i];
    if (c == ':' && i + 1 < head.size() && head[i + 1] == ':') {
      name += '.';
      ++i;
    } else if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
               c == '-') {
      name += c;
    } else if (!name.empty() && name.back() != '_') {
      name += '_';
    }
  }
  while (!name.empty() && name.back() == '_' && name.size() > 1) name.pop_back();
  if (name.empty() || !((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
    name = "k_" + name;
  if (trace_language::is_keyword(name)) name = "k_" + name;
  return name;
}

TraceWriter::TraceWriter(ThreadId main_thread) : main_thread_(main_thread) {
  threads_[main_thread] = ThreadState{"main", 0, 0};
  thread_names_.push_back("main");
}

TraceWriter::ThreadState& TraceWriter::thread_state(ThreadId thread) {
  auto it = threads_.find(thread);
  if (it != threads_.end()) return it->second;
  // A thread the capture has not seen: it starts here, as far as the trace
  // knows (spawned by main when it first calls CUDA).
  std::string name = "t" + std::to_string(thread_names_.size());
  body_ += "spawn " + name + "  # first CUDA call of another host thread\n";
  ++statement_count_;
  const auto index = static_cast<std::uint32_t>(thread_names_.size());
  thread_names_.push_back(name);
  return threads_.emplace(thread, ThreadState{std::move(name), 0, index}).first->second;
}

void TraceWriter::emit(ThreadId thread, const std::string& statement, const CallSite& site, std::string_view detail) {
  const ThreadState& state = thread_state(thread);
  if (thread != main_thread_) {
    body_ += '@';
    body_ += state.name;
    body_ += ' ';
  }
  body_ += statement;
  body_ += "  # ";
  body_ += site.api;
  if (!detail.empty()) {
    body_ += ": ";
    body_ += detail;
  }
  if (!site.where.empty()) {
    body_ += " at ";
    body_ += site.where;
  }
  body_ += '\n';
  ++statement_count_;
}

void TraceWriter::hand_off(ThreadId thread, const std::string& object) {
  if (object == per_thread_) return;  // each thread's own stream
  const ThreadState& me = thread_state(thread);
  auto [it, inserted] = last_user_.try_emplace(object, me.index);
  if (inserted || it->second == me.index) return;
  // Another thread used this object last: the program ordered the two host
  // threads somehow (a mutex, a queue, a join) that the capture did not see.
  // Order them as they were observed, no more.
  const std::string channel = "h" + std::to_string(channels_.size() + 1);
  channels_.push_back(channel);
  const std::string& before = thread_names_[it->second];
  const std::string sender = it->second == 0 ? "" : "@" + before + " ";
  const std::string receiver = me.index == 0 ? "" : "@" + me.name + " ";
  body_ += sender + "send " + channel + "  # " + before + " used " + object + " before " + me.name + " did\n";
  body_ += receiver + "receive " + channel + "\n";
  statement_count_ += 2;
  it->second = me.index;
}

const std::string& TraceWriter::stream_name(ThreadId thread, StreamArg stream) {
  if (stream.handle == 0) return stream.per_thread_default ? per_thread_ : legacy_;
  if (stream.handle == kStreamLegacy) return legacy_;
  if (stream.handle == kStreamPerThread) return per_thread_;
  auto it = streams_.find(stream.handle);
  if (it != streams_.end()) return it->second;
  // A stream made where the capture could not see it (before it was loaded,
  // or by a library through an API it does not follow): declared here.
  note("a stream made outside the capture, declared where first used (taken as blocking)");
  std::string name = numbered('s', ++streams_made_);
  stream_devices_[name] = thread_state(thread).device;
  emit(thread, "stream " + name, CallSite{"(stream first seen here)", {}});
  return streams_[stream.handle] = std::move(name);
}

const std::string* TraceWriter::event_name(Handle event) const {
  auto it = events_.find(event);
  return it == events_.end() ? nullptr : &it->second;
}

int TraceWriter::device_of(ThreadId thread, const std::string& stream) {
  auto it = stream_devices_.find(stream);
  return it == stream_devices_.end() ? thread_state(thread).device : it->second;
}

std::optional<TraceWriter::Place> TraceWriter::place_of(Handle address) const {
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return std::nullopt;
  --it;
  if (address - it->first >= it->second.bytes) return std::nullopt;
  return Place{&it->second, address - it->first};
}

std::string TraceWriter::ref(const Place& place, std::uint64_t bytes) {
  if (place.offset == 0 && bytes == place.allocation->bytes) return place.allocation->name;
  return place.allocation->name + "[" + std::to_string(place.offset) + ":" + std::to_string(place.offset + bytes) + "]";
}

void TraceWriter::set_device(ThreadId thread, int device, const CallSite& site) {
  ThreadState& state = thread_state(thread);
  if (state.device == device) return;
  state.device = device;
  emit(thread, "device " + std::to_string(device), site);
}

void TraceWriter::stream_created(ThreadId thread, Handle stream, bool nonblocking, const CallSite& site) {
  std::string name = numbered('s', ++streams_made_);
  std::string statement = "stream " + name;
  if (nonblocking) statement += " nonblocking";
  // R9c: the runtime gives a destroyed stream's handle to the next stream.
  if (auto old = destroyed_.find(stream); old != destroyed_.end()) {
    statement += " handle " + old->second;
    destroyed_.erase(old);
  }
  streams_[stream] = name;
  stream_devices_[name] = thread_state(thread).device;
  emit(thread, statement, site);
  last_user_[name] = thread_state(thread).index;
}

void TraceWriter::stream_destroyed(ThreadId thread, Handle stream, const CallSite& site) {
  auto it = streams_.find(stream);
  if (it == streams_.end()) {
    note("cudaStreamDestroy of a stream the capture did not see made: left out");
    return;
  }
  hand_off(thread, it->second);
  emit(thread, "destroy stream " + it->second, site);
  destroyed_[stream] = it->second;
  streams_.erase(it);
}

void TraceWriter::event_created(ThreadId thread, Handle event, const CallSite& site) {
  std::string name = numbered('e', ++events_made_);
  events_[event] = name;
  emit(thread, "event " + name, site);
  last_user_[name] = thread_state(thread).index;
}

void TraceWriter::event_destroyed(ThreadId thread, Handle event, const CallSite& site) {
  auto it = events_.find(event);
  if (it == events_.end()) {
    note("cudaEventDestroy of an event the capture did not see made: left out");
    return;
  }
  hand_off(thread, it->second);
  emit(thread, "destroy event " + it->second, site);
  events_.erase(it);
}

void TraceWriter::record(ThreadId thread, Handle event, StreamArg stream, const CallSite& site) {
  const std::string* e = event_name(event);
  if (e == nullptr) {
    // An event made outside the capture: declared where first recorded.
    note("an event made outside the capture, declared where first recorded");
    event_created(thread, event, CallSite{"(event first seen here)", {}});
    e = event_name(event);
  }
  const std::string& s = stream_name(thread, stream);
  hand_off(thread, *e);
  hand_off(thread, s);
  line_.assign("record ").append(*e).append(" on ").append(s);
  emit(thread, line_, site);
}

void TraceWriter::wait(ThreadId thread, StreamArg stream, Handle event, const CallSite& site) {
  const std::string* e = event_name(event);
  if (e == nullptr) {
    note("cudaStreamWaitEvent on an event never made or recorded in the capture: orders nothing, left out");
    return;
  }
  const std::string& s = stream_name(thread, stream);
  hand_off(thread, *e);
  hand_off(thread, s);
  line_.assign("wait ").append(*e).append(" on ").append(s);
  emit(thread, line_, site);
}

void TraceWriter::sync_stream(ThreadId thread, StreamArg stream, const CallSite& site) {
  const std::string& s = stream_name(thread, stream);
  hand_off(thread, s);
  emit(thread, "sync stream " + s, site);
}

void TraceWriter::sync_event(ThreadId thread, Handle event, const CallSite& site) {
  const std::string* e = event_name(event);
  if (e == nullptr) {
    note("cudaEventSynchronize of an event the capture did not see made: left out");
    return;
  }
  hand_off(thread, *e);
  emit(thread, "sync event " + *e, site);
}

void TraceWriter::sync_device(ThreadId thread, const CallSite& site) { emit(thread, "sync device", site); }

void TraceWriter::query_done(ThreadId thread, std::optional<StreamArg> stream, std::optional<Handle> event,
                             const CallSite& site) {
  note("a query that answered done is captured as a sync (the program's path for 'not done' was not run)");
  if (stream) sync_stream(thread, *stream, site);
  if (event) sync_event(thread, *event, site);
}

void TraceWriter::device_alloc(ThreadId thread, Handle address, std::uint64_t bytes, std::optional<StreamArg> stream,
                               const CallSite& site) {
  if (bytes == 0 || address == 0) return;
  auto [name, number] = buffer_name(thread, Memory::Device, 'd');
  std::string statement = "buffer " + name + " " + std::to_string(bytes);
  if (stream) {
    const std::string& s = stream_name(thread, *stream);
    hand_off(thread, s);
    statement += " on " + s;
  }
  allocations_[address] = Allocation{name, bytes, Memory::Device, thread_state(thread).device, number};
  last_user_[name] = thread_state(thread).index;
  emit(thread, statement, site);
}

void TraceWriter::host_alloc(ThreadId thread, Handle address, std::uint64_t bytes, const CallSite& site) {
  if (bytes == 0 || address == 0) return;
  auto [name, number] = buffer_name(thread, Memory::Pinned, 'h');
  allocations_[address] = Allocation{name, bytes, Memory::Pinned, thread_state(thread).device, number};
  last_user_[name] = thread_state(thread).index;
  emit(thread, "buffer " + name + " " + std::to_string(bytes) + " pinned", site);
}

void TraceWriter::free(ThreadId thread, Handle address, std::optional<StreamArg> stream, const CallSite& site) {
  if (address == 0) return;  // cudaFree(nullptr) does nothing
  auto it = allocations_.find(address);
  if (it == allocations_.end()) {
    note("a free of an address the capture did not see allocated (or freed twice): left out");
    return;
  }
  const std::string name = it->second.name;
  hand_off(thread, name);
  std::string statement = "free " + name;
  if (stream) {
    const std::string& s = stream_name(thread, *stream);
    hand_off(thread, s);
    statement += " on " + s;
  }
  buffer_freed(thread, it->second);
  allocations_.erase(it);
  emit(thread, statement, site);
}

std::pair<std::string, std::uint64_t> TraceWriter::buffer_name(ThreadId thread, Memory memory, char prefix) {
  if (!captured_) {
    auto it = free_names_.find({thread_state(thread).index, memory});
    if (it != free_names_.end() && !it->second.empty()) {
      const std::uint64_t number = *it->second.begin();
      it->second.erase(it->second.begin());
      return {numbered(prefix, number), number};
    }
  }
  const std::uint64_t number = ++buffers_made_;
  return {numbered(prefix, number), number};
}

void TraceWriter::buffer_freed(ThreadId thread, const Allocation& a) {
  if (!captured_) free_names_[{thread_state(thread).index, a.memory}].insert(a.number);
}

void TraceWriter::launch(ThreadId thread, StreamArg stream, std::string_view name, const std::vector<KernelArg>& args,
                         const CallSite& site) {
  launch(thread, stream, kernel_trace_name(name), name, args, site);
}

void TraceWriter::launch(ThreadId thread, StreamArg stream, std::string_view trace_name, std::string_view signature,
                         const std::vector<KernelArg>& args, const CallSite& site) {
  const std::string& s = stream_name(thread, stream);
  const int device = device_of(thread, s);
  // One access per buffer: a kernel given two pointers into one allocation
  // touches it from the lower one on, as the union of the two accesses.
  struct Touch {
    Place place;
    Access access = Access::None;
  };
  std::vector<Touch> touches;
  for (const KernelArg& arg : args) {
    if (arg.access == Access::None) continue;
    auto place = place_of(arg.value);
    if (!place) continue;  // not an address of captured memory (a size, a flag, a __device__ variable)
    if (place->allocation->memory == Memory::Pageable) {
      note("a kernel argument pointing into pageable host memory: left out (kernels touch device and pinned memory)");
      continue;
    }
    if (place->allocation->memory == Memory::Device && place->allocation->device != device) {
      note("a kernel argument pointing into another device's memory (peer access is not modelled): left out");
      continue;
    }
    auto same = std::find_if(touches.begin(), touches.end(),
                             [&](const Touch& t) { return t.place.allocation == place->allocation; });
    if (same == touches.end()) {
      touches.push_back(Touch{*place, arg.access});
    } else {
      same->place.offset = std::min(same->place.offset, place->offset);
      same->access = merged(same->access, arg.access);
    }
  }
  std::string& statement = line_;
  statement.assign("launch ").append(trace_name).append(" on ").append(s);
  for (Access kind : {Access::Reads, Access::Writes, Access::ReadWrites}) {
    bool first = true;
    for (const Touch& t : touches) {
      if (t.access != kind) continue;
      hand_off(thread, t.place.allocation->name);
      if (first)
        statement.append(" ").append(access_word(kind)).append(" ");
      else
        statement.append(", ");
      statement += ref(t.place, t.place.allocation->bytes - t.place.offset);
      first = false;
    }
  }
  hand_off(thread, s);
  emit(thread, statement, site, signature);
}

std::string TraceWriter::pageable(ThreadId thread, Handle address, std::uint64_t bytes, const CallSite& site) {
  auto [name, number] = buffer_name(thread, Memory::Pageable, 'p');
  allocations_[address] = Allocation{name, bytes, Memory::Pageable, thread_state(thread).device, number};
  last_user_[name] = thread_state(thread).index;
  note("an address no captured allocation holds, named by a copy: taken as pageable host memory");
  emit(thread, "buffer " + name + " " + std::to_string(bytes) + " pageable", site);
  return name;
}

void TraceWriter::copy(ThreadId thread, StreamArg stream, Handle destination, Handle source, std::uint64_t bytes,
                       bool synchronous, const CallSite& site) {
  if (bytes == 0) return;
  const std::string& s = stream_name(thread, stream);
  auto resolve = [&](Handle address) -> std::optional<std::string> {
    auto place = place_of(address);
    if (!place) {
      pageable(thread, address, bytes, site);
      place = place_of(address);
    }
    if (place->offset + bytes > place->allocation->bytes) return std::nullopt;
    hand_off(thread, place->allocation->name);
    return ref(*place, bytes);
  };
  auto from = resolve(source);
  auto to = resolve(destination);
  if (!from || !to) {
    note("a copy running past the end of its allocation: left out");
    return;
  }
  hand_off(thread, s);
  emit(thread, "copy " + numbered('c', ++copies_) + " on " + s + " from " + *from + " to " + *to, site);
  // cudaMemcpy returns once the copy is done (for device memory and pinned
  // memory; a pageable source may return earlier, which the model's R12 rule
  // for pageable copies covers).
  if (synchronous) emit(thread, "sync stream " + s, site);
}

void TraceWriter::memset(ThreadId thread, StreamArg stream, Handle destination, std::uint64_t bytes,
                         const CallSite& site) {
  auto place = place_of(destination);
  if (!place || place->offset + bytes > place->allocation->bytes || bytes == 0) {
    note("a memset of memory the capture did not see allocated: left out");
    return;
  }
  const std::string& s = stream_name(thread, stream);
  hand_off(thread, place->allocation->name);
  hand_off(thread, s);
  emit(thread, "launch memset on " + s + " writes " + ref(*place, bytes), site);
}

void TraceWriter::host_function(ThreadId thread, StreamArg stream, const CallSite& site) {
  const std::string& s = stream_name(thread, stream);
  hand_off(thread, s);
  note("a host function's own memory accesses are not captured");
  emit(thread, "callback host_function on " + s, site);
}

void TraceWriter::capture_begin(ThreadId thread, StreamArg stream, const CallSite& site) {
  const std::string& s = stream_name(thread, stream);
  captured_ = true;
  free_names_.clear();
  emit(thread, "capture begin " + s, site);
}

void TraceWriter::capture_end(ThreadId thread, StreamArg stream, Handle graph, const CallSite& site) {
  const std::string& s = stream_name(thread, stream);
  std::string name = numbered('g', ++graphs_made_);
  graphs_[graph] = name;
  emit(thread, "capture end " + s + " graph " + name, site);
}

void TraceWriter::graph_instantiated(Handle executable, Handle graph) {
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) {
    not_modelled("cudaGraphInstantiate", "a graph not built by stream capture");
    return;
  }
  executables_[executable] = it->second;
}

void TraceWriter::graph_launch(ThreadId thread, Handle executable, StreamArg stream, const CallSite& site) {
  auto it = executables_.find(executable);
  if (it == executables_.end()) {
    not_modelled("cudaGraphLaunch", "a graph not built by stream capture");
    return;
  }
  const std::string& s = stream_name(thread, stream);
  hand_off(thread, s);
  emit(thread, "launch graph " + it->second + " on " + s, site);
}

void TraceWriter::not_modelled(std::string_view api, std::string_view why) {
  std::string key(api);
  key += " (";
  key += why;
  key += ')';
  ++not_modelled_[key];
}

void TraceWriter::note(std::string_view what) { ++notes_[std::string(what)]; }

std::string TraceWriter::text(std::string_view program) const {
  std::string out = "# captured by libstreamcheck_capture.so from: ";
  out += program;
  out += "\n# " + std::to_string(statement_count_) + " statements; host threads are ordered as the capture saw " +
         "them wherever one used a stream, event or buffer another used before (send/receive h*)\n";
  for (const auto& [what, count] : not_modelled_)
    out += "# not captured: " + what + " x" + std::to_string(count) + "\n";
  for (const auto& [what, count] : notes_) out += "# assumed: " + what + " x" + std::to_string(count) + "\n";
  for (std::size_t t = 1; t < thread_names_.size(); ++t) out += "thread " + thread_names_[t] + "\n";
  for (const auto& c : channels_) out += "channel " + c + "\n";
  out += body_;
  return out;
}

}  // namespace streamcheck::capture
