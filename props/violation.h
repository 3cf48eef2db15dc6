// What a property check found: a typed value, rendered to text only at the
// edge (reports, test messages). Nothing recognises a violation by its text.
//
// Standard library only: the validation backends (backend_sim, backend_cuda)
// report the properties they observe themselves (P1 races, P2 stamps) in the
// same vocabulary, without linking props/.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace streamcheck::props {

/// The properties of SPEC §4, and the ways a run can fail outside them.
enum class Property : std::uint8_t {
  P1RaceFreedom,
  P2DataOracle,
  P3Accounting,
  /// P3's promise about time: after a successful reap the host is ordered
  /// after every free it released (R4), so their memory may be reused.
  P3ReapOrdering,
  P4ErrorAtomicity,
  P5GenerationGuard,
  P6RecorderContracts,
  P7Budget,
  P8Concurrency,
  P9NoLeaks,
  /// Through a LoggingResource: its log says exactly the calls made through
  /// it, each with its outcome, as trace lines (SPEC §2; log_reader.h).
  LogFidelity,
  /// R1+R2 economy: a live block holds its last write and one use event per
  /// stream that read it since (read subsumption), and no wait is queued on
  /// an event recorded on the waiting stream itself (SPEC: same-stream
  /// events are skipped).
  EventEconomy,
  /// Teardown could not free every block (a broken protocol refused).
  Teardown,
  /// A call failed with an error that no fault injection explains.
  UnexpectedError,
  /// A call the resource must refuse was accepted.
  MisuseAccepted,
  /// A call was refused, but with the wrong error.
  WrongError,
  /// Through the debug tier (model/debug_guard.h): it reported an
  /// out-of-bounds or stale write in a program that makes none.
  FalseAlarm,
  /// The validation backend itself could not run (e.g. a driver call of the
  /// GPU's stamp checker failed): no verdict on the resource.
  BackendFailure,
};

constexpr std::string_view to_string(Property p) {
  switch (p) {
    case Property::P1RaceFreedom:
      return "P1 race freedom";
    case Property::P2DataOracle:
      return "P2 data oracle";
    case Property::P3Accounting:
      return "P3 accounting";
    case Property::P3ReapOrdering:
      return "P3 reap ordering";
    case Property::P4ErrorAtomicity:
      return "P4 error atomicity";
    case Property::P5GenerationGuard:
      return "P5 generation guard";
    case Property::P6RecorderContracts:
      return "P6 recorder contracts";
    case Property::P7Budget:
      return "P7 budget";
    case Property::P8Concurrency:
      return "P8 concurrency";
    case Property::P9NoLeaks:
      return "P9 no leaks";
    case Property::LogFidelity:
      return "log fidelity";
    case Property::EventEconomy:
      return "event economy";
    case Property::Teardown:
      return "teardown";
    case Property::UnexpectedError:
      return "unexpected error";
    case Property::MisuseAccepted:
      return "misuse accepted";
    case Property::WrongError:
      return "wrong error";
    case Property::FalseAlarm:
      return "debug tier false alarm";
    case Property::BackendFailure:
      return "validation backend failed";
  }
  return "?";
}

struct Violation {
  Property property;
  /// What happened, for a reader; never parsed.
  std::string detail;
  friend bool operator==(const Violation&, const Violation&) = default;
};

/// `<property>: <detail>`, the one text form of a violation.
inline std::string to_string(const Violation& v) {
  std::string text(to_string(v.property));
  text += ": ";
  return text + v.detail;
}

inline std::ostream& operator<<(std::ostream& os, const Violation& v) { return os << to_string(v); }

}  // namespace streamcheck::props
