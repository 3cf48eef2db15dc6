// The keywords of the trace language (docs/TRACES.md), in one table: the
// parser (tools/trace.cpp) dispatches statements through it and rejects its
// words as names, and LoggingResource, which writes the language, takes its
// statement words and its reserved words from it. Standard library only, so
// that model/ can include it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace streamcheck::trace_language {

/// The statement a line starts with (after an optional `@THREAD`).
enum class StatementKeyword : std::uint8_t {
  Stream,
  Event,
  Thread,
  Mutex,
  Channel,
  Policy,
  Buffer,
  Free,
  Launch,
  Copy,
  Record,
  Wait,
  Sync,
  Query,
  Resource,
  Allocate,
  Deallocate,
  Prepare,
  Finish,
  Reap,
  Run,
  Spawn,
  Join,
  Lock,
  Unlock,
  Send,
  Receive,
  Destroy,
  SubAlloc,
  SubFree,
  RecordStream,
  If,
  Else,
  End,
  Host,
  Callback,
  Device,
  Capture,
};

struct StatementWord {
  std::string_view word;
  StatementKeyword keyword;
};

/// Every statement keyword, in alphabetical order (the parser's "did you
/// mean" hint names the last close one in this order).
inline constexpr std::array<StatementWord, 38> kStatementWords = {{
    {"allocate", StatementKeyword::Allocate},
    {"buffer", StatementKeyword::Buffer},
    {"callback", StatementKeyword::Callback},
    {"capture", StatementKeyword::Capture},
    {"channel", StatementKeyword::Channel},
    {"copy", StatementKeyword::Copy},
    {"deallocate", StatementKeyword::Deallocate},
    {"destroy", StatementKeyword::Destroy},
    {"device", StatementKeyword::Device},
    {"else", StatementKeyword::Else},
    {"end", StatementKeyword::End},
    {"event", StatementKeyword::Event},
    {"finish", StatementKeyword::Finish},
    {"free", StatementKeyword::Free},
    {"host", StatementKeyword::Host},
    {"if", StatementKeyword::If},
    {"join", StatementKeyword::Join},
    {"launch", StatementKeyword::Launch},
    {"lock", StatementKeyword::Lock},
    {"mutex", StatementKeyword::Mutex},
    {"policy", StatementKeyword::Policy},
    {"prepare", StatementKeyword::Prepare},
    {"query", StatementKeyword::Query},
    {"reap", StatementKeyword::Reap},
    {"receive", StatementKeyword::Receive},
    {"record", StatementKeyword::Record},
    {"record_stream", StatementKeyword::RecordStream},
    {"resource", StatementKeyword::Resource},
    {"run", StatementKeyword::Run},
    {"send", StatementKeyword::Send},
    {"spawn", StatementKeyword::Spawn},
    {"stream", StatementKeyword::Stream},
    {"suballoc", StatementKeyword::SubAlloc},
    {"subfree", StatementKeyword::SubFree},
    {"sync", StatementKeyword::Sync},
    {"thread", StatementKeyword::Thread},
    {"unlock", StatementKeyword::Unlock},
    {"wait", StatementKeyword::Wait},
}};

/// The words inside statements: also reserved, so no NAME may be one.
namespace word {
inline constexpr std::string_view kOn = "on";
inline constexpr std::string_view kFrom = "from";
inline constexpr std::string_view kTo = "to";
inline constexpr std::string_view kReads = "reads";
inline constexpr std::string_view kWrites = "writes";
inline constexpr std::string_view kReadWrites = "readwrites";
inline constexpr std::string_view kDevice = "device";
inline constexpr std::string_view kBudget = "budget";
inline constexpr std::string_view kMutant = "mutant";
inline constexpr std::string_view kRead = "read";
inline constexpr std::string_view kWrite = "write";
inline constexpr std::string_view kReadWrite = "read_write";
inline constexpr std::string_view kNonBlocking = "nonblocking";
inline constexpr std::string_view kPageable = "pageable";
inline constexpr std::string_view kPinned = "pinned";
/// `capture begin S`, `capture end S graph G`, `launch graph G on S` (R14).
inline constexpr std::string_view kBegin = "begin";
inline constexpr std::string_view kGraph = "graph";
/// `stream B handle A`: B got the handle of destroyed stream A (R9c).
inline constexpr std::string_view kHandle = "handle";
/// `if done E`: read only right after `if`, so it stays a valid name
/// (traces name channels `done`).
inline constexpr std::string_view kDone = "done";
/// `resource pool`: read only among the resource's options, so it stays a
/// valid name (traces name streams and buffers `pool`).
inline constexpr std::string_view kPool = "pool";
/// `resource debug`: the same, read only among the resource's options.
inline constexpr std::string_view kDebug = "debug";
}  // namespace word

inline constexpr std::array<std::string_view, 18> kInnerWords = {
    word::kOn,          word::kFrom,     word::kTo,     word::kReads, word::kWrites, word::kReadWrites,
    word::kDevice,      word::kBudget,   word::kMutant, word::kRead,  word::kWrite,  word::kReadWrite,
    word::kNonBlocking, word::kPageable, word::kPinned, word::kBegin, word::kGraph,  word::kHandle};

/// The word that starts a statement of kind `k`.
constexpr std::string_view keyword(StatementKeyword k) {
  for (const auto& w : kStatementWords)
    if (w.keyword == k) return w.word;
  return {};
}

/// The statement `word` starts, if it is a statement keyword. A binary
/// search (kStatementWords is sorted): the parser asks once a line, and a
/// linear scan was a tenth of parsing a large trace.
constexpr std::optional<StatementKeyword> statement_keyword(std::string_view word) {
  const auto* it = std::lower_bound(kStatementWords.begin(), kStatementWords.end(), word,
                                    [](const StatementWord& w, std::string_view v) { return w.word < v; });
  if (it != kStatementWords.end() && it->word == word) return it->keyword;
  return std::nullopt;
}
static_assert(std::is_sorted(kStatementWords.begin(), kStatementWords.end(),
                             [](const StatementWord& a, const StatementWord& b) { return a.word < b.word; }),
              "statement_keyword's binary search needs kStatementWords in alphabetical order");

/// Every reserved word (statement keywords and inner words), sorted: the
/// parser asks for every name it reads.
inline constexpr auto kReservedWords = [] {
  std::array<std::string_view, kStatementWords.size() + kInnerWords.size()> all{};
  std::size_t n = 0;
  for (const auto& w : kStatementWords) all[n++] = w.word;
  for (auto w : kInnerWords) all[n++] = w;
  std::sort(all.begin(), all.end());
  return all;
}();

/// True for every reserved word: statement keywords and inner words.
constexpr bool is_keyword(std::string_view s) {
  return std::binary_search(kReservedWords.begin(), kReservedWords.end(), s);
}

}  // namespace streamcheck::trace_language
