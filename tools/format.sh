#!/usr/bin/env bash
# Formats the tree the way tests/lint checks it: buildifier, ruff, clang-format, each the
# pinned one (npm's lock, the venv's lock), never the host's.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build @wrp_venv//:ruff @wrp_venv//:clang_format >/dev/null 2>&1
venv="$(bazel info output_base 2>/dev/null)/external/wrp_venv"
ruff=$venv/venv/bin/ruff
clang_format=$(ls "$venv"/venv/lib/python3*/site-packages/clang_format/data/bin/clang-format)
prune=(-path ./third_party/buildifier/node_modules -o -path './bazel-*' -o -path ./.git -o -path ./.devpack)
find . \( "${prune[@]}" \) -prune -o -type f \( -name '*.bzl' -o -name 'BUILD.bazel' -o -name WORKSPACE \) -print0 |
  xargs -0 third_party/buildifier/node_modules/@bazel/buildifier/buildifier-linux_amd64 --lint=off
"$ruff" format --no-cache .
"$ruff" check --fix --no-cache .
find . \( "${prune[@]}" \) -prune -o -type f \( -name '*.cc' -o -name '*.h' \) -print0 | xargs -0 -r "$clang_format" -i
