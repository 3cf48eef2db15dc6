// Proves that model/mutants.h stands alone: it is the only include here.
#include "model/mutants.h"

namespace streamcheck::header_check {
const char* header_mutants() { return "mutants.h"; }
}  // namespace streamcheck::header_check
