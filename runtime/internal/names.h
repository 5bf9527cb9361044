// The one rule for a name a bundle holds, and the one way a message shows a name: wrpkg/names.py's, check
// for check (tests/test_validity_parity.py holds the two readers to one verdict, //tests:names_test to one
// spelling of a shown name).
#pragma once

#include <string>

namespace wrp {

// Why `name` (a tar entry's path, a path a manifest lists: bytes) is not a name a bundle may hold, or "":
// "is not valid UTF-8" (strictly: no overlong form, no surrogate, nothing past U+10FFFF), "holds a control
// character" (U+0000-U+001F, U+007F-U+009F), "holds a backslash", or "is not in Unicode NFC ..." by UAX #15's
// quick check (runtime/internal/nfc_table.h; a MAYBE is refused too).
std::string NameProblem(const std::string& name);

// `name` for a message: valid UTF-8 as it is, and each byte of a control character, a backslash or invalid
// UTF-8 as \xNN, so that no hostile name reaches a terminal or a log raw (wrpkg.names.shown).
std::string Shown(const std::string& name);

}  // namespace wrp
