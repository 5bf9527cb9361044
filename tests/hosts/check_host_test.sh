#!/usr/bin/env bash
# tools/check_host.sh RELEASE from the source tree itself (found through the WORKSPACE symlink in
# runfiles): it clones that tree's HEAD.
#     check_host_test.sh WORKSPACE RELEASE
set -euo pipefail
root=$(dirname "$(readlink -f "$1")")
exec "$root/tools/check_host.sh" "$2" --work "${TEST_TMPDIR:-/var/tmp}/check-host-$2"
