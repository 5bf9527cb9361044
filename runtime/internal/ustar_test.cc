#include "runtime/internal/ustar.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/internal/names.h"
#include "runtime/internal/test_util.h"

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

  // Issue 40: directories are entries too, each once (docs/bundles.md), and never a file's path.
  std::vector<uint8_t> dir_twice;
  AddEntry(&dir_twice, "b/", "", '5');
  AddEntry(&dir_twice, "b/d/", "", '5');
  AddEntry(&dir_twice, "b/d", "", '5');
  Finish(&dir_twice);
  EXPECT_THAT([&] { wrp::ReadUstar(dir_twice.data(), dir_twice.size(), "t.tar"); },
              wrp::testing::ThrowsError("t.tar: entry b/d appears twice"));
  std::vector<uint8_t> file_then_dir;
  AddEntry(&file_then_dir, "b/a", "1");
  AddEntry(&file_then_dir, "b/a/", "", '5');
  Finish(&file_then_dir);
  EXPECT_THAT([&] { wrp::ReadUstar(file_then_dir.data(), file_then_dir.size(), "t.tar"); },
              wrp::testing::ThrowsError("t.tar: entry b/a/ appears twice"));
  std::vector<uint8_t> dir_then_file;
  AddEntry(&dir_then_file, "b/a/", "", '5');
  AddEntry(&dir_then_file, "b/a", "1");
  Finish(&dir_then_file);
  EXPECT_THAT([&] { wrp::ReadUstar(dir_then_file.data(), dir_then_file.size(), "t.tar"); },
              wrp::testing::ThrowsError("t.tar: entry b/a appears twice"));
}

