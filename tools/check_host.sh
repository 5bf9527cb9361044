#!/usr/bin/env bash
# Runs the README's two commands on a fresh machine of a Debian release, to show that set-up,
# the build and the tests hold there as on this host:
#   1. makes a fresh root filesystem of RELEASE with mmdebstrap (Debian's `apt` variant: no
#      python3, no compiler, no umount; only what the project's own set-up installs gets in),
#      trusting the host's certificate authorities (copied in; pip and npm told to use them)
#   2. puts a clean clone of this checkout's HEAD in it (commit first: uncommitted changes
#      are not part of the check)
#   3. enters it as tools/gpu/enter_runner.sh enters the runner root (a private mount
#      namespace, pivot_root, the host's tree unmounted), with the host's network, and runs
#      `tools/dev.sh build` then `tools/dev.sh test` there
#   4. prints the test summary and the content hashes of //models:sim_wrp and
#      //models:sim_cpu_wrp, and exits non-zero if either command failed
#
#     tools/check_host.sh RELEASE [--work DIR] [--keep]
#     (RELEASE: a row of toolchains/host_releases.tsv, e.g. bookworm or trixie; WORK:
#     /var/tmp/rules_warp-host-RELEASE, removed afterwards unless --keep; the whole log is
#     WORK/check.log. Needs root, mmdebstrap (tools/setup.sh --containers) and the
#     registries; on two cores one release takes about an hour.)
# //tests/hosts:check_host_<release>_test (tagged manual) runs it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
release=
work=
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -*) echo "check_host.sh: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$release" ] || { echo "check_host.sh: one release at a time" >&2; exit 2; }; release=$1; shift ;;
  esac
done
[ -n "$release" ] || { echo "usage: check_host.sh RELEASE [--work DIR] [--keep]" >&2; exit 2; }
"$repo/tools/host_release.sh" --release "$release" release >/dev/null
[ "$(id -u)" = 0 ] || { echo "check_host.sh: needs root (mmdebstrap, mount namespaces)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "check_host.sh: mmdebstrap is missing: run tools/setup.sh --containers" >&2; exit 1; }
work=${work:-/var/tmp/rules_warp-host-$release}
root=$work/root
log=$work/check.log
say() { echo "check_host.sh [$release]: $*" >&2; }
mkdir -p "$work"
exec 9>"$work/.lock"
flock -n 9 || { say "another check is using $work"; exit 1; }
rm -rf "$root"
cleanup() { [ "$keep" = 1 ] || rm -rf "$root"; }
trap cleanup EXIT

# The host's certificate authorities, as files: the registries may be reached through a
# TLS-inspecting proxy whose CA only the host's store has. Debian's ca-certificates folds
# /usr/local/share/ca-certificates into the bundle; pip (which has its own bundle) and npm
# (Node's) are pointed at it, as this host's own configuration does.
cas=$work/cas
rm -rf "$cas"
mkdir -p "$cas"
if [ -d /usr/local/share/ca-certificates ]; then
  find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$cas/" \;
fi
bundle=/etc/ssl/certs/ca-certificates.crt
say "mmdebstrap $release -> $root ($(ls "$cas" | wc -l) host CA file(s))"
mmdebstrap --variant=apt --include=ca-certificates \
  --customize-hook="mkdir -p \"\$1/usr/local/share/ca-certificates\"" \
  --customize-hook="sync-in '$cas' /usr/local/share/ca-certificates" \
  --customize-hook='chroot "$1" update-ca-certificates >/dev/null' \
  --customize-hook="printf '[global]\ncert = $bundle\n' >\"\$1/etc/pip.conf\"" \
  --customize-hook="printf 'cafile=$bundle\n' >\"\$1/etc/npmrc\"" \
  "$release" "$root" >"$work/mmdebstrap.log" 2>&1 || {
  tail -20 "$work/mmdebstrap.log" >&2
  say "mmdebstrap failed (whole log: $work/mmdebstrap.log)"
  exit 1
}
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

mkdir -p "$root/work"
git clone --quiet --no-hardlinks "$repo" "$root/work/rules_warp"
say "clone of $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD || echo ' (the checkout has uncommitted changes: not in the check)')"

# Inside: the two commands, each one's exit status, then the hashes the build wrote.
inner='
cd /work/rules_warp
bash tools/dev.sh build; build=$?
bash .ci/run; test=$?
echo "@@ release: $(. /etc/os-release; echo "$PRETTY_NAME")"
echo "@@ tools/dev.sh build: exit $build"
echo "@@ tools/dev.sh test: exit $test"
for model in sim_wrp sim_cpu_wrp; do
  echo "@@ //models:$model content hash: $(cut -d" " -f1 "bazel-bin/models/$model.sha256" 2>/dev/null || echo missing)"
done
# The Bazel server would outlive the command, and with it this mount namespace.
bazel shutdown >/dev/null 2>&1
[ "$build" = 0 ] && [ "$test" = 0 ]
'
say "running the README's two commands inside (log: $log)"
set +e
# No GPU inside even on a GPU host: the check is of a CI machine (tools/dev.sh picks --config=gpu
# where nvidia-smi finds one).
NVIDIA_VISIBLE_DEVICES=none "$repo/tools/gpu/enter_runner.sh" --root "$root" -w / -- /bin/bash -c "$inner" >"$log" 2>&1 9>&-
rc=$?
set -e
# The .ci/run summary line ("N passed, M failed") and the lines marked above.
grep -E '^[0-9]+ passed, [0-9]+ failed$|^@@ ' "$log" | sed 's/^@@ //'
grep -E '^//[^ ]+ +.*(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log" || true
[ "$rc" = 0 ] || say "failed (exit $rc); the whole log is $log"
exit "$rc"
