// The happens-before graph of one simulated run, built with Boost.Graph from
// DeviceModel::log() alone -- independently of the vector clocks -- so that
// it can serve as the test oracle for DeviceModel::happens_before, render a
// run as Graphviz DOT, and explain why one op is ordered before another
// (SPEC §3, "a Boost.Graph HB graph as the test oracle").
//
// Nodes: one per device op (Enqueue), one per stream-side record or wait
// mark, and one per host action (every log entry). Edges, each named by the
// rule that creates it (visit_hb walks them; HbGraph and the SVG renderer
// both draw from it):
//   R1  the previous stream-side node -> the next op or wait mark on that
//       stream (stream order);
//   R2  the previous stream-side node -> a record mark: the mark is the
//       event's capture until the event is recorded again;
//   R3  the event's capture at the time of the wait -> the wait mark (a wait
//       on a never-recorded event gets no such edge);
//   R4  the covered work -> the host action of a stream / event / device
//       synchronize or of a query that answered "done" (a "not done" answer
//       and a sync of a never-recorded event get no edge);
//   R5  a host action -> the op or mark it enqueued; with R6's program order
//       (host node -> next host node of the same thread) this orders all of
//       the host's earlier actions before the device work;
//   R8  the last stream-side node of every blocking stream -> an op or mark
//       on the legacy default stream, and the legacy stream's last node ->
//       an op or mark on a blocking stream (StreamKind), both within one
//       device (R13a: StreamShape::device); a device sync (R4) covers the
//       streams of its device only (R13c).
// Pool-inserted waits (HbState::pool_dep) are deliberately left out: they
// order execution, but user code must not rely on them (R7).
//
// Limitation: the log does not record host-thread creation itself, so a
// host thread other than 0 is treated as having no history when it starts
// (true when it is created before any API call). The trace interpreter logs
// each thread's start as a release by its creator and an acquire by the
// child (R6a), which gives that edge too.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <boost/property_map/property_map.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/explain.h"

namespace streamcheck::sim {

enum class HbRule : std::uint8_t { R1, R2, R3, R4, R5, R6, R8 };

constexpr std::string_view to_string(HbRule r) {
  constexpr std::string_view names[] = {"R1", "R2", "R3", "R4", "R5", "R6", "R8"};
  return names[static_cast<std::size_t>(r)];
}

/// One node of the HB graph: the host action of log entry `entry`, or the
/// stream-side node (op, record or wait mark) that entry enqueued.
struct HbNode {
  enum class Side : std::uint8_t { Host, Stream };
  std::size_t entry;
  Side side;
};

/// Walks the HB graph of a log: on_node(HbNode) for each node and
/// on_edge(HbRule, HbNode from, HbNode to) for each edge, in program order,
/// every node before the edges that reach it.
template <class OnNode, class OnEdge>
void visit_hb(const Log& log, const std::vector<StreamShape>& streams, OnNode&& on_node, OnEdge&& on_edge) {
  using Side = HbNode::Side;
  std::vector<std::optional<std::size_t>> stream_last(streams.size());  // per stream: its last stream-side entry
  std::map<DeviceNumber, std::size_t> legacy;                           // each device's legacy default stream (R13a)
  for (std::size_t s = 0; s < streams.size(); ++s)
    if (streams[s].kind == StreamKind::LegacyDefault) legacy[streams[s].device] = s;
  std::map<HostThread, std::size_t> host_last;  // per host thread: its last entry
  std::map<EventIndex, std::size_t> capture;    // per event: its current record mark
  for (std::size_t i = 0; i < log.size(); ++i) {
    const LogEntry& entry = log[i];
    const HbNode host{i, Side::Host};
    on_node(host);
    if (auto it = host_last.find(entry.host()); it != host_last.end())
      on_edge(HbRule::R6, HbNode{it->second, Side::Host}, host);
    host_last[entry.host()] = i;

    // Stream-side nodes: chained per stream, each after the host action.
    const auto stream_node = [&](HbRule chain) {
      const HbNode mark{i, Side::Stream};
      on_node(mark);
      if (const auto& last = stream_last.at(entry.stream.value)) on_edge(chain, HbNode{*last, Side::Stream}, mark);
      on_edge(HbRule::R5, host, mark);
      const StreamShape shape = streams.at(entry.stream.value);
      const auto own_legacy = legacy.find(shape.device);  // R13a: R8 holds within one device
      if (shape.kind == StreamKind::LegacyDefault) {
        for (std::size_t s = 0; s < streams.size(); ++s)
          if (streams[s].kind == StreamKind::Blocking && streams[s].device == shape.device && stream_last[s])
            on_edge(HbRule::R8, HbNode{*stream_last[s], Side::Stream}, mark);
      } else if (own_legacy != legacy.end() && shape.kind == StreamKind::Blocking && stream_last[own_legacy->second]) {
        on_edge(HbRule::R8, HbNode{*stream_last[own_legacy->second], Side::Stream}, mark);
      }
      stream_last[entry.stream.value] = i;
      return mark;
    };
    const auto sync_after = [&](std::size_t covered) { on_edge(HbRule::R4, HbNode{covered, Side::Stream}, host); };
    switch (entry.kind()) {
      case LogEntry::Kind::Enqueue:
        stream_node(HbRule::R1);  // the op's pool_dep is deliberately not an edge
        break;
      case LogEntry::Kind::Record:
        stream_node(HbRule::R2);
        capture[entry.event()] = i;
        break;
      case LogEntry::Kind::Wait: {
        const HbNode mark = stream_node(HbRule::R1);
        if (auto it = capture.find(entry.event()); it != capture.end())
          on_edge(HbRule::R3, HbNode{it->second, Side::Stream}, mark);
        break;
      }
      case LogEntry::Kind::SyncStream:
        if (const auto& last = stream_last.at(entry.stream.value)) sync_after(*last);
        break;
      case LogEntry::Kind::SyncDevice:
        for (std::size_t s = 0; s < streams.size(); ++s)
          if (stream_last[s] && streams[s].device == entry.device()) sync_after(*stream_last[s]);  // R13c
        break;
      case LogEntry::Kind::SyncEvent:
      case LogEntry::Kind::QueryDone:
        if (auto it = capture.find(entry.event()); it != capture.end()) sync_after(it->second);
        break;
      case LogEntry::Kind::QueryNotDone:
      case LogEntry::Kind::HostRelease:
        break;  // orders nothing by itself
      case LogEntry::Kind::HostAcquire:
        on_edge(HbRule::R6, HbNode{*entry.released_by(), Side::Host}, host);
        break;
    }
  }
}

/// visit_hb for a caller that wants the edges only.
template <class OnEdge>
void visit_hb_edges(const Log& log, const std::vector<StreamShape>& streams, OnEdge&& on_edge) {
  visit_hb(
      log, streams, [](HbNode) {}, on_edge);
}

class HbGraph {
 public:
  enum class NodeKind : std::uint8_t { Op, Record, Wait, Host };
  struct Node {
    NodeKind kind = NodeKind::Host;
    HostThread host;
    StreamIndex stream;
    OpRef op{};  // for NodeKind::Op
    std::string label;
    std::size_t entry = 0;  // the log entry that made the node (a renderer's column)
  };
  struct Edge {
    HbRule rule;
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Node, Edge>;
  using Vertex = Graph::vertex_descriptor;