// Issue 40: one decoding of every name (wrpkg.names): UTF-8 only, no control character or backslash, NFC; a
// name shown escaped, as wrpkg.names.shown spells it (tests/test_names.py: the same cases).
TEST(UstarTest, NamesAreUtf8WithoutControlsOrBackslashInNfc) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"b/caf\xe9/", "'b/caf\\xe9/' is not valid UTF-8"},
      {"b/a\xc0\xaf"
       "b",
       "'b/a\\xc0\\xafb' is not valid UTF-8"},
      {"b/\x1b[2J/", "\"b/\\x1b[2J/\" is not a safe relative path"},
      {"b/a\\b/", "\"b/a\\x5cb/\" is not a safe relative path"},
      {"b/cafe\xcc\x81", "\"b/cafe\xcc\x81\" is not a safe relative path"},
      {"b/a\xc2\x85", "\"b/a\\xc2\\x85\" is not a safe relative path"},
  };
  for (const auto& [path, message] : refused) {
    std::vector<uint8_t> tar;
    AddEntry(&tar, "b/manifest.json", "{}");
    AddEntry(&tar, path, "", path.back() == '/' ? '5' : '0');
    Finish(&tar);
    EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); }, wrp::testing::ThrowsError(message));
  }
  std::vector<uint8_t> tar;
  AddEntry(&tar, "b/caf\xc3\xa9/", "", '5');
  AddEntry(&tar, "b/caf\xc3\xa9/x", "");
  Finish(&tar);
  EXPECT_EQ(wrp::ReadUstar(tar.data(), tar.size(), "t.tar")[0].path, "b/caf\xc3\xa9/x");

  EXPECT_EQ(wrp::NameProblem("\xe2\x84\xab"),
            "is not in Unicode NFC (precomposed, marks in canonical order)");
  EXPECT_EQ(wrp::NameProblem("a\xd6\xb1\xd6\xb0"),  // Hebrew marks of class 11 before 10
            "is not in Unicode NFC (precomposed, marks in canonical order)");
  EXPECT_EQ(wrp::NameProblem("\xd7\xa9\xd6\xb8\xd7\x81"), "");
  EXPECT_EQ(wrp::Shown("golden/x.bin"), "golden/x.bin");
  EXPECT_EQ(wrp::Shown("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(wrp::Shown("a\nerror: forged"), "a\\x0aerror: forged");
  EXPECT_EQ(wrp::Shown("a\xc2\x85"), "a\\xc2\\x85");
  EXPECT_EQ(wrp::Shown("a\\b"), "a\\x5cb");
  EXPECT_EQ(wrp::Shown("caf\xe9"), "caf\\xe9");
  EXPECT_EQ(wrp::Shown("\xe2\x82"), "\\xe2\\x82");
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

// --- pax extended headers: a path too long for ustar's name and prefix fields (wrpkg.build.pack)
// ----------------

using wrp::testing::AppendPaxEntry;
using wrp::testing::AppendPaxHeader;
using wrp::testing::PaxRecord;

namespace {

// A bundle directory of 200 characters and a module file of 130 in it: neither fits a ustar header.
const std::string kLongDir = "b" + std::string(199, 'n');
const std::string kLongModule = "wp_" + std::string(120, 'm') + "_abc.o";

// An archive of the pax header `records` followed by a regular file, then a short plain entry.
std::vector<uint8_t> WithPaxRecords(const std::string& records, char following = '0') {
  std::vector<uint8_t> tar;
  AppendPaxHeader(&tar, records);
  AddEntry(&tar, "b/x", "", following);
  AddEntry(&tar, "b/manifest.json", "{}");
  Finish(&tar);
  return tar;
}

}  // namespace

TEST(UstarPaxTest, ReadsLongPathsOfFilesAndDirectories) {
  ASSERT_EQ(PaxRecord("path", "abc"), "12 path=abc\n");
  ASSERT_EQ(PaxRecord("path", std::string(90, 'a')), "99 path=" + std::string(90, 'a') + "\n");
  ASSERT_EQ(PaxRecord("path", std::string(91, 'a')), "101 path=" + std::string(91, 'a') + "\n");  // not 100
  std::vector<uint8_t> tar;
  AppendPaxEntry(&tar, kLongDir + "/", "", '5');
  AppendPaxEntry(&tar, kLongDir + "/manifest.json", "{}");
  AppendPaxEntry(&tar, kLongDir + "/sim_modules/" + kLongModule, std::string(700, 'x'));
  AddEntry(&tar, "short", "s");  // a plain entry after pax ones
  AppendPaxEntry(&tar, "b/\xc3\xa9t\xc3\xa9/" + std::string(120, 'u'), "utf8");  // UTF-8 is the pax charset
  Finish(&tar);
  std::vector<std::string> directories;
  std::vector<wrp::TarEntry> entries = wrp::ReadUstar(tar.data(), tar.size(), "t.tar", &directories);
  ASSERT_EQ(entries.size(), size_t(4));
  EXPECT_EQ(directories, std::vector<std::string>{kLongDir});
  EXPECT_EQ(entries[0].path, kLongDir + "/manifest.json");
  EXPECT_EQ(Body(entries[0]), "{}");
  EXPECT_EQ(entries[1].path, kLongDir + "/sim_modules/" + kLongModule);
  EXPECT_EQ(Body(entries[1]), std::string(700, 'x'));
  EXPECT_EQ(entries[2].path, "short");
  EXPECT_EQ(entries[3].path, "b/\xc3\xa9t\xc3\xa9/" + std::string(120, 'u'));
}

TEST(UstarPaxTest, ThePaxPathGetsEveryPathRule) {
  for (const std::string& path :
       {"../" + std::string(120, 'e'), "/b/" + std::string(120, 'a'), "b//" + std::string(120, 'c'),
        "b/./" + std::string(120, 'd'), std::string()}) {
    std::vector<uint8_t> tar;
    AppendPaxEntry(&tar, path, "x");
    Finish(&tar);
    EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
                wrp::testing::ThrowsError("entry path \"" + path + "\"", "not a safe relative path"));
  }
  // The same path twice, once from a pax header and once from the ustar fields.
  std::vector<uint8_t> twice;
  AppendPaxEntry(&twice, "b/short", "1");
  AddEntry(&twice, "b/short", "2");
  Finish(&twice);
  EXPECT_THAT([&] { wrp::ReadUstar(twice.data(), twice.size(), "t.tar"); },
              wrp::testing::ThrowsError("b/short appears twice"));
  // A directory's pax path with a payload.
  std::vector<uint8_t> payload;
  AppendPaxHeader(&payload, PaxRecord("path", kLongDir + "/"));
  AddEntry(&payload, "b/", "hidden", '5');
  Finish(&payload);
  EXPECT_THAT([&] { wrp::ReadUstar(payload.data(), payload.size(), "t.tar"); },
              wrp::testing::ThrowsError("directory entry " + kLongDir + "/", "carries 6 bytes of payload"));
}

TEST(UstarPaxTest, RefusesEveryOtherKeyNamingArchiveOffsetAndKey) {
  for (const std::string key :
       {"linkpath", "size", "uid", "mtime", "hdrcharset", "GNU.sparse.name", "path "}) {
    std::vector<uint8_t> tar;
    AddEntry(&tar, "b/first", "1");
    AppendPaxHeader(&tar, PaxRecord("path", "b/x") + PaxRecord(key, "1"));
    AddEntry(&tar, "b/x", "");
    Finish(&tar);
    EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
                wrp::testing::ThrowsError("t.tar: pax extended header at byte 1024",
                                          "key '" + key + "' is not allowed"));
  }
  EXPECT_THAT(
      [&] {
        std::vector<uint8_t> tar = WithPaxRecords(PaxRecord("li\x01nk", "x"));
        wrp::ReadUstar(tar.data(), tar.size(), "t.tar");
      },
      wrp::testing::ThrowsError("key 'li\\x01nk' is not allowed"));
}

