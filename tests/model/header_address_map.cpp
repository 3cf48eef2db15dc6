// Proves that model/address_map.h stands alone: it is the only include here.
#include "model/address_map.h"

namespace streamcheck::header_check {
const char* header_address_map() { return "address_map.h"; }
}  // namespace streamcheck::header_check
