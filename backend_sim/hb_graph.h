// The happens-before graph of one simulated run, built with Boost.Graph from
// DeviceModel::log() alone -- independently of the vector clocks -- so that
// it can serve as the test oracle for DeviceModel::happens_before, render a
// run as Graphviz DOT, and explain why one op is ordered before another
// (SPEC §3, "a Boost.Graph HB graph as the test oracle").
//
// Nodes: one per device op (Enqueue), one per stream-side record or wait
// mark, and one per host action (every log entry). Edges, each named by the
// rule that creates it:
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
//       the host's earlier actions before the device work.
// Pool-inserted waits (LogEntry::pool_wait) are deliberately left out: they
// order execution, but user code must not rely on them (R7).
//
// Limitation: the log does not record host-thread creation, so a host
// thread other than 0 is treated as having no history when it starts (true
// when it is created before any API call).
#pragma once

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/explain.h"

namespace streamcheck::sim {

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
    const char* rule = "";
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, Node, Edge>;
  using Vertex = Graph::vertex_descriptor;

  /// Builds the graph from the model's log (the API calls in program order).
  explicit HbGraph(const DeviceModel& model) {
    std::vector<std::optional<Vertex>> stream_last(model.stream_count());
    std::map<HostThread, Vertex> host_last;  // per host thread
    std::map<EventIndex, Vertex> capture;    // per event: its current record mark

    for (std::size_t i = 0; i < model.log().size(); ++i) {
      const LogEntry& entry = model.log()[i];
      entry_ = i;
      const std::string who = "host" + std::to_string(entry.host.value) + ": ";
      const std::string action = host_action(model, entry);
      const Vertex h = add(Node{NodeKind::Host, entry.host, {}, {}, who + action});
      if (auto it = host_last.find(entry.host); it != host_last.end()) link(it->second, h, "R6");
      host_last[entry.host] = h;

      // Stream-side nodes: chained per stream, each after the host action.
      const auto stream_node = [&](Node n, const char* rule) {
        const Vertex v = add(std::move(n));
        if (auto& last = stream_last.at(entry.stream.value)) link(*last, v, rule);
        link(h, v, "R5");
        stream_last[entry.stream.value] = v;
        return v;
      };
      switch (entry.kind) {
        case LogEntry::Kind::Enqueue: {
          const Vertex v =
              stream_node(Node{NodeKind::Op, entry.host, entry.stream, entry.op, describe(model, entry.op)}, "R1");
          ops_[entry.op] = v;  // entry.pool_wait is deliberately not an edge
          break;
        }
        case LogEntry::Kind::Record:
          capture[entry.event] = stream_node(
              Node{NodeKind::Record, entry.host, entry.stream, {}, "record " + event_name(entry.event)}, "R2");
          break;
        case LogEntry::Kind::Wait: {
          const Vertex v =
              stream_node(Node{NodeKind::Wait, entry.host, entry.stream, {}, "wait " + event_name(entry.event)}, "R1");
          if (auto it = capture.find(entry.event); it != capture.end()) link(it->second, v, "R3");
          break;
        }
        case LogEntry::Kind::SyncStream:
          if (const auto& last = stream_last.at(entry.stream.value)) link(*last, h, "R4");
          break;
        case LogEntry::Kind::SyncDevice:
          for (const auto& last : stream_last)
            if (last) link(*last, h, "R4");
          break;
        case LogEntry::Kind::SyncEvent:
        case LogEntry::Kind::QueryDone:
          if (auto it = capture.find(entry.event); it != capture.end()) link(it->second, h, "R4");
          break;
        case LogEntry::Kind::QueryNotDone:
          break;  // orders nothing
      }
    }
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
    const auto n = boost::num_vertices(g_);
    std::vector<std::optional<Graph::edge_descriptor>> via(n);
    std::vector<bool> seen(n, false);
    std::vector<Vertex> frontier{from};
    seen[from] = true;
    for (std::size_t i = 0; i < frontier.size() && !seen[to]; ++i) {
      for (auto [e, end] = boost::out_edges(frontier[i], g_); e != end; ++e) {
        const Vertex t = boost::target(*e, g_);
        if (seen[t]) continue;
        seen[t] = true;
        via[t] = *e;
        frontier.push_back(t);
      }
    }
    if (!seen[to]) return {};
    std::vector<std::string> out;
    for (Vertex v = to; v != from; v = boost::source(*via[v], g_))
      out.push_back(std::string(g_[*via[v]].rule) + ": " + g_[v].label);
    out.push_back(g_[from].label);
    std::reverse(out.begin(), out.end());
    return out;
  }

  /// Graphviz DOT: one cluster per stream and per host thread; op nodes are
  /// labelled with sim::describe, edges with their rule. `highlight` writes
  /// more statements into the graph, after its nodes and edges (a renderer
  /// marks the ops and the missing edge of a finding there).
  void write_dot(std::ostream& os, const std::function<void(std::ostream&)>& highlight = {}) const {
    os << "digraph hb {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
    std::map<std::string, std::vector<Vertex>> clusters;
    for (Vertex v = 0; v < boost::num_vertices(g_); ++v) {
      const Node& n = g_[v];
      clusters[n.kind == NodeKind::Host ? "host" + std::to_string(n.host.value)
                                        : "stream" + std::to_string(n.stream.value)]
          .push_back(v);
    }
    for (const auto& [cluster, vs] : clusters) {
      os << "  subgraph cluster_" << cluster << " {\n    label=\"" << cluster << "\";\n";
      for (const Vertex v : vs) {
        const Node& n = g_[v];
        os << "    n" << v << " [label=\"" << escape(n.label) << "\"";
        if (n.kind == NodeKind::Host) os << ", shape=ellipse";
        if (n.kind == NodeKind::Record || n.kind == NodeKind::Wait) os << ", shape=diamond";
        os << "];\n";
      }
      os << "  }\n";
    }
    for (auto [e, end] = boost::edges(g_); e != end; ++e)
      os << "  n" << boost::source(*e, g_) << " -> n" << boost::target(*e, g_) << " [label=\"" << g_[*e].rule
         << "\"];\n";
    if (highlight) highlight(os);
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

 private:
  Vertex add(Node n) {
    n.entry = entry_;
    return boost::add_vertex(std::move(n), g_);
  }
  void link(Vertex from, Vertex to, const char* rule) { boost::add_edge(from, to, Edge{rule}, g_); }
  static std::string escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }

  Graph g_;
  std::map<OpRef, Vertex> ops_;
  std::size_t entry_ = 0;  // the log entry being added
};

}  // namespace streamcheck::sim
