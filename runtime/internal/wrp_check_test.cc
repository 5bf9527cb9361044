#include "runtime/internal/wrp_check.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/internal/test_util.h"

namespace {

// The real pipeline's CPU .wrp (//runtime:particles_cpu_wrp), which Warp loads.
std::vector<uint8_t> GoodWrp() {
  std::ifstream in(wrp::testing::Args().at(0) + "/sim.wrp", std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t SectionOffset(const std::vector<uint8_t>& wrp, uint32_t type) {
  uint32_t count;
  uint64_t table;
  std::memcpy(&count, wrp.data() + 12, 4);
  std::memcpy(&table, wrp.data() + 16, 8);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t t;
    uint64_t offset;
    std::memcpy(&t, wrp.data() + table + 32 * i, 4);
    std::memcpy(&offset, wrp.data() + table + 32 * i + 8, 8);
    if (t == type) return offset;
  }
  return 0;
}

template <typename T>
void Put(std::vector<uint8_t>* data, uint64_t at, T value) {
  std::memcpy(data->data() + at, &value, sizeof value);
}

void Check(const std::vector<uint8_t>& wrp) {
  wrp::CheckLoadableWrp(wrp::ByteView{wrp.data(), wrp.size()}, "sim.wrp",
                        "rebuild //runtime:particles_cpu_wrp");
}

// A CUDA ELF header (64 bytes) with no program or section headers.
std::vector<uint8_t> ElfHeader() {
  std::vector<uint8_t> elf(64, 0);
  std::memcpy(elf.data(),
              "\x7f"
              "ELF",
              4);
  elf[4] = 2;  // ELF64
  elf[5] = 1;  // little-endian
  elf[6] = 1;
  Put<uint16_t>(&elf, 18, 190);  // EM_CUDA
  Put<uint32_t>(&elf, 20, 1);
  Put<uint16_t>(&elf, 52, 64);
  return elf;
}

}  // namespace

TEST(WrpCheckTest, TheBuiltWrpIsLoadable) { Check(GoodWrp()); }

// Each bound of wrpkg/schemas/wrp_limits.json and each rule of Warp's validator refused by name, with the
// file and the fix: the C++ side of tests/hostile_corpus.py's WRP_CASES (which //tests:validity_parity_test
// runs through both readers).
TEST(WrpCheckTest, RefusesWhatWarpsLoaderRefuses) {
  EXPECT_THAT([] { Check(std::vector<uint8_t>(10)); },
              wrp::testing::ThrowsError(
                  "sim.wrp: header at byte 0: file is 10 bytes, smaller than the 64-byte header",
                  "fix: rebuild //runtime:particles_cpu_wrp"));
  std::vector<uint8_t> wrp = GoodWrp();
  const uint64_t ops = SectionOffset(wrp, 3), memory = SectionOffset(wrp, 2);
  ASSERT_NE(ops, 0u);
  ASSERT_NE(memory, 0u);
  std::vector<uint8_t> bad = wrp;
  Put<uint32_t>(&bad, ops, 0xFFFFFFFF);
  EXPECT_THAT([&] { Check(bad); },
              wrp::testing::ThrowsError("OPERATIONS at byte", "operation count 4294967295 cannot fit"));
  bad = wrp;
  Put<uint32_t>(&bad, ops + 8, 4);
  EXPECT_THAT([&] { Check(bad); }, wrp::testing::ThrowsError("operation 0 declares size 4"));
  bad = wrp;
  Put<uint64_t>(&bad, memory + 4 + 8, uint64_t{1} << 50);
  EXPECT_THAT([&] { Check(bad); },
              wrp::testing::ThrowsError("MEMORY at byte", "more than the 1099511627776 a region may have"));
  bad = wrp;
  Put<uint32_t>(&bad, 4, 17);
  EXPECT_THAT([&] { Check(bad); }, wrp::testing::ThrowsError("unsupported format version 17, expected 18"));
}

TEST(WrpCheckTest, ElfStructure) {
  EXPECT_EQ(wrp::ElfProblem(wrp::ByteView{nullptr, 0}), "0 bytes, shorter than an ELF header");
  std::vector<uint8_t> elf = ElfHeader();
  EXPECT_EQ(wrp::ElfProblem(wrp::ByteView{elf.data(), elf.size()}), "");
  Put<uint16_t>(&elf, 18, 62);
  EXPECT_EQ(wrp::ElfProblem(wrp::ByteView{elf.data(), elf.size()}), "ELF machine 62, not CUDA (190)");
  elf = ElfHeader();
  Put<uint64_t>(&elf, 40, 64);  // section headers right after the header...
  Put<uint16_t>(&elf, 58, 64);
  Put<uint16_t>(&elf, 60, 1);  // ...one of them, which is not there
  EXPECT_EQ(wrp::ElfProblem(wrp::ByteView{elf.data(), elf.size()}),
            "1 section headers at byte 64 lie outside the image");
  elf.resize(128, 0);
  Put<uint32_t>(&elf, 64 + 4, 1);     // PROGBITS
  Put<uint64_t>(&elf, 64 + 24, 100);  // at byte 100...
  Put<uint64_t>(&elf, 64 + 32, 100);  // ...100 bytes: past the 128-byte image
  EXPECT_EQ(wrp::ElfProblem(wrp::ByteView{elf.data(), elf.size()}),
            "section 0 (100 bytes at byte 100) lies outside the image");
}
