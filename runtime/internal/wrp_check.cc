#include "runtime/internal/wrp_check.h"

#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/internal/fatbin.h"
#include "runtime/internal/json.h"
#include "runtime/internal/manifest_schemas.h"
#include "runtime/internal/sha256.h"
#include "runtime/internal/wrp_cursor.h"

// The Warp release whose .wrp files load (//toolchains/warp defines it; wrpkg.WARP_VERSION is the pin).
// tools/fuzz compiles this file without Warp, and so without the pin: the producer version is not judged
// there.
#ifndef WRP_PINNED_WARP_VERSION
#define WRP_PINNED_WARP_VERSION ""
#endif

namespace wrp {
namespace {

// The .wrp checks are one reader split over files (wrp_cursor.h, wrp_operations.cc).
using wrp_format::CheckStream;
using wrp_format::Cursor;
using wrp_format::Get;
using wrp_format::Limits;
using wrp_format::TheLimits;

// --- METADATA: apic_parse_metadata and apic_validate_module (wrpkg/wrpformat/metadata.py)
// -------------------

bool IsPlainBasename(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of("/\\:") == std::string::npos;
}

bool IsSha256Hex(const std::string& digest) {
  return digest.size() == 64 && digest.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct ModuleFields {
  std::string hash, name, binary, binary_sha256, source, source_sha256;
  uint32_t arch = 0;
  uint8_t kind = 0, reason = 0;
  uint8_t recipe[16] = {};
};

// The rule a module record breaks, or "": metadata.py's validate_module (Warp's, plus enum and digest checks
// on every device).
std::string ModuleProblem(const ModuleFields& m, uint8_t device) {
  if (m.hash.empty()) return "module hash is empty";
  if (!IsPlainBasename(m.binary)) return "binary filename is not a plain file name";
  if (device == 0 && m.arch == 0) return "CUDA module has target arch 0";
  if (device == 1 && m.arch != 0) return "CPU module has non-zero target arch " + std::to_string(m.arch);
  if (m.arch > 0x7FFFFFFF) return "module target arch " + std::to_string(m.arch) + " overflows int32";
  if (!m.binary_sha256.empty() && !IsSha256Hex(m.binary_sha256))
    return "binary digest is not a lowercase sha256 hex digest";
  if (!m.source_sha256.empty() && !IsSha256Hex(m.source_sha256))
    return "source digest is not a lowercase sha256 hex digest";
  if (!m.source.empty() && !IsPlainBasename(m.source)) return "source filename is not a plain file name";
  if (device != 0) return "";
  if (m.binary_sha256.empty()) {
    bool recipe_empty = true;
    for (uint8_t b : m.recipe) recipe_empty = recipe_empty && b == 0;
    if (!m.source.empty() || !m.source_sha256.empty() || m.kind != 0 || m.reason != 1 || !recipe_empty) {
      return "CUDA binary-only module contains incomplete artifact metadata";
    }
    return "";
  }
  if (m.kind != 1 && m.kind != 2)
    return "binary kind " + std::to_string(m.kind) + " is neither PTX nor CUBIN";
  const uint8_t* r =
      m.recipe;  // debug, optimization_level, verify_fp, fast_math, fuse_fp, lineinfo, arch_suffix
  bool recipe_ok = r[0] <= 1 && r[1] <= 3 && r[2] <= 1 && r[3] <= 1 && r[4] <= 1 && r[5] <= 1 && r[6] <= 2;
  for (int i = 7; i < 16; ++i) recipe_ok = recipe_ok && r[i] == 0;
  if (!recipe_ok) return "compile recipe has an out-of-range field or non-zero reserved bytes";
  if (!EndsWith(m.binary, m.kind == 1 ? ".ptx" : ".cubin")) return "binary kind does not match its filename";
  if (m.source.empty() != m.source_sha256.empty())
    return "source filename and source digest must be both present or both absent";
  if (!m.source.empty() && !EndsWith(m.source, ".cu")) return "source filename does not end in .cu";
  if ((r[6] == 1 && m.arch < 90) || (r[6] == 2 && m.arch < 100))
    return "architecture suffix is invalid for the module target arch";
  if (m.reason == 0 && m.source.empty()) return "source fallback is marked available without source";
  return "";
}

struct Metadata {
  std::string producer;
  std::vector<ModuleFields> modules;
  std::vector<std::pair<std::string, uint32_t>> bindings;  // name and region, in file order
  struct Mesh {                                            // metadata.py's MeshRecord
    uint32_t num_points, num_tris;
    uint8_t winding, constructor;
    uint16_t leaf_size;
    uint32_t points, indices, velocities;
  };
  std::vector<Mesh> meshes;
  struct Ptr {
    uint32_t region;
    uint64_t offset, stride, count;
  };
  std::vector<Ptr> ptr_locations;
};

void CheckMetadata(Cursor& cur, uint8_t device, uint32_t target_arch, Metadata* out) {
  const Limits& l = TheLimits();
  const uint32_t version = cur.Read<uint32_t>("metadata version");
  if (version != l.format_version) {
    cur.Fail("metadata version " + std::to_string(version) + " does not match format version " +
                 std::to_string(l.format_version),
             cur.pos() - 4);
  }
  const uint64_t producer_at = cur.pos();
  const std::string producer = cur.String("producer version");
  out->producer = producer;
  const std::string pinned = WRP_PINNED_WARP_VERSION;
  if (!pinned.empty() && producer != pinned) {
    cur.Fail("produced by Warp '" + producer + "', but only Warp " + pinned + " files load", producer_at);
  }
  const uint32_t arch = cur.Read<uint32_t>("metadata target architecture");
  if (arch != target_arch) {
    cur.Fail("metadata target architecture " + std::to_string(arch) + " does not match the header's " +
                 std::to_string(target_arch),
             cur.pos() - 4);
  }
  const uint64_t counts_at = cur.pos();
  const uint64_t modules = cur.Read<uint32_t>("module count"), kernels = cur.Read<uint32_t>("kernel count");
  const uint64_t bindings = cur.Read<uint32_t>("binding count"), meshes = cur.Read<uint32_t>("mesh count");
  const uint64_t ptrs = cur.Read<uint32_t>("ptr count");
  // The smallest encodings (metadata.py's _MIN_MODULE and the rest), refused before any loop.
  const uint64_t needed = modules * 50 + kernels * 28 + bindings * 8 + meshes * 32 + ptrs * 28;
  if (needed > cur.remaining()) {
    cur.Fail("record counts need at least " + std::to_string(needed) + " bytes, " +
                 std::to_string(cur.remaining()) + " remain",
             counts_at);
  }
  std::set<std::string> seen_modules;
  for (uint64_t i = 0; i < modules; ++i) {
    const uint64_t at = cur.pos();
    const std::string n = "module " + std::to_string(i);
    ModuleFields m;
    m.hash = cur.String(n + " hash");
    m.name = cur.String(n + " name");
    m.binary = cur.String(n + " binary filename");
    m.arch = cur.Read<uint32_t>(n + " target arch");
    m.binary_sha256 = cur.String(n + " binary sha256");
    m.source = cur.String(n + " source filename");
    m.source_sha256 = cur.String(n + " source sha256");
    m.kind = cur.Read<uint8_t>(n + " binary kind");
    m.reason = cur.Read<uint8_t>(n + " fallback reason");
    cur.Need(16, n + " compile recipe");
    std::memcpy(m.recipe, cur.data() + cur.pos(), 16);
    cur.Skip(16, n + " compile recipe");
    if (m.kind > 2) cur.Fail(n + " (" + m.name + "): unknown binary kind " + std::to_string(m.kind), at);
    if (m.reason > 6)
      cur.Fail(n + " (" + m.name + "): unknown fallback reason " + std::to_string(m.reason), at);
    const std::string problem = ModuleProblem(m, device);
    if (!problem.empty()) cur.Fail(n + " (" + m.name + "): " + problem, at);
    if (!seen_modules.insert(m.hash).second) cur.Fail(n + ": duplicate module hash " + m.hash, at);
    out->modules.push_back(std::move(m));
  }
  std::set<std::pair<std::string, std::string>> seen_kernels;
  for (uint64_t i = 0; i < kernels; ++i) {
    const uint64_t at = cur.pos();
    const std::string n = "kernel " + std::to_string(i);
    const std::string key = cur.String(n + " key");
    const std::string module_hash = cur.String(n + " module hash");
    cur.String(n + " forward name");
    cur.String(n + " backward name");
    cur.Skip(12, n + " smem and block_dim");
    if (!seen_kernels.emplace(module_hash, key).second)
      cur.Fail(n + ": duplicate kernel " + key + " in module " + module_hash, at);
  }
  for (uint64_t i = 0; i < bindings; ++i) {
    std::string binding = cur.String("binding " + std::to_string(i) + " name");
    const uint32_t region = cur.Read<uint32_t>("binding " + std::to_string(i) + " region id");
    out->bindings.emplace_back(std::move(binding), region);
  }
  for (uint64_t i = 0; i < meshes; ++i) {
    cur.Need(32, "mesh record " + std::to_string(i));
    const uint8_t* p = cur.data() + cur.pos();
    out->meshes.push_back({Get<uint32_t>(p, 0), Get<uint32_t>(p, 4), Get<uint8_t>(p, 8), Get<uint8_t>(p, 9),
                           Get<uint16_t>(p, 10), Get<uint32_t>(p, 12), Get<uint32_t>(p, 16),
                           Get<uint32_t>(p, 20)});
    cur.Skip(32, "mesh record " + std::to_string(i));
  }
  for (uint64_t i = 0; i < ptrs; ++i) {
    cur.Need(28, "pointer location " + std::to_string(i));
    const uint8_t* p = cur.data() + cur.pos();
    out->ptr_locations.push_back(
        {Get<uint32_t>(p, 0), Get<uint64_t>(p, 4), Get<uint64_t>(p, 12), Get<uint64_t>(p, 20)});
    cur.Skip(28, "pointer location " + std::to_string(i));
  }
  if (cur.remaining()) cur.Fail("metadata has " + std::to_string(cur.remaining()) + " trailing bytes");
}

// --- Meshes: what Warp's loader builds again (apic_create_meshes), held to what it can build safely
// --------------------

std::string MeshProblem(const Metadata::Mesh& mesh, uint8_t device, const std::map<uint32_t, uint64_t>& sizes,
                        const std::map<uint32_t, const uint8_t*>& initial_data) {
  const Limits& l = TheLimits();
  if (mesh.num_tris == 0) return "has no triangles";
  if (mesh.winding > 1)
    return "has winding-number flag " + std::to_string(mesh.winding) + ", expected 0 or 1";
  const std::set<uint64_t>& constructors =
      device == 1 ? l.mesh_bvh_constructors_cpu : l.mesh_bvh_constructors_cuda;
  if (!constructors.count(mesh.constructor)) {
    return "has BVH constructor " + std::to_string(mesh.constructor) + ", which Warp does not build on " +
           (device == 1 ? "the CPU" : "CUDA");
  }
  if (mesh.leaf_size < l.min_mesh_bvh_leaf_size) {
    return "has BVH leaf size " + std::to_string(mesh.leaf_size) + ", less than " +
           std::to_string(l.min_mesh_bvh_leaf_size);
  }
  const uint64_t points_bytes = uint64_t{mesh.num_points} * 12, indices_bytes = uint64_t{mesh.num_tris} * 12;
  if (sizes.at(mesh.points) < points_bytes) {
    return "has " + std::to_string(mesh.num_points) + " points, more than its points region " +
           std::to_string(mesh.points) + " holds (" + std::to_string(sizes.at(mesh.points)) + " bytes)";
  }
  if (sizes.at(mesh.indices) < indices_bytes) {
    return "has " + std::to_string(mesh.num_tris) + " triangles, more than its indices region " +
           std::to_string(mesh.indices) + " holds (" + std::to_string(sizes.at(mesh.indices)) + " bytes)";
  }
  auto velocities = sizes.find(mesh.velocities);
  if (mesh.velocities != 0 && velocities != sizes.end() && velocities->second < points_bytes) {
    return "has " + std::to_string(mesh.num_points) + " points, more than its velocities region " +
           std::to_string(mesh.velocities) + " holds (" + std::to_string(velocities->second) + " bytes)";
  }
  // A region without initial data is zero-filled at load: every index 0.
  auto indices = initial_data.find(mesh.indices);
  for (uint64_t k = 0; k < uint64_t{mesh.num_tris} * 3; ++k) {
    const int32_t index = indices == initial_data.end() ? 0 : Get<int32_t>(indices->second, k * 4);
    if (index < 0 || static_cast<uint64_t>(index) >= mesh.num_points) {
      return "has triangle index " + std::to_string(index) + " (triangle " + std::to_string(k / 3) +
             "), outside its " + std::to_string(mesh.num_points) + " points";
    }
  }
  return "";
}

// --- MEMORY: apic_parse_memory_regions, within the table's allocation bounds (memory.py)
// --------------------

void CheckMemory(Cursor& cur, std::map<uint32_t, uint64_t>* sizes,
                 std::map<uint32_t, const uint8_t*>* initial_data) {
  const Limits& l = TheLimits();
  if (cur.remaining() < 4) cur.Fail("memory section is shorter than its 4-byte region count");
  const uint64_t count = cur.Read<uint32_t>("memory region count");
  if (count * l.region_record_bytes > cur.remaining()) {
    cur.Fail("memory region count " + std::to_string(count) + " cannot fit: " + std::to_string(count) +
                 " records of at least " + std::to_string(l.region_record_bytes) + " bytes need " +
                 std::to_string(count * l.region_record_bytes) + " bytes, " +
                 std::to_string(cur.remaining()) + " remain",
             cur.pos() - 4);
  }
  uint64_t total = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = cur.pos();
    cur.Need(l.region_record_bytes, "memory region record " + std::to_string(i));
    const uint32_t id = Get<uint32_t>(cur.data(), at);
    const uint64_t size = Get<uint64_t>(cur.data(), at + 8);
    const uint8_t has_data = Get<uint8_t>(cur.data(), at + 16);
    cur.Skip(l.region_record_bytes, "memory region record " + std::to_string(i));
    const std::string region = "region " + std::to_string(id);
    if (has_data > 1)
      cur.Fail(region + " has initial-data flag " + std::to_string(has_data) + ", expected 0 or 1", at);
    if (sizes->count(id)) cur.Fail("duplicate region id " + std::to_string(id), at);
    if (size > l.max_region_bytes) {
      cur.Fail(region + " asks for " + std::to_string(size) + " bytes, more than the " +
                   std::to_string(l.max_region_bytes) +
                   " a region may have (Warp would allocate them at load)",
               at);
    }
    if (has_data) {
      if (size > cur.remaining()) {
        cur.Fail(region + " declares " + std::to_string(size) + " bytes of initial data, " +
                     std::to_string(cur.remaining()) + " remain",
                 at);
      }
      (*initial_data)[id] = cur.data() + cur.pos();
      cur.Skip(size, region + " initial data");
    }
    (*sizes)[id] = size;
    total += size;  // each below 2^40 and at most 2^32 of them: no wrap
    if (total > l.max_total_region_bytes) {
      cur.Fail("regions 0 to " + std::to_string(i) + " ask for " + std::to_string(total) +
                   " bytes in all, more than the " + std::to_string(l.max_total_region_bytes) +
                   " a .wrp may allocate (Warp would allocate them at load)",
               at);
    }
  }
}

struct WrpSummary {
  uint8_t device = 0;
  uint32_t version = 0;
  Metadata metadata;
  std::map<uint32_t, uint64_t> region_sizes;
};

WrpSummary ParseLoadableWrp(ByteView wrp, const std::string& what, const std::string& fix) {
  const Limits& l = TheLimits();
  const uint8_t* d = wrp.data;
  const uint64_t size = wrp.size;
  Cursor file(d, 0, size, &what, &fix, "header");
  if (size < l.header_bytes) {
    file.Fail("file is " + std::to_string(size) + " bytes, smaller than the " +
                  std::to_string(l.header_bytes) + "-byte header",
              0);
  }
  if (std::memcmp(d, "WRP1", 4) != 0) file.Fail("bad magic, expected 'WRP1': not a .wrp file", 0);
  const uint32_t version = Get<uint32_t>(d, 4), num_sections = Get<uint32_t>(d, 12);
  const uint64_t table = Get<uint64_t>(d, 16);
  const uint8_t device = Get<uint8_t>(d, 24);
  const uint32_t target_arch = Get<uint32_t>(d, 28);
  if (version != l.format_version) {
    file.Fail("unsupported format version " + std::to_string(version) + ", expected " +
                  std::to_string(l.format_version),
              4);
  }
  if (device > 1) file.Fail("unknown device type " + std::to_string(device), 24);
  if ((device == 0 && target_arch == 0) || (device == 1 && target_arch != 0) || target_arch > 0x7FFFFFFF) {
    file.Fail("device type " + std::to_string(device) + " and target architecture " +
                  std::to_string(target_arch) + " disagree",
              28);
  }
  if (num_sections == 0 || num_sections > l.max_sections) {
    file.Fail(
        "section count " + std::to_string(num_sections) + " is not in 1.." + std::to_string(l.max_sections),
        12);
  }
  if (table > size || num_sections > (size - table) / l.section_entry_bytes) {
    file.Fail("section table (" + std::to_string(num_sections) + " entries at byte " + std::to_string(table) +
                  ") overruns the file",
              16);
  }
  Cursor section_table(d, table, size, &what, &fix, "section table");
  const char* kNames[] = {"", "METADATA", "MEMORY", "OPERATIONS"};
  std::pair<uint64_t, uint64_t> found[4] = {};
  bool present[4] = {};
  for (uint32_t i = 0; i < num_sections; ++i) {
    const uint64_t at = table + uint64_t{i} * l.section_entry_bytes;
    const uint32_t type = Get<uint32_t>(d, at);
    const uint64_t offset = Get<uint64_t>(d, at + 8), length = Get<uint64_t>(d, at + 16);
    const uint64_t uncompressed = Get<uint64_t>(d, at + 24);
    if (offset > size || length > size - offset) {
      section_table.Fail("section " + std::to_string(i) + " (type " + std::to_string(type) + ") at byte " +
                             std::to_string(offset) + " with " + std::to_string(length) +
                             " bytes overruns the " + std::to_string(size) + "-byte file",
                         at);
    }
    if (uncompressed != length) {
      section_table.Fail("section " + std::to_string(i) + " is compressed; format 18 has no compression", at);
    }
    if (type >= 1 && type <= 3) {
      if (present[type]) section_table.Fail(std::string("duplicate ") + kNames[type] + " section", at);
      present[type] = true;
      found[type] = {offset, offset + length};
    }
  }
  for (int type = 1; type <= 3; ++type) {
    if (!present[type] || found[type].first == found[type].second) {
      section_table.Fail(std::string("required ") + kNames[type] + " section is missing", table);
    }
  }
  // Warp validates the operation stream first, then metadata, then memory (the order only decides which
  // fault of several a file reports).
  Cursor ops(d, found[3].first, found[3].second, &what, &fix, "OPERATIONS");
  if (ops.remaining() < 4) ops.Fail("operations section is shorter than its 4-byte op count");
  const uint32_t op_count = ops.Read<uint32_t>("operation count");
  CheckStream(ops, ops.end(), op_count, 0);

  WrpSummary summary;
  summary.device = device;
  summary.version = version;
  Metadata& metadata = summary.metadata;
  Cursor meta(d, found[1].first, found[1].second, &what, &fix, "METADATA");
  CheckMetadata(meta, device, target_arch, &metadata);

  Cursor memory(d, found[2].first, found[2].second, &what, &fix, "MEMORY");
  std::map<uint32_t, uint64_t>& sizes = summary.region_sizes;
  std::map<uint32_t, const uint8_t*> initial_data;
  CheckMemory(memory, &sizes, &initial_data);

  // What Warp's loader checks when it builds meshes and fixes handles (wrpfile.py's _check_references),
  // and what it does not check and would read past or crash on (a triangle index outside the points, a
  // count past its region, no triangles, leaf size 0): the mesh rules of wrpfile.py's _check_meshes.
  for (size_t i = 0; i < metadata.meshes.size(); ++i) {
    const Metadata::Mesh& mesh = metadata.meshes[i];
    const std::string name = "mesh " + std::to_string(i);
    for (const auto& [part, id] :
         {std::pair<const char*, uint32_t>{"points", mesh.points}, {"indices", mesh.indices}}) {
      if (!sizes.count(id)) {
        meta.Fail(name + " " + part + " region " + std::to_string(id) + " does not exist", found[1].first);
      }
    }
    const std::string problem = MeshProblem(mesh, device, sizes, initial_data);
    if (!problem.empty()) meta.Fail(name + " " + problem, found[1].first);
  }
  for (size_t i = 0; i < metadata.ptr_locations.size(); ++i) {
    const Metadata::Ptr& loc = metadata.ptr_locations[i];
    if (loc.count == 0) continue;
    auto region = sizes.find(loc.region);
    if (region == sizes.end()) {
      meta.Fail(
          "pointer location " + std::to_string(i) + " refers to missing region " + std::to_string(loc.region),
          found[1].first);
    }
    const uint64_t rsize = region->second;
    if (loc.offset > rsize || rsize - loc.offset < 8 || (loc.stride == 0 && loc.count != 1) ||
        (loc.stride != 0 && loc.count - 1 > (rsize - loc.offset - 8) / loc.stride)) {
      meta.Fail("pointer location " + std::to_string(i) + " is out of bounds for region " +
                    std::to_string(loc.region),
                found[1].first);
    }
  }
  return summary;
}

}  // namespace

void CheckLoadableWrp(ByteView wrp, const std::string& what, const std::string& fix) {
  ParseLoadableWrp(wrp, what, fix);
}

void CheckBundleAgainstWrp(const Bundle& bundle) {
  const Manifest& manifest = bundle.manifest();
  const std::string fix = "; fix: " + manifest.RebuildHint();
  const std::string wrp_path = bundle.Describe(manifest.wrp);
  const WrpSummary wrp = ParseLoadableWrp(bundle.File(manifest.wrp), wrp_path, manifest.RebuildHint());
  // validity.py's verify_against_wrp, check for check and in its order.
  const auto mismatch = [&](const std::string& what) {
    return Error(bundle.Describe("manifest.json") + ": disagrees with " + wrp_path + ": " + what + fix);
  };
  const std::string wrp_device = wrp.device == 0 ? "cuda" : "cpu";
  if (wrp_device != manifest.device) throw mismatch("device " + manifest.device + " vs " + wrp_device);
  if (wrp.metadata.producer != manifest.warp_version) {
    throw mismatch("Warp version " + manifest.warp_version + " vs " + wrp.metadata.producer);
  }
  if (int64_t{wrp.version} != manifest.format_version) {
    throw mismatch("format version " + std::to_string(manifest.format_version) + " vs " +
                   std::to_string(wrp.version));
  }
  const size_t slash = manifest.wrp.find_last_of('/');
  const std::string wrp_name = slash == std::string::npos ? manifest.wrp : manifest.wrp.substr(slash + 1);
  const std::string modules_dir = wrp_name.substr(0, wrp_name.size() - 4) + "_modules/";
  std::map<std::string, const ModuleRecord*> by_hash;
  for (const ModuleRecord& module : manifest.modules) by_hash.emplace(module.hash, &module);
  std::set<std::string> wrp_hashes;
  for (const ModuleFields& record : wrp.metadata.modules) wrp_hashes.insert(record.hash);
  std::set<std::string> manifest_hashes;
  for (const auto& [hash, module] : by_hash) manifest_hashes.insert(hash);
  if (manifest_hashes != wrp_hashes || by_hash.size() != manifest.modules.size()) {
    throw mismatch("modules (by module hash) differ");
  }
  for (const ModuleFields& record : wrp.metadata.modules) {
    const ModuleRecord& entry = *by_hash.at(record.hash);
    const std::string binary = modules_dir + record.binary;
    const FileRecord* file = manifest.FindFile(binary);
    if (entry.binary != binary || !file)
      throw mismatch("module " + record.name + ": binary " + entry.binary + " vs " + binary);
    // CUDA records carry the binary's digest (Warp's loader checks it); CPU ones do not.
    if (!record.binary_sha256.empty() && record.binary_sha256 != file->sha256) {
      throw Error(bundle.Describe(binary) + ": sha256 " + file->sha256 + " but " + wrp_path + " records " +
                  record.binary_sha256 + " for module " + record.name + fix);
    }
    const std::string source = record.source.empty() ? "" : modules_dir + record.source;
    const FileRecord* source_file = source.empty() ? nullptr : manifest.FindFile(source);
    if (entry.source.value_or("") != source || (!source.empty() && !source_file)) {
      throw mismatch("module " + record.name + ": source " + entry.source.value_or("None") + " vs " +
                     (source.empty() ? "None" : source));
    }
    if (source_file && record.source_sha256 != source_file->sha256) {
      throw Error(bundle.Describe(source) + ": sha256 " + source_file->sha256 + " but " + wrp_path +
                  " records " + record.source_sha256 + " for module " + record.name + fix);
    }
  }
  // Each name once, with the region of its first record (wrpformat.binding_infos).
  std::map<std::string, uint32_t> wrp_bindings;
  for (const auto& [name, region] : wrp.metadata.bindings) wrp_bindings.emplace(name, region);
  std::map<std::string, const BindingRecord*> manifest_bindings;
  for (const BindingRecord& binding : manifest.bindings) manifest_bindings.emplace(binding.name, &binding);
  std::set<std::string> wrp_names, manifest_names;
  for (const auto& [name, region] : wrp_bindings) wrp_names.insert(name);
  for (const auto& [name, binding] : manifest_bindings) manifest_names.insert(name);
  if (wrp_names != manifest_names) throw mismatch("the binding names differ");
  for (const auto& [name, binding] : manifest_bindings) {
    const auto size = wrp.region_sizes.find(wrp_bindings.at(name));
    if (size == wrp.region_sizes.end() || size->second != binding->bytes) {
      throw mismatch("binding " + name + ": " + std::to_string(binding->bytes) + " bytes vs " +
                     (size == wrp.region_sizes.end() ? std::string("None") : std::to_string(size->second)) +
                     " bytes");
    }
  }
  // Which names alias one allocation (region numbers are the capture's labels: the partition is compared).
  std::map<std::string, std::set<std::string>> by_label;
  std::map<uint32_t, std::set<std::string>> by_region;
  for (const auto& [name, binding] : manifest_bindings) by_label[binding->region].insert(name);
  for (const auto& [name, region] : wrp_bindings) by_region[region].insert(name);
  std::set<std::set<std::string>> manifest_groups, wrp_groups;
  for (const auto& [label, names] : by_label) manifest_groups.insert(names);
  for (const auto& [region, names] : by_region) wrp_groups.insert(names);
  if (manifest_groups != wrp_groups) throw mismatch("the bindings that share a region differ");
}

}  // namespace wrp
