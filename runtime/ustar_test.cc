#include "runtime/ustar.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/test_util.h"

namespace {

// Appends one ustar entry the way Python's tarfile (USTAR_FORMAT) writes it.
void AddEntry(std::vector<uint8_t>* tar, const std::string& path, const std::string& body, char type = '0',
              const std::string& prefix = "") {
  uint8_t header[512] = {};
  std::memcpy(header, path.data(), path.size());
  std::snprintf(reinterpret_cast<char*>(header + 100), 8, "%07o", 0644);
  std::snprintf(reinterpret_cast<char*>(header + 108), 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(header + 116), 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(header + 124), 12, "%011o", unsigned(body.size()));
  std::snprintf(reinterpret_cast<char*>(header + 136), 12, "%011o", 0);
  header[156] = uint8_t(type);
  std::memcpy(header + 257,
              "ustar\0"
              "00",
              8);
  std::memcpy(header + 345, prefix.data(), prefix.size());
  std::memset(header + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t b : header) sum += b;
  std::snprintf(reinterpret_cast<char*>(header + 148), 8, "%06o", sum);
  tar->insert(tar->end(), header, header + 512);
  tar->insert(tar->end(), body.begin(), body.end());
  tar->resize((tar->size() + 511) / 512 * 512, 0);
}

void Finish(std::vector<uint8_t>* tar) { tar->resize(tar->size() + 1024, 0); }

std::string Body(const wrp::TarEntry& e) {
  return std::string(reinterpret_cast<const char*>(e.data), e.size);
}

}  // namespace

WRP_TEST(ReadsFilesSkipsDirectoriesJoinsPrefix) {
  std::vector<uint8_t> tar;
  AddEntry(&tar, "b/", "", '5');
  AddEntry(&tar, "b/manifest.json", "{}");
  AddEntry(&tar, "b/empty", "");
  AddEntry(&tar, "mod.o", std::string(700, 'x'), '0', "b/sim_modules");
  Finish(&tar);
  std::vector<wrp::TarEntry> entries = wrp::ReadUstar(tar.data(), tar.size(), "t.tar");
  CHECK_EQ(entries.size(), size_t(3));
  CHECK_EQ(entries[0].path, "b/manifest.json");
  CHECK_EQ(Body(entries[0]), "{}");
  CHECK_EQ(entries[1].size, size_t(0));
  CHECK_EQ(entries[2].path, "b/sim_modules/mod.o");
  CHECK_EQ(Body(entries[2]), std::string(700, 'x'));
  // Zero-copy: entries point into the caller's buffer.
  CHECK(entries[0].data > tar.data() && entries[0].data < tar.data() + tar.size());
}

WRP_TEST(RejectsDamage) {
  std::vector<uint8_t> tar;
  AddEntry(&tar, "b/manifest.json", "{\"a\": 1}");
  AddEntry(&tar, "b/x.bin", std::string(600, 'y'));
  Finish(&tar);

  std::vector<uint8_t> bad_checksum = tar;
  bad_checksum[10] ^= 1;  // inside the first header's name
  CHECK_THROWS_WITH(wrp::ReadUstar(bad_checksum.data(), bad_checksum.size(), "t.tar"), "t.tar",
                    "header checksum mismatch");

  // Cut inside the second entry's data, then pad to a block multiple as a careless copy might not.
  std::vector<uint8_t> truncated(tar.begin(), tar.begin() + 512 * 3);
  CHECK_THROWS_WITH(wrp::ReadUstar(truncated.data(), truncated.size(), "t.tar"), "b/x.bin", "truncated");

  std::vector<uint8_t> odd_size(tar.begin(), tar.end() - 100);
  CHECK_THROWS_WITH(wrp::ReadUstar(odd_size.data(), odd_size.size(), "t.tar"), "not a multiple of 512");

  std::vector<uint8_t> no_magic = tar;
  std::memcpy(no_magic.data() + 257, "gnu  ", 5);
  CHECK_THROWS_WITH(wrp::ReadUstar(no_magic.data(), no_magic.size(), "t.tar"), "\"ustar\" magic");
}

WRP_TEST(RejectsLinksEscapesAndDuplicates) {
  std::vector<uint8_t> link;
  AddEntry(&link, "b/l", "", '2');
  Finish(&link);
  CHECK_THROWS_WITH(wrp::ReadUstar(link.data(), link.size(), "t.tar"), "b/l", "tar type '2'");

  std::vector<uint8_t> escape;
  AddEntry(&escape, "b/../../etc/passwd", "x");
  Finish(&escape);
  CHECK_THROWS_WITH(wrp::ReadUstar(escape.data(), escape.size(), "t.tar"), "not a safe relative path");

  std::vector<uint8_t> twice;
  AddEntry(&twice, "b/a", "1");
  AddEntry(&twice, "b/a", "2");
  Finish(&twice);
  CHECK_THROWS_WITH(wrp::ReadUstar(twice.data(), twice.size(), "t.tar"), "b/a appears twice");
}

WRP_TEST(EmptyArchive) {
  std::vector<uint8_t> tar(1024, 0);
  CHECK(wrp::ReadUstar(tar.data(), tar.size(), "t.tar").empty());
}
