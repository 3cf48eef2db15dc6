#include "backend_sim/schedule.h"

#include <stdexcept>

namespace streamcheck::sim {

namespace {
constexpr std::string_view kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
}

std::string encode_schedule(const std::vector<Choice>& choices) {
  std::string out;
  out.reserve(choices.size());
  for (const auto& c : choices) {
    if (c.taken < kDigits.size())
      out.push_back(kDigits[c.taken]);
    else
      out += "(" + std::to_string(c.taken) + ")";
  }
  return out.empty() ? std::string("-") : out;
}

std::vector<std::uint32_t> decode_schedule(std::string_view text) {
  std::vector<std::uint32_t> out;
  if (text == "-") return out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '(') {
      const auto close = text.find(')', i);
      if (close == std::string_view::npos || close == i + 1)
        throw std::invalid_argument("schedule: unterminated '(' at position " + std::to_string(i));
      std::uint64_t v = 0;
      for (std::size_t j = i + 1; j < close; ++j) {
        if (text[j] < '0' || text[j] > '9')
          throw std::invalid_argument("schedule: non-digit inside () at position " + std::to_string(j));
        v = v * 10 + static_cast<std::uint64_t>(text[j] - '0');
        if (v > 0xffffffffu)
          throw std::invalid_argument("schedule: choice index too large at position " + std::to_string(i));
      }
      out.push_back(static_cast<std::uint32_t>(v));
      i = close;
      continue;
    }
    const auto pos = kDigits.find(ch);
    if (pos == std::string_view::npos)
      throw std::invalid_argument("schedule: unexpected character '" + std::string(1, ch) + "' at position " +
                                  std::to_string(i) + " (expected 0-9, a-z or (n))");
    out.push_back(static_cast<std::uint32_t>(pos));
  }
  return out;
}

std::uint32_t Chooser::choose(ChoiceKind kind, std::uint32_t options) {
  if (options < 2) return 0;
  const std::uint32_t taken = pick(kind, options);
  if (taken >= options)
    throw ScheduleMismatch("schedule chose option " + std::to_string(taken) + " of " + std::to_string(options) +
                           " at choice " + std::to_string(taken_.size()) +
                           ": the schedule was recorded for a different program");
  taken_.push_back(Choice{kind, options, taken});
  return taken;
}

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint32_t RandomChooser::pick(ChoiceKind kind, std::uint32_t options) {
  switch (kind) {
    case ChoiceKind::DeviceStep:
      if (!rng_.chance(options_.device_step_percent)) return 0;
      return 1 + rng_.below(options - 1);
    case ChoiceKind::Fault:
      return rng_.chance(options_.fault_percent) ? 1 : 0;
    case ChoiceKind::PoolRange:
    case ChoiceKind::Client:
      return rng_.below(options);
  }
  return 0;
}

std::uint32_t ReplayChooser::pick(ChoiceKind, std::uint32_t) {
  if (next_ >= script_.size()) return 0;
  return script_[next_++];
}

std::uint32_t ByteChooser::pick(ChoiceKind, std::uint32_t options) {
  if (next_ >= bytes_.size()) return 0;
  return bytes_[next_++] % options;
}

std::uint32_t DfsEnumerator::RunChooser::pick(ChoiceKind, std::uint32_t) {
  if (next_ >= prefix_.size()) return 0;
  return prefix_[next_++];
}

bool DfsEnumerator::finished(const Chooser& run) {
  ++explored_;
  const auto& taken = run.taken();
  // Backtrack to the deepest choice with an untried alternative.
  for (std::size_t i = taken.size(); i-- > 0;) {
    if (taken[i].taken + 1 < taken[i].options) {
      prefix_.clear();
      for (std::size_t j = 0; j < i; ++j) prefix_.push_back(taken[j].taken);
      prefix_.push_back(taken[i].taken + 1);
      return true;
    }
  }
  done_ = true;
  return false;
}

}  // namespace streamcheck::sim
