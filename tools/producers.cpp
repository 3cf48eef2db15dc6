#include "tools/producers.h"

#include <algorithm>
#include <set>

namespace streamcheck::tools {

std::vector<Produced> producers(const sim::DeviceModel& model, sim::OpRef read) {
  struct Write {
    sim::OpRef op;
    sim::ByteRange bytes;
  };
  std::vector<Produced> out;
  for (const sim::OpAccess& r : model.accesses(read)) {
    if (!reads(r.access)) continue;
    // Every kernel write to these bytes of the same allocation ordered before the read.
    std::vector<Write> ordered;
    std::set<std::uint64_t> cuts{r.range.lo, r.range.hi};
    for (std::uint32_t s = 0; s < model.stream_count(); ++s) {
      const sim::StreamIndex stream{s};
      for (std::uint32_t i = 0; i < model.op_count(stream); ++i) {
        const sim::OpRef w{stream, i};
        if (w == read || model.op_kind(w) != sim::OpKind::Kernel || !model.happens_before(w, read)) continue;
        for (const sim::OpAccess& a : model.accesses(w)) {
          if (!writes(a.access) || a.allocation != r.allocation) continue;
          const sim::ByteRange b{std::max(a.range.lo, r.range.lo), std::min(a.range.hi, r.range.hi)};
          if (b.lo >= b.hi) continue;
          ordered.push_back(Write{w, b});
          cuts.insert(b.lo);
          cuts.insert(b.hi);
        }
      }
    }
    // Per elementary segment: the covering writes that no other covering write follows.
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      const sim::ByteRange seg{*it, *std::next(it)};
      std::vector<sim::OpRef> covering;
      for (const Write& w : ordered)
        if (w.bytes.lo <= seg.lo && seg.hi <= w.bytes.hi) covering.push_back(w.op);
      std::vector<sim::OpRef> last;
      for (const sim::OpRef w : covering)
        if (std::none_of(covering.begin(), covering.end(),
                         [&](sim::OpRef v) { return v != w && model.happens_before(w, v); }))
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
  ReadProducers out;
  for (std::uint32_t s = 0; s < model.stream_count(); ++s)
    for (std::uint32_t i = 0; i < model.op_count(sim::StreamIndex{s}); ++i) {
      const sim::OpRef read{sim::StreamIndex{s}, i};
      for (const Produced& p : producers(model, read)) {
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
