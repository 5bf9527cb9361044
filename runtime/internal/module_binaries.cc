#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/internal/fatbin.h"
#include "runtime/internal/sha256.h"
#include "runtime/internal/wrp_check.h"
#include "runtime/internal/wrp_cursor.h"

namespace wrp {

using wrp_format::Get;

std::string ElfProblem(ByteView image) {
  constexpr uint64_t kHeader = 64, kSection = 64, kProgram = 56;
  constexpr uint16_t kEmCuda = 190;
  constexpr uint32_t kNobits = 8;
  const uint64_t size = image.size;
  const uint8_t* d = image.data;
  if (size < kHeader) return std::to_string(size) + " bytes, shorter than an ELF header";
  if (std::memcmp(d,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return "no ELF magic";
  if (d[4] != 2 || d[5] != 1 || d[6] != 1 || Get<uint32_t>(d, 20) != 1)
    return "not a little-endian ELF64 of version 1";
  const uint16_t machine = Get<uint16_t>(d, 18);
  if (machine != kEmCuda) return "ELF machine " + std::to_string(machine) + ", not CUDA (190)";
  const uint64_t phoff = Get<uint64_t>(d, 32), shoff = Get<uint64_t>(d, 40);
  const uint16_t ehsize = Get<uint16_t>(d, 52), phentsize = Get<uint16_t>(d, 54),
                 phnum = Get<uint16_t>(d, 56);
  const uint16_t shentsize = Get<uint16_t>(d, 58), shnum = Get<uint16_t>(d, 60),
                 shstrndx = Get<uint16_t>(d, 62);
  if (ehsize != kHeader) return "ELF header size " + std::to_string(ehsize) + ", not 64";
  if (phnum && (phentsize != kProgram || phoff > size || phnum * kProgram > size - phoff)) {
    return std::to_string(phnum) + " program headers at byte " + std::to_string(phoff) +
           " lie outside the image";
  }
  if (shnum && (shentsize != kSection || shoff > size || shnum * kSection > size - shoff)) {
    return std::to_string(shnum) + " section headers at byte " + std::to_string(shoff) +
           " lie outside the image";
  }
  if (shnum && shstrndx >= shnum) {
    return "section-name table index " + std::to_string(shstrndx) + " is not below the section count " +
           std::to_string(shnum);
  }
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + i * kSection;
    const uint32_t type = Get<uint32_t>(d, at + 4);
    const uint64_t offset = Get<uint64_t>(d, at + 24), length = Get<uint64_t>(d, at + 32);
    if (type != kNobits && (offset > size || length > size - offset)) {
      return "section " + std::to_string(i) + " (" + std::to_string(length) + " bytes at byte " +
             std::to_string(offset) + ") lies outside the image";
    }
  }
  return "";
}

void CheckModuleBinaries(const Bundle& bundle) {
  const Manifest& manifest = bundle.manifest();
  if (manifest.device != "cuda") return;
  const std::string fix = "; fix: " + manifest.RebuildHint();
  for (const ModuleRecord& module : manifest.modules) {
    if (module.binary_kind == "ptx") continue;
    const ByteView data = bundle.File(module.binary);
    const std::string name = bundle.Describe(module.binary);
    if (!IsFatbin(data)) {
      const std::string problem = ElfProblem(data);
      if (!problem.empty()) throw Error(name + ": not a CUDA ELF cubin: " + problem + fix);
      continue;
    }
    const std::vector<FatbinImage> images = ParseFatbin(data, name);
    for (const SassRecord& record : module.sass) {
      const FatbinImage* image = nullptr;
      int matching = 0;
      for (const FatbinImage& candidate : images) {
        if (candidate.kind == FatbinImage::Kind::kElf && candidate.arch == record.arch &&
            !candidate.compressed) {
          image = &candidate;
          ++matching;
        }
      }
      if (matching != 1) {
        throw Error(name + ": holds " + std::to_string(matching) + " uncompressed SASS images for " +
                    record.arch + "; manifest.json lists one" + fix);
      }
      const std::string what = name + ": its " + record.arch + " image";
      if (image->size != record.size) {
        throw Error(what + " is " + std::to_string(image->size) + " bytes; manifest.json says " +
                    std::to_string(record.size) + fix);
      }
      const ByteView bytes{data.data + image->offset, image->size};
      const std::string digest = Sha256::HexDigest(bytes.data, bytes.size);
      if (digest != record.sha256) {
        throw Error(what + ": sha256 is " + digest + " but manifest.json records " + record.sha256 + fix);
      }
      const std::string problem = ElfProblem(bytes);
      if (!problem.empty()) throw Error(what + " is not a CUDA ELF cubin: " + problem + fix);
    }
  }
}

}  // namespace wrp
