#!/usr/bin/env bash
# Makes the runner pack: the GPU runner image's root filesystem, cut down to what a runner
# uses, compressed and split into pieces that each fit one transfer to a GPU machine.
#
#     tools/gpu/runner_pack.sh [--reuse-image] [--xz PRESET] [WORK]
#     (WORK: /var/tmp/rules_warp-runnerpack; PRESET: -9e, the smallest. The tar is 2.3 GB:
#     on two cores shared with other builds -9e got a fifth of a core and would have run for
#     hours; `--xz -1` took 16 minutes there, for a pack of 614 MiB)
#
# It builds the image's root filesystem (toolchains/containers/build_image.sh: Debian's
# bazel-bootstrap, g++, Python 3.11, the wheelhouse) with the packages `bazel test //...`
# calls besides (tools/setup.sh's: clang + libFuzzer, the aarch64 cross GCC 12 and
# qemu-user-static, nginx, locales; toolchains/host_releases.tsv's bookworm row) and what the
# reference remote cluster runs on (PostgreSQL, Redis, bubblewrap; its wheels), adds
# warp-lang's aarch64 wheel to the wheelhouse (the aarch64 builds unpack it), then removes
# what no runner runs:
#   - docs, man pages, translations (build_image.sh already), apt lists and caches,
#     __pycache__, dpkg's md5sums, Debian's Java libraries (/usr/share/java: Bazel's
#     server jar holds every class it loads), JavaScript of the docs (/usr/share/nodejs)
#   - the JDK: Bazel's server runs on a jlink'ed runtime of just the modules its jar needs
#     (jdeps), stripped, uncompressed so that xz does the compressing; no javac, no jmods
#   - gcc's lto1 and lto-dump (only -flto uses them), i386 libraries and runtimes, qemu
#     for every CPU but aarch64, clang runtimes other than asan/ubsan/libFuzzer, static
#     glibc (libc.a, libm.a: nothing links statically)
#   - the wheels' deflate: wheelhouse_pack.py keeps them uncompressed and join rebuilds
#     the exact wheels (sha256-checked) on the runner, so xz compresses their contents
# then writes, under .runnerpack/ of the checkout (git-ignored):
#   runner.tar.xz.NN   pieces of at most 52 MiB of `xz -9e` of the root filesystem's tar (a transfer
#                      holds 64 MiB: the piece and the checkout beside it)
#   SHA256SUMS         their sha256, checked by runner_unpack.sh before it unpacks
# Needs root, mmdebstrap (tools/setup.sh --containers) and Debian's apt reachable.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
reuse=0
preset=-9e
while [ $# -gt 0 ]; do
  case "$1" in
    --reuse-image) reuse=1 ;;
    --xz) preset=$2; shift ;;
    -*) echo "runner_pack.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
work=${1:-/var/tmp/rules_warp-runnerpack}
pack=$repo/.runnerpack
piece=52M
[ "$(id -u)" = 0 ] || { echo "runner_pack.sh: needs root (the root filesystem holds files of other owners)" >&2; exit 1; }
mkdir -p "$work"
start=$(date +%s)
say() { echo "runner_pack.sh: $* ($(($(date +%s) - start)) s)" >&2; }

# The image is Debian bookworm whatever the host runs, with the tools the tests call.
clang=$("$repo/tools/host_release.sh" --release bookworm clang)
gcc_major=$("$repo/tools/host_release.sh" --release bookworm aarch64_gcc | cut -d. -f1)
if [ "$reuse" = 0 ] || [ ! -f "$work/image/rootfs.tar" ]; then
  "$repo/toolchains/containers/build_image.sh" --no-docker --no-xz --test-tools \
    --include postgresql,redis-server,bubblewrap "$work/image"
  rm -f "$work/image/image.tar"
fi
root=$work/root
rm -rf "$root"
mkdir -p "$root"
tar --numeric-owner -xpf "$work/image/rootfs.tar" -C "$root"
say "root filesystem $(du -xsm "$root" | cut -f1) MiB as the image has it"

# The aarch64 wheel too: --config=aarch64 builds (and tests/aarch64) unpack its warp.so.
"$repo/tools/fill_wheelhouse.sh" "$root/opt/wheelhouse" >&2

# --- the JDK -> a runtime of the modules Bazel's server uses ---
jdk=$(dirname "$(dirname "$(chroot "$root" readlink -f /usr/bin/javac)")")
modules=$("$repo/tools/gpu/enter_runner.sh" --root "$root" -- "$jdk/bin/jdeps" --multi-release 17 \
  --ignore-missing-deps --print-module-deps /usr/share/bazel/A-server.jar 2>/dev/null | tail -1)
