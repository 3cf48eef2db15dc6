#include "capture/kernel_access.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace streamcheck::capture {

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ends_with_word(std::string_view s, std::string_view word) {
  s = trimmed(s);
  if (s.size() < word.size() || s.substr(s.size() - word.size()) != word) return false;
  if (s.size() == word.size()) return true;
  const char before = s[s.size() - word.size() - 1];
  return before == ' ' || before == '*' || before == '&' || before == '>';
}

// Built-in arithmetic types a demangler writes (no pointer inside).
constexpr std::array kScalarWords{"bool",     "char",    "short",    "int",           "long",        "float",
                                  "double",   "signed",  "unsigned", "__int128",      "wchar_t",     "char16_t",
                                  "char32_t", "char8_t", "__half",   "__nv_bfloat16", "std::size_t", "size_t"};

bool is_scalar(std::string_view type) {
  type = trimmed(type);
  // Strip cv-qualifiers; what is left must be built-in words only.
  std::size_t i = 0;
  bool any = false;
  while (i < type.size()) {
    while (i < type.size() && type[i] == ' ') ++i;
    std::size_t j = i;
    while (j < type.size() && type[j] != ' ') ++j;
    const std::string_view word = type.substr(i, j - i);
    if (!word.empty() && word != "const" && word != "volatile") {
      bool scalar = false;
      for (const char* w : kScalarWords) scalar = scalar || word == w;
      if (!scalar) return false;
      any = true;
    }
    i = j;
  }
  return any;
}

}  // namespace

std::optional<std::string> demangle(const char* symbol) {
  if (symbol == nullptr || symbol[0] != '_' || symbol[1] != 'Z') return std::nullopt;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
  if (status != 0 || !text) return std::nullopt;
  return std::string(text.get());
}

std::optional<std::vector<ParamKind>> parameter_kinds(std::string_view signature) {
  const std::size_t open = parameter_list_start(signature);
  if (open == std::string_view::npos) return std::nullopt;
  std::vector<ParamKind> kinds;
  int depth = 0;
  std::size_t start = open + 1;
  for (std::size_t i = open + 1; i < signature.size(); ++i) {
    const char c = signature[i];
    if (c == '<' || c == '(' || c == '[') ++depth;
    if ((c == '>' || c == ']' || c == ')') && depth > 0) {
      --depth;
      continue;
    }
    if ((c == ',' && depth == 0) || (c == ')' && depth == 0)) {
      const std::string_view param = trimmed(signature.substr(start, i - start));
      if (!param.empty() && param != "void") {
        if (param.back() == '*') {
          std::string_view pointee = param.substr(0, param.size() - 1);
          kinds.push_back(ends_with_word(pointee, "const") ? ParamKind::ConstPointer : ParamKind::Pointer);
        } else if (ends_with_word(param, "const") && trimmed(param.substr(0, param.size() - 5)).ends_with('*')) {
          // T* const: a const pointer to writable memory.
          std::string_view pointer = trimmed(param.substr(0, param.size() - 5));
          kinds.push_back(ends_with_word(pointer.substr(0, pointer.size() - 1), "const") ? ParamKind::ConstPointer
                                                                                         : ParamKind::Pointer);
        } else {
          kinds.push_back(is_scalar(param) ? ParamKind::Scalar : ParamKind::Other);
        }
      }
      start = i + 1;
      if (c == ')') break;
    }
  }
  return kinds;
}

std::string kernel_key(std::string_view signature) { return std::string(trimmed(kernel_name_of(signature))); }

std::vector<Access> KernelTable::parse_accesses(std::string_view words) {
  std::vector<Access> accesses;
  std::size_t i = 0;
  while (i < words.size()) {
    while (i < words.size() && (words[i] == ' ' || words[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < words.size() && words[j] != ' ' && words[j] != '\t') ++j;
    const std::string_view word = words.substr(i, j - i);
    i = j;
    if (word.empty()) continue;
    if (word == "reads") {
      accesses.push_back(Access::Reads);
    } else if (word == "writes") {
      accesses.push_back(Access::Writes);
    } else if (word == "readwrites") {
      accesses.push_back(Access::ReadWrites);
    } else if (word == "-") {
      accesses.push_back(Access::None);
    } else {
      throw std::invalid_argument("'" + std::string(word) +
                                  "' is not an access: write reads, writes, readwrites or - (not memory) for each "
                                  "parameter");
    }
  }
  return accesses;
}

KernelTable KernelTable::parse(std::string_view text) {
  KernelTable table;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trimmed(line);
    if (line.empty()) continue;
    const std::string where = std::to_string(line_no) + ": ";
    const auto bar = line.find('|');
    if (bar == std::string_view::npos)
      throw std::invalid_argument(where + "expected 'KERNEL | ACCESS ...' (a '|' after the kernel's name)");
    const std::string_view name = trimmed(line.substr(0, bar));
    if (name.empty()) throw std::invalid_argument(where + "the kernel's name is missing before '|'");
    std::vector<Access> accesses;
    try {
      accesses = parse_accesses(line.substr(bar + 1));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + e.what());
    }
    if (accesses.empty()) throw std::invalid_argument(where + "no access after '|': one word per parameter");
    if (table.find(name) != nullptr)
      throw std::invalid_argument(where + "kernel '" + std::string(name) + "' is listed twice");
    table.add(std::string(name), std::move(accesses));
  }
  return table;
}

void KernelTable::add(std::string name, std::vector<Access> accesses) {
  by_name_[std::move(name)] = std::move(accesses);
}

const std::vector<Access>* KernelTable::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &it->second;
}

}  // namespace streamcheck::capture
