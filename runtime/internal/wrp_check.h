// What a load would refuse in a bundle's deployed bytes, checked before Warp or the driver gets them: the
// .wrp's structure (Warp 1.19's loader rules: header, section table, the operation stream as
// apic_validate_operation_stream walks it, metadata, memory regions) within the bounds of
// wrpkg/schemas/wrp_limits.json, and each CUDA module binary's fatbin structure and SASS images. The C++ side
// of wrpkg.reader.validity's parse_loadable_wrp and verify_module_binaries (wrpkg/wrpformat), rule for rule,
// so that `verify` and every load give one verdict (docs/security.md).
#pragma once

#include <string>

#include "runtime/bundle.h"

namespace wrp {

// Throws wrp::Error naming `what`, the section, the byte offset and the rule broken (an operation's index
// among them), followed by "; fix: " and `fix`, unless `wrp` is a .wrp Warp's loader accepts.
void CheckLoadableWrp(ByteView wrp, const std::string& what, const std::string& fix);

// Parses the verified .wrp of `bundle` as CheckLoadableWrp does, and throws wrp::Error naming manifest.json
// (or the module file whose digest differs) unless the manifest describes that .wrp: its device, Warp and
// format versions, modules (binary and source names and digests), bindings (names and sizes) and which
// bindings share a region. wrpkg.reader.validity.verify_against_wrp, rule for rule; a load checks the same
// through Warp's C API.
void CheckBundleAgainstWrp(const Bundle& bundle);

// Throws wrp::Error naming the file unless every CUDA module binary of `bundle` is a well-formed fatbin (or a
// lone CUDA ELF cubin) holding, for each SASS record of the manifest, one uncompressed image of that name, of
// the recorded size and sha256, that is a CUDA ELF whose headers and sections lie inside it. Reads the
// binaries through Bundle::File (verified against their digests first).
void CheckModuleBinaries(const Bundle& bundle);

// Why `image` is not a well-formed CUDA ELF (ELF64, little-endian, EM_CUDA, every header and section inside
// it), or "": wrpkg.reader.fatbin.elf_problem.
std::string ElfProblem(ByteView image);

}  // namespace wrp
