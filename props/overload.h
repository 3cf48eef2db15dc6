// `std::visit(Overload{[](const A&) {...}, [](const B&) {...}}, v)`.
#pragma once

namespace streamcheck::props {

template <class... Fs>
struct Overload : Fs... {
  using Fs::operator()...;
};
// Spelled out for compilers without aggregate CTAD (clang 14, the fuzz build).
template <class... Fs>
Overload(Fs...) -> Overload<Fs...>;

}  // namespace streamcheck::props