# TLS (a remote cache over https) and zip file systems: loaded by name, jdeps cannot see them.
modules=$modules,jdk.crypto.ec,jdk.zipfs
"$repo/tools/gpu/enter_runner.sh" --root "$root" -- "$jdk/bin/jlink" --add-modules "$modules" \
  --strip-debug --no-man-pages --no-header-files --output /usr/lib/jvm/bazel-server-jre 2>/dev/null
rm -rf "$root/usr/lib/jvm/java-17-openjdk-amd64" "$root/usr/lib/jvm/.java-1.17.0-openjdk-amd64.jinfo" \
  "$root/usr/lib/jvm/default-java" "$root/usr/share/java" "$root/usr/share/maven-repo"
# The links to the JDK's programs, now dangling (judged inside: they are absolute).
chroot "$root" find /etc/alternatives /usr/bin -xtype l -delete
# Bazel's client looks for `javac` to find a JDK; the runner's server runs on this runtime,
# and the system rc (read by Debian's /etc/bazel/bazelrc) says so.
cat >"$root/etc/bazel.bazelrc" <<EOF
# The GPU runner (tools/gpu/runner_pack.sh): Bazel's server runs on a minimal Java runtime,
# and the hash-locked venvs install from the image's wheelhouse, never from an index.
startup --server_javabase=/usr/lib/jvm/bazel-server-jre
build --repo_env=WRP_WHEELHOUSE=/opt/wheelhouse
EOF
say "Java runtime: $modules ($(du -sm "$root/usr/lib/jvm/bazel-server-jre" | cut -f1) MiB)"

# --- what no runner runs ---
rm -f "$root"/usr/bin/*lto-dump* "$root"/usr/lib/gcc/x86_64-linux-gnu/12/lto1 \
  "$root"/usr/lib/gcc-cross/aarch64-linux-gnu/"$gcc_major"/lto1
find "$root/usr/bin" -name 'qemu-*-static' ! -name qemu-aarch64-static -delete
rm -rf "$root/usr/lib32" "$root/lib32" "$root/usr/libx32" "$root/usr/share/nodejs"
rt=$(echo "$root/usr/lib/llvm-$clang"/lib/clang/*/lib/linux)
find "$rt" -type f ! \( -name '*asan*x86_64*' -o -name '*ubsan*x86_64*' -o -name '*fuzzer*x86_64*' \) -delete
find "$rt" -name '*hwasan*' -delete
rm -f "$root"/usr/lib/x86_64-linux-gnu/libc.a "$root"/usr/lib/x86_64-linux-gnu/libm-2.36.a \
  "$root"/usr/lib/x86_64-linux-gnu/libm.a "$root"/usr/lib/x86_64-linux-gnu/libmvec.a
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
  "$root"/var/lib/dpkg/info/*.md5sums "$root"/var/log/* "$root"/root/.cache
find "$root" -xdev -name __pycache__ -type d -prune -exec rm -rf {} +
# The image's python3 compiles what it imports again, into the venvs Bazel makes.

# --- the wheelhouse, uncompressed (rebuilt by runner_unpack.sh install) ---
python3 "$repo/tools/gpu/wheelhouse_pack.py" split "$root/opt/wheelhouse" "$root/opt/wheelhouse.packed" >&2
rm -rf "$root/opt/wheelhouse"
mkdir "$root/opt/wheelhouse"
say "root filesystem $(du -xsm "$root" | cut -f1) MiB after pruning"

# --- tar (deterministic: sorted, fixed mtimes and owners as numbers) -> xz -> pieces ---
export SOURCE_DATE_EPOCH=1767225600
tar --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$root" -cf "$work/runner.tar" .
say "runner.tar $(stat -c %s "$work/runner.tar") bytes"
xz "$preset" -T2 -c "$work/runner.tar" >"$work/runner.tar.xz.tmp"
mv "$work/runner.tar.xz.tmp" "$work/runner.tar.xz"
say "runner.tar.xz $(stat -c %s "$work/runner.tar.xz") bytes (xz $preset)"
rm -rf "$pack"
mkdir -p "$pack"
grep -qx '/.runnerpack/' "$repo/.gitignore" || echo '/.runnerpack/' >>"$repo/.gitignore"
split -b "$piece" -d -a 2 "$work/runner.tar.xz" "$pack/runner.tar.xz."
(cd "$pack" && sha256sum runner.tar.xz.* >SHA256SUMS)
say "$(ls "$pack"/runner.tar.xz.* | wc -l) pieces in $pack:"
ls -l "$pack" >&2