  /// What write_dot adds on top of the graph: ops to fill red and extra
  /// dashed red edges (a finding's missing edge), with a comment before them;
  /// and how it draws the graph: only some nodes (and the edges between
  /// them), cluster labels other than their ids ("stream2" -> the stream's
  /// name), a second label line under some nodes (a trace statement).
  struct Highlight {
    struct DashedEdge {
      Vertex from;
      Vertex to;
      std::string label;
      std::string tooltip;
    };
    std::set<Vertex> red;
    std::vector<DashedEdge> dashed;
    std::optional<std::string> comment;
    std::optional<std::set<Vertex>> only;
    std::map<std::string, std::string> cluster_labels;
    std::map<Vertex, std::string> notes;
  };

  /// Builds the graph from the model's log (the API calls in program order).
  explicit HbGraph(const DeviceModel& model) {
    const auto& log = model.log();
    std::vector<Vertex> host_vertex(log.size()), stream_vertex(log.size());
    const auto vertex_of = [&](HbNode n) {
      return n.side == HbNode::Side::Host ? host_vertex[n.entry] : stream_vertex[n.entry];
    };
    const auto on_node = [&](HbNode n) {
      const LogEntry& entry = log[n.entry];
      if (n.side == HbNode::Side::Host) {
        host_vertex[n.entry] = add(Node{NodeKind::Host,
                                        entry.host(),
                                        {},
                                        {},
                                        "host" + std::to_string(entry.host().value) + ": " + host_action(model, entry),
                                        n.entry});
        return;
      }
      Node node{NodeKind::Op, entry.host(), entry.stream, {}, {}, n.entry};
      if (entry.kind() == LogEntry::Kind::Enqueue) {
        node.op = entry.op();
        node.label = describe(model, entry.op());
      } else {
        const bool record = entry.kind() == LogEntry::Kind::Record;
        node.kind = record ? NodeKind::Record : NodeKind::Wait;
        node.label = (record ? "record " : "wait ") + model.event_name(entry.event());
      }
      stream_vertex[n.entry] = add(std::move(node));
      if (entry.kind() == LogEntry::Kind::Enqueue) ops_[entry.op()] = stream_vertex[n.entry];
    };
    visit_hb(log, model.hb().stream_shapes(), on_node, [&](HbRule rule, HbNode from, HbNode to) {
      boost::add_edge(vertex_of(from), vertex_of(to), Edge{rule}, g_);
    });
  }

