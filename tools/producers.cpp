#include "tools/producers.h"

#include <algorithm>
#include <iterator>
#include <set>

namespace streamcheck::tools {

const ProducerIndex::KernelWrites& ProducerIndex::kernel_writes() const {
  if (writes_) return *writes_;
  KernelWrites& all = writes_.emplace();
  for (std::uint32_t s = 0; s < model_.stream_count(); ++s) {
    const sim::StreamIndex stream{s};
    for (std::uint32_t i = 0; i < model_.op_count(stream); ++i) {
      const sim::OpRef op{stream, i};
      if (model_.op_kind(op) != sim::OpKind::Kernel) continue;
      for (const sim::OpAccess& a : model_.accesses(op))
        if (writes(a.access)) all[{a.allocation.value, s}].push_back(Write{i, a.range});
    }
  }
  return all;
}

std::vector<Produced> ProducerIndex::of(sim::OpRef read) const {
  struct Covering {
    sim::OpRef op;
    sim::ByteRange bytes;
  };
  std::vector<Produced> out;
  for (const sim::OpAccess& r : model_.accesses(read)) {
    if (!reads(r.access)) continue;
    // The kernel writes to these bytes of the same allocation ordered
    // before the read that some byte's producer may be: on each stream,
    // newest first, until the writes seen cover the read's bytes (every
    // older write of that stream is ordered before a newer one covering
    // each of its bytes, so it is no byte's last ordered write).
    std::vector<Covering> ordered;
    std::set<std::uint64_t> cuts{r.range.lo, r.range.hi};
    for (std::uint32_t s = 0; s < model_.stream_count(); ++s) {
      const auto it = kernel_writes().find({r.allocation.value, s});
      if (it == kernel_writes().end()) continue;
      const std::vector<Write>& on_stream = it->second;
      const auto not_ordered = std::partition_point(on_stream.begin(), on_stream.end(), [&](const Write& w) {
        return model_.happens_before(sim::OpRef{sim::StreamIndex{s}, w.index}, read);
      });
      std::vector<sim::ByteRange> seen;
      for (auto w = std::make_reverse_iterator(not_ordered); w != on_stream.rend(); ++w) {
        const sim::ByteRange b{std::max(w->bytes.lo, r.range.lo), std::min(w->bytes.hi, r.range.hi)};
        if (b.lo >= b.hi) continue;
        ordered.push_back(Covering{sim::OpRef{sim::StreamIndex{s}, w->index}, b});
        cuts.insert(b.lo);
        cuts.insert(b.hi);
        sim::add_range(seen, b);
        if (sim::total_size(seen) == r.range.hi - r.range.lo) break;
      }
    }
    // Per elementary segment: the covering writes that no other covering write follows.
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      const sim::ByteRange seg{*it, *std::next(it)};
      std::vector<sim::OpRef> covering;
      for (const Covering& w : ordered)
        if (w.bytes.lo <= seg.lo && seg.hi <= w.bytes.hi) covering.push_back(w.op);
      std::vector<sim::OpRef> last;
      for (const sim::OpRef w : covering)
        if (std::none_of(covering.begin(), covering.end(),
                         [&](sim::OpRef v) { return v != w && model_.happens_before(w, v); }))
          last.push_back(w);
      std::sort(last.begin(), last.end());
      last.erase(std::unique(last.begin(), last.end()), last.end());
      if (last.empty()) continue;
      if (!out.empty() && out.back().bytes.hi == seg.lo && out.back().writers == last)
        out.back().bytes.hi = seg.hi;
      else
        out.push_back(Produced{seg, std::move(last)});
    }
  }
  return out;
}

ReadProducers read_producers(const Execution& run, std::span<const int> to_original) {
  const sim::DeviceModel& model = run.model();
  const auto line_of = [&](sim::OpRef op) {
    const auto origin = run.origin(op);
    if (!origin) return 0;
    if (to_original.empty()) return origin->line;
    return origin->line < static_cast<int>(to_original.size()) ? to_original[origin->line] : 0;
  };
  const ProducerIndex index(model);
  ReadProducers out;
  for (std::uint32_t s = 0; s < model.stream_count(); ++s)
    for (std::uint32_t i = 0; i < model.op_count(sim::StreamIndex{s}); ++i) {
      const sim::OpRef read{sim::StreamIndex{s}, i};
      for (const Produced& p : index.of(read)) {
        std::set<int> lines;
        for (const sim::OpRef w : p.writers) lines.insert(line_of(w));
        for (const NamedBytes& piece : run.name_bytes(p.bytes)) {
          const ReadBytes key = piece.in_buffer ? ReadBytes{line_of(read), piece.in_buffer->buffer, piece.in_buffer->lo,
                                                            piece.in_buffer->hi}
                                                : ReadBytes{line_of(read), {}, piece.address.lo, piece.address.hi};
          out[key] = lines;
        }
      }
    }
  return out;
}

}  // namespace streamcheck::tools
