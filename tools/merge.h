// `streamcheck merge`: the JSON reports of the shards of one exploration
// (`explore FILE --shard I/N --json`, I = 0..N-1) combined into the report
// the unsharded exploration gives, byte for byte: always for random and pct
// (the shards split the runs of the whole, bound included), and for dfs when
// every shard finished its part (a dfs shard's --schedules bounds that
// shard, so bounded shards merge into a report that says it is not
// exhaustive and the fewest deviations every shard covered). The shards'
// reports carry the runs that first showed each finding or note; merge
// replays those in the order one exploration meets them and adds up the
// counts (tools/trace_check.h, merge_shards).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "tools/report.h"

namespace streamcheck::tools {

/// Shard reports that do not make up one exploration, or that cannot be
/// read: the message says which and why (exit 2).
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `texts`: the JSON reports, `names` where each came from (for messages).
/// Throws MergeError; a trace that no longer parses throws TraceError.
Report merge_reports(const std::vector<std::string>& texts, const std::vector<std::string>& names);

}  // namespace streamcheck::tools