TEST(UstarPaxTest, RefusesMalformedRecords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "holds no 'path' record"},
      {PaxRecord("path", "b/x") + PaxRecord("path", "b/y"), "holds 'path' twice"},
      {"012 path=b/x\n", "record at byte 0 of the header: its length has a leading zero"},
      {"0 \n", "its length has a leading zero"},
      {"+12 path=b/x\n", "does not start with a decimal length"},
      {"-12 path=b/x\n", "does not start with a decimal length"},
      {" 12 path=b/x\n", "does not start with a decimal length"},
      {"12path=b/x\n\n", "its length is not followed by a space"},
      {"1", "its length is not followed by a space"},
      {"12", "runs past the end of the header"},
      {"13 path=b/x\n", "runs past the end of the header"},
      {"99999999999999999999999 path=b/x\n", "runs past the end of the header"},
      {"11 path=b/x\n\n", "does not end with a newline"},
      {"3 path=b/x\n", "does not end with a newline"},
      {"3 \n" + PaxRecord("path", "b/x"), "record at byte 0 of the header is not <key>=<value>"},
      {"12 path b/x\n", "is not <key>=<value>"},
      {"12 =path/bx\n", "is not <key>=<value>"},
      {PaxRecord("path", "b/x") + "\n",
       "record at byte 12 of the header does not start with a decimal length"},
      {PaxRecord("path", "b/x") + std::string(3, '\0'), "does not start with a decimal length"},
      {PaxRecord("path", std::string("b/\0x", 4)), "its path holds a NUL byte"},
      {PaxRecord("path", "b/\nx"), "its path holds a control character"},
      {PaxRecord("path", "b/\x7fx"), "its path holds a control character"},
      {PaxRecord("path", "b/\xc2\x85x"), "its path holds a control character"},  // U+0085, a C1 control
      {PaxRecord("path", "b/\xe9t\xe9"), "its path is not valid UTF-8"},         // latin-1
      {PaxRecord("path", "b/\xc0\xafx"), "its path is not valid UTF-8"},         // overlong '/'
      {PaxRecord("path", "b/\xed\xa0\x80x"), "its path is not valid UTF-8"},     // a surrogate
      {PaxRecord("path", "b/\xf4\x90\x80\x80"), "its path is not valid UTF-8"},  // above U+10FFFF
      {PaxRecord("path", "b/\xe2\x82"), "its path is not valid UTF-8"},          // cut short
      {PaxRecord("path", "b/\x01\xff"), "its path is not valid UTF-8"},          // named before the control
  };
  for (const auto& [records, problem] : cases) {
    std::vector<uint8_t> tar = WithPaxRecords(records);
    EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
                wrp::testing::ThrowsError("t.tar: pax extended header at byte 0: ", problem))
        << records;
  }
  // The value may hold '=' and any UTF-8 character that is not a control.
  std::vector<uint8_t> tar = WithPaxRecords(PaxRecord("path", "b/a=b\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_EQ(wrp::ReadUstar(tar.data(), tar.size(), "t.tar").at(0).path, "b/a=b\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST(UstarPaxTest, APaxHeaderIsFollowedByTheFileOrDirectoryItNames) {
  for (char type : {'x', '2', '1', 'g', 'L'}) {
    std::vector<uint8_t> tar = WithPaxRecords(PaxRecord("path", "b/x"), type);
    EXPECT_THAT(
        [&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
        wrp::testing::ThrowsError("t.tar: pax extended header at byte 0 is followed by ",
                                  type == 'x' ? "another pax header" : std::string("tar type '") + type));
  }
  std::vector<uint8_t> at_end;
  AddEntry(&at_end, "b/x", "1");
  AppendPaxHeader(&at_end, PaxRecord("path", "b/y"));
  Finish(&at_end);
  EXPECT_THAT([&] { wrp::ReadUstar(at_end.data(), at_end.size(), "t.tar"); },
              wrp::testing::ThrowsError("pax extended header at byte 1024 is followed by no entry"));
  at_end.resize(512 * 4);  // no end-of-archive marker either
  EXPECT_THAT([&] { wrp::ReadUstar(at_end.data(), at_end.size(), "t.tar"); },
              wrp::testing::ThrowsError("pax extended header at byte 1024 is followed by no entry"));
}

TEST(UstarPaxTest, RefusesGlobalHeadersGnuLongNamesAndAbsurdSizes) {
  const std::vector<std::pair<char, std::string>> types = {
      {'g', "(a pax global header)"}, {'L', "(a GNU long name)"}, {'K', "(a GNU long link name)"}};
  for (const auto& [type, what] : types) {
    std::vector<uint8_t> tar;
    AppendPaxHeader(&tar, PaxRecord("path", "b/x"), type);
    AddEntry(&tar, "b/x", "");
    Finish(&tar);
    EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
                wrp::testing::ThrowsError(std::string("tar type '") + type + "' " + what));
  }
  // Over 64 KiB, inside the archive: refused before a record is read.
  std::string big = PaxRecord("path", "b/" + std::string(70000, 'a'));
  std::vector<uint8_t> tar = WithPaxRecords(big);
  EXPECT_THAT([&] { wrp::ReadUstar(tar.data(), tar.size(), "t.tar"); },
              wrp::testing::ThrowsError("t.tar: tar header at byte 0: pax extended header of " +
                                        std::to_string(big.size()) + " bytes, over the limit of 65536"));
  // 64 KiB exactly is read.
  std::string limit = PaxRecord("path", "b/" + std::string(65536 - 14, 'a'));
  ASSERT_EQ(limit.size(), size_t(65536));
  tar = WithPaxRecords(limit);
  EXPECT_EQ(wrp::ReadUstar(tar.data(), tar.size(), "t.tar").at(0).path.size(), size_t(65536 - 12));
  // A size that runs past the archive (a huge one included): the truncation refusal, nothing allocated.
  for (long long size : {2000LL, 077777777777LL}) {
    std::vector<uint8_t> past;
    AppendPaxHeader(&past, PaxRecord("path", "b/x"), 'x', size);
    Finish(&past);
    EXPECT_THAT([&] { wrp::ReadUstar(past.data(), past.size(), "t.tar"); },
                wrp::testing::ThrowsError("entry ././@PaxHeader claims", "(truncated archive)"));
  }
}
