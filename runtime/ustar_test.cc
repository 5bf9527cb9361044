#include "runtime/ustar.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/test_util.h"

namespace {

using wrp::testing::AppendTarEntry;

void AddEntry(std::vector<uint8_t>* tar, const std::string& path, const std::string& body, char type = '0',
              const std::string& prefix = "") {
  AppendTarEntry(tar, path, body, type, prefix);
}

void Finish(std::vector<uint8_t>* tar) { wrp::testing::FinishTar(tar); }

std::string Body(const wrp::TarEntry& e) {
  return std::string(reinterpret_cast<const char*>(e.data), e.size);
}

}  // namespace

TEST(UstarTest, ReadsFilesSkipsDirectoriesJoinsPrefix) {
  std::vector<uint8_t> tar;
  AddEntry(&tar, "b/", "", '5');
  AddEntry(&tar, "b/manifest.json", "{}");
  AddEntry(&tar, "b/empty", "");
  AddEntry(&tar, "mod.o", std::string(700, 'x'), '0', "b/sim_modules");
  Finish(&tar);
  std::vector<wrp::TarEntry> entries = wrp::ReadUstar(tar.data(), tar.size(), "t.tar");
  EXPECT_EQ(entries.size(), size_t(3));
  EXPECT_EQ(entries[0].path, "b/manifest.json");
  EXPECT_EQ(Body(entries[0]), "{}");
  EXPECT_EQ(entries[1].size, size_t(0));
  EXPECT_EQ(entries[2].path, "b/sim_modules/mod.o");
  EXPECT_EQ(Body(entries[2]), std::string(700, 'x'));
  // Zero-copy: entries point into the caller's buffer.
  EXPECT_TRUE(entries[0].data > tar.data() && entries[0].data < tar.data() + tar.size());
}

TEST(UstarTest, RejectsDamage) {
  std::vector<uint8_t> tar;
  AddEntry(&tar, "b/manifest.json", "{\"a\": 1}");
  AddEntry(&tar, "b/x.bin", std::string(600, 'y'));
  Finish(&tar);

  std::vector<uint8_t> bad_checksum = tar;
  bad_checksum[10] ^= 1;  // inside the first header's name
  EXPECT_THAT([&] { wrp::ReadUstar(bad_checksum.data(), bad_checksum.size(), "t.tar"); },
              wrp::testing::ThrowsError("t.tar", "header checksum mismatch"));

  // Cut inside the second entry's data, then pad to a block multiple as a careless copy might not.
  std::vector<uint8_t> truncated(tar.begin(), tar.begin() + 512 * 3);
  EXPECT_THAT([&] { wrp::ReadUstar(truncated.data(), truncated.size(), "t.tar"); },
              wrp::testing::ThrowsError("b/x.bin", "truncated"));

  std::vector<uint8_t> odd_size(tar.begin(), tar.end() - 100);
  EXPECT_THAT([&] { wrp::ReadUstar(odd_size.data(), odd_size.size(), "t.tar"); },
              wrp::testing::ThrowsError("not a multiple of 512"));

  std::vector<uint8_t> no_magic = tar;
  std::memcpy(no_magic.data() + 257, "gnu  ", 5);
  EXPECT_THAT([&] { wrp::ReadUstar(no_magic.data(), no_magic.size(), "t.tar"); },
              wrp::testing::ThrowsError("\"ustar\" magic"));
}

TEST(UstarTest, RejectsLinksEscapesAndDuplicates) {
  std::vector<uint8_t> link;
  AddEntry(&link, "b/l", "", '2');
  Finish(&link);
  EXPECT_THAT([&] { wrp::ReadUstar(link.data(), link.size(), "t.tar"); },
              wrp::testing::ThrowsError("b/l", "tar type '2'"));

  std::vector<uint8_t> escape;
  AddEntry(&escape, "b/../../etc/passwd", "x");
  Finish(&escape);
  EXPECT_THAT([&] { wrp::ReadUstar(escape.data(), escape.size(), "t.tar"); },
              wrp::testing::ThrowsError("not a safe relative path"));

  std::vector<uint8_t> twice;
  AddEntry(&twice, "b/a", "1");
  AddEntry(&twice, "b/a", "2");
  Finish(&twice);
  EXPECT_THAT([&] { wrp::ReadUstar(twice.data(), twice.size(), "t.tar"); },
              wrp::testing::ThrowsError("b/a appears twice"));
}

TEST(UstarTest, EmptyArchive) {
  std::vector<uint8_t> tar(1024, 0);
  EXPECT_TRUE(wrp::ReadUstar(tar.data(), tar.size(), "t.tar").empty());
}

TEST(UstarTest, DirectoryEntriesArePlainRelativePathsWithoutPayload) {
  std::vector<uint8_t> good;
  AddEntry(&good, "b/", "", '5');
  AddEntry(&good, "b/golden", "", '5');  // a directory without the trailing '/' is one too
  AddEntry(&good, "b/golden/x.bin", "x");
  Finish(&good);
  std::vector<std::string> directories;
  EXPECT_EQ(wrp::ReadUstar(good.data(), good.size(), "t.tar", &directories).size(), size_t(1));
  EXPECT_EQ(directories.size(), size_t(2));
  EXPECT_EQ(directories.at(0), "b");
  EXPECT_EQ(directories.at(1), "b/golden");

  for (const char* path : {"/b/", "/", "b/../", "../", "b/../../etc/", "b//c/", "./b/", "b/./c/", "b//"}) {
    std::vector<uint8_t> tar;
    AddEntry(&tar, path, "", '5');
    Finish(&tar);
    EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
                wrp::testing::ThrowsError("t.tar", std::string("directory entry path \"") + path + "\"",
                                          "not a safe relative path"));
  }

  // A payload behind a directory header: a reader that skips directories would not see these bytes.
  std::vector<uint8_t> payload;
  AddEntry(&payload, "b/", "hidden bytes", '5');
  Finish(&payload);
  EXPECT_THAT([&] { wrp::ReadUstar(payload.data(), payload.size(), "t.tar"); },
              wrp::testing::ThrowsError("t.tar", "directory entry b/", "carries 12 bytes of payload"));
}

TEST(UstarTest, FilePathsHaveNoEmptyOrDotComponents) {
  for (const char* path : {"b//x", "./b/x", "b/./x", "b/x/", "/b/x", "b/..", ".."}) {
    std::vector<uint8_t> tar;
    AddEntry(&tar, path, "x");
    Finish(&tar);
    EXPECT_THAT(
        [&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
        wrp::testing::ThrowsError(std::string("entry path \"") + path + "\"", "not a safe relative path"));
  }
  // Names merely containing dots are ordinary.
  std::vector<uint8_t> tar;
  AddEntry(&tar, "b/..x/.y", "x");
  Finish(&tar);
  EXPECT_EQ(wrp::ReadUstar(tar.data(), tar.size(), "t.tar").at(0).path, "b/..x/.y");
}
