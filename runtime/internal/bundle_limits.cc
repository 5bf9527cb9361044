#include "runtime/internal/bundle_limits.h"

#include <nlohmann/json.hpp>

#include "runtime/internal/manifest_schemas.h"

namespace wrp {
namespace limits {

uint64_t BundleLimit(const char* key) {
  // Parsed by nlohmann directly, not json::Parse: the strict profile's depth bound is one of these
  // entries. The table is this build's own file, so a missing key is a build error, found by every test.
  static const nlohmann::json table = nlohmann::json::parse(schemas::kBundleLimits);
  return table.at(key).get<uint64_t>();
}

}  // namespace limits
}  // namespace wrp