  /// True when a non-empty path leads from op a to op b (a happens before b).
  bool reaches(OpRef a, OpRef b) const { return !path(a, b).empty(); }

  /// A shortest path a -> ... -> b as node labels, each but the first
  /// prefixed with the rule of the edge that leads to it ("R3: wait e0");
  /// empty when b is not reachable from a (or a == b).
  std::vector<std::string> path(OpRef a, OpRef b) const {
    const Vertex from = vertex(a);
    const Vertex to = vertex(b);
    if (from == to) return {};
    // Breadth-first search from `from`, recording the tree edge that first
    // reached each vertex: following them back from `to` is a shortest path.
    std::vector<std::optional<Graph::edge_descriptor>> via(boost::num_vertices(g_));
    boost::breadth_first_search(g_, from,
                                boost::visitor(boost::make_bfs_visitor(boost::record_edge_predecessors(
                                    boost::make_iterator_property_map(via.begin(), boost::get(boost::vertex_index, g_)),
                                    boost::on_tree_edge()))));
    if (!via[to]) return {};
    std::vector<std::string> out;
    for (Vertex v = to; v != from; v = boost::source(*via[v], g_))
      out.push_back(std::string(to_string(g_[*via[v]].rule)) + ": " + g_[v].label);
    out.push_back(g_[from].label);
    return {out.rbegin(), out.rend()};
  }

  /// Graphviz DOT: one cluster per stream and per host thread; op nodes are
  /// labelled with sim::describe, edges with their rule; then `highlight`.
  void write_dot(std::ostream& os, const Highlight& highlight = {}) const {
    os << "digraph hb {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
    std::map<std::string, std::vector<Vertex>> clusters;
    const auto drawn = [&](Vertex v) { return !highlight.only || highlight.only->count(v) != 0; };
    for (Vertex v = 0; v < boost::num_vertices(g_); ++v) {
      if (!drawn(v)) continue;
      const Node& n = g_[v];
      clusters[n.kind == NodeKind::Host ? "host" + std::to_string(n.host.value)
                                        : "stream" + std::to_string(n.stream.value)]
          .push_back(v);
    }
    for (const auto& [cluster, vs] : clusters) {
      const auto named = highlight.cluster_labels.find(cluster);
      os << "  subgraph cluster_" << cluster << " {\n    label=\""
         << escape(named == highlight.cluster_labels.end() ? cluster : named->second) << "\";\n";
      for (const Vertex v : vs) {
        const Node& n = g_[v];
        const auto note = highlight.notes.find(v);
        os << "    n" << v << " [label=\"" << escape(n.label)
           << (note == highlight.notes.end() ? "" : "\\n" + escape(note->second)) << "\"";
        if (n.kind == NodeKind::Host) os << ", shape=ellipse";
        if (n.kind == NodeKind::Record || n.kind == NodeKind::Wait) os << ", shape=diamond";
        os << "];\n";
      }
      os << "  }\n";
    }
    for (auto [e, end] = boost::edges(g_); e != end; ++e)
      if (drawn(boost::source(*e, g_)) && drawn(boost::target(*e, g_)))
        os << "  n" << boost::source(*e, g_) << " -> n" << boost::target(*e, g_) << " [label=\""
           << to_string(g_[*e].rule) << "\"];\n";
    for (const Vertex v : highlight.red)
      os << "  n" << v << " [color=red, fontcolor=red, penwidth=2, style=filled, fillcolor=\"#ffe5e5\"];\n";
    if (highlight.comment) os << "  // " << *highlight.comment << "\n";
    for (const auto& d : highlight.dashed)
      os << "  n" << d.from << " -> n" << d.to
         << " [style=dashed, color=red, fontcolor=red, penwidth=2, constraint=false, label=\"" << escape(d.label)
         << "\", tooltip=\"" << escape(d.tooltip) << "\"];\n";
    os << "}\n";
  }

  const Graph& graph() const { return g_; }
  /// The node of an op; throws std::out_of_range for an op not in the log.
  Vertex vertex(OpRef op) const {
    auto it = ops_.find(op);
    if (it == ops_.end())
      throw std::out_of_range("HbGraph: no op s" + std::to_string(op.stream.value) + "#" + std::to_string(op.index));
    return it->second;
  }
  /// DOT's escaping of a quoted string; a line break becomes \n.
  static std::string escape(std::string_view s) {
    std::string out;
    for (const char c : s) {
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }

 private:
  Vertex add(Node n) { return boost::add_vertex(std::move(n), g_); }

  Graph g_;
  std::map<OpRef, Vertex> ops_;
};

}  // namespace streamcheck::sim
