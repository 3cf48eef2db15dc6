// The keywords of the trace language (docs/TRACES.md), in one table: the
// parser (tools/trace.cpp) dispatches statements through it and rejects its
// words as names, and LoggingResource, which writes the language, takes its
// statement words and its reserved words from it. Standard library only, so
// that model/ can include it.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
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

namespace detail {

constexpr bool same_word(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

/// A fixed set of words, open-addressed by a hash of a word's length and
/// its first and last bytes. Finding a word is that hash and, in most cases,
/// one comparison, inline; a word that is none of them mostly ends at an
/// empty slot with none. The binary search it replaces made about five
/// memcmp calls for every line a trace has (docs/PERFORMANCE.md, "The
/// statement keyword in one probe").
template <std::size_t N>
class WordIndex {
  static_assert(N < 255, "slots hold a word's index in one byte, 255 meaning empty");

 public:
  constexpr explicit WordIndex(const std::array<std::string_view, N>& words) : words_(words) {
    slots_.fill(kEmpty);
    for (std::size_t i = 0; i < N; ++i) {
      std::size_t s = slot_of(words[i]);
      while (slots_[s] != kEmpty) s = (s + 1) & kMask;
      slots_[s] = static_cast<std::uint8_t>(i);
    }
  }
  /// The index of `word` among the words, or N when it is none of them.
  constexpr std::size_t find(std::string_view word) const {
    if (word.empty()) return N;
    for (std::size_t s = slot_of(word); slots_[s] != kEmpty; s = (s + 1) & kMask)
      if (same_word(words_[slots_[s]], word)) return slots_[s];
    return N;
  }

 private:
  static constexpr std::size_t kSlots = std::bit_ceil(4 * N);  // at most a quarter full
  static constexpr std::size_t kMask = kSlots - 1;
  static constexpr std::uint8_t kEmpty = 0xff;
  static constexpr std::size_t slot_of(std::string_view w) {
    return (w.size() * 131 + static_cast<unsigned char>(w.front()) * 31 + static_cast<unsigned char>(w.back())) & kMask;
  }
  std::array<std::string_view, N> words_;
  std::array<std::uint8_t, kSlots> slots_{};
};

/// Every word is found, as itself (a word listed twice, as "device" is
/// among the reserved words, is found as either).
template <std::size_t N>
constexpr bool finds_every_word(const WordIndex<N>& index, const std::array<std::string_view, N>& words) {
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t at = index.find(words[i]);
    if (at == N || !same_word(words[at], words[i])) return false;
  }
  return true;
}

}  // namespace detail

/// The word that starts a statement of kind `k`.
constexpr std::string_view keyword(StatementKeyword k) {
  for (const auto& w : kStatementWords)
    if (w.keyword == k) return w.word;
  return {};
}

inline constexpr std::array<std::string_view, kStatementWords.size()> kStatementWordTexts = [] {
  std::array<std::string_view, kStatementWords.size()> texts{};
  for (std::size_t i = 0; i < texts.size(); ++i) texts[i] = kStatementWords[i].word;
  return texts;
}();
inline constexpr detail::WordIndex<kStatementWords.size()> kStatementWordIndex{kStatementWordTexts};
static_assert(detail::finds_every_word(kStatementWordIndex, kStatementWordTexts));

/// The statement `word` starts, if it is a statement keyword: the parser
/// asks once a line.
constexpr std::optional<StatementKeyword> statement_keyword(std::string_view word) {
  const std::size_t i = kStatementWordIndex.find(word);
  if (i == kStatementWords.size()) return std::nullopt;
  return kStatementWords[i].keyword;
}
static_assert(std::is_sorted(kStatementWords.begin(), kStatementWords.end(),
                             [](const StatementWord& a, const StatementWord& b) { return a.word < b.word; }),
              "kStatementWords is in alphabetical order: the parser's \"did you mean\" hint depends on it");

/// Every reserved word (statement keywords and inner words; "device" is
/// both, so it is listed twice), sorted for whoever reads the list: the
/// parser asks is_keyword for every name it declares.
inline constexpr auto kReservedWords = [] {
  std::array<std::string_view, kStatementWords.size() + kInnerWords.size()> all{};
  std::size_t n = 0;
  for (const auto& w : kStatementWords) all[n++] = w.word;
  for (auto w : kInnerWords) all[n++] = w;
  std::sort(all.begin(), all.end());
  return all;
}();

inline constexpr detail::WordIndex<kReservedWords.size()> kReservedWordIndex{kReservedWords};
static_assert(detail::finds_every_word(kReservedWordIndex, kReservedWords));

/// True for every reserved word: statement keywords and inner words.
constexpr bool is_keyword(std::string_view s) { return kReservedWordIndex.find(s) != kReservedWords.size(); }

}  // namespace streamcheck::trace_language
