// Proves that model/debug_guard.h stands alone: it is the only include here.
#include "model/debug_guard.h"

namespace streamcheck::header_check {
const char* header_debug_guard() { return "debug_guard.h"; }
}  // namespace streamcheck::header_check
