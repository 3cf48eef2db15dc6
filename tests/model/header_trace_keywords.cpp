// Proves that model/trace_keywords.h stands alone: it is the only include here.
#include "model/trace_keywords.h"

namespace streamcheck::header_check {
const char* header_trace_keywords() { return "trace_keywords.h"; }
}  // namespace streamcheck::header_check
