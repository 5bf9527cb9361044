#!/usr/bin/env bash
# Fails when buildifier, ruff or clang-format would change a file of the source tree. Each
# formatter is pinned exactly (buildifier by npm's lock, ruff and clang-format by the venv's),
# never the host's, so the verdict does not depend on the host's Debian release.
#     lint_test.sh RUFF WORKSPACE CLANG_FORMAT
# It reads the tree itself (found through the WORKSPACE symlink in runfiles), so it is
# tagged `external`: never cached, always re-run. Fix what it reports with tools/format.sh.
set -uo pipefail
abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
ruff=$(abspath "$1")
clang_format=$(abspath "$3")
root=$(dirname "$(readlink -f "$2")")
cd "$root" || exit 1
buildifier=third_party/buildifier/node_modules/@bazel/buildifier/buildifier-linux_amd64
if [ ! -x "$buildifier" ]; then
  echo "FAIL: buildifier is not installed at $root/$buildifier: run tools/setup.sh (npm ci in third_party/buildifier)"
  exit 1
fi
"$clang_format" --version | grep -q "clang-format version 14.0.6 " || {
  echo "FAIL: $3 is not the pinned clang-format 14.0.6 (toolchains/python/requirements.in)"
  exit 1
}
prune=(-path ./third_party/buildifier/node_modules -o -path './bazel-*' -o -path ./.git -o -path ./.devpack -o -name __pycache__)
failed=0
passed=0
check() {
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "FAIL: $what would change files (see above); run tools/format.sh"
    failed=$((failed + 1))
  fi
}
mapfile -t starlark < <(find . \( "${prune[@]}" \) -prune -o -type f \( -name '*.bzl' -o -name 'BUILD.bazel' -o -name BUILD -o -name WORKSPACE \) -print | sort)
check buildifier "$buildifier" --mode=check --lint=off "${starlark[@]}"
check "ruff format" "$ruff" format --check --no-cache .
check "ruff check" "$ruff" check --no-cache .
mapfile -t cxx < <(find . \( "${prune[@]}" \) -prune -o -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cpp' \) -print | sort)
if [ "${#cxx[@]}" -gt 0 ]; then
  check clang-format "$clang_format" --dry-run -Werror "${cxx[@]}"
fi
echo "lint: ${#starlark[@]} Starlark files, ${#cxx[@]} C++ files"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
