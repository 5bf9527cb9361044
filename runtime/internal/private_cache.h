// Where the runtime puts files Warp must read from disk: a per-user directory that nobody else can write,
// never the bundle's own directory (which may be shared, read-only, or a Bazel output).
#pragma once

#include <string>

#include "runtime/bundle.h"

namespace wrp {

// $WRP_CACHE_DIR, else $XDG_CACHE_HOME/rules_warp, else $HOME/.cache/rules_warp, else /tmp/rules_warp-<uid>.
// Created with mode 0700 when missing. Throws wrp::Error when it is a symlink, not a directory, not owned by
// this user, or writable by group or others.
std::string PrivateCacheDirectory();

// Writes the bundle's .wrp and <stem>_modules/ files, from the bytes the Bundle verified, under
// <PrivateCacheDirectory()>/<content hash>/ (each file written to a temp name, then renamed over). Files
// Warp adds there (its compiled-source cache) are kept. Returns the path of the written .wrp.
std::string MaterializeForWarp(const Bundle& bundle);

}  // namespace wrp
