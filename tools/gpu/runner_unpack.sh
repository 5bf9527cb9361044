#!/usr/bin/env bash
# On the GPU machine: receives the runner pack (tools/gpu/runner_pack.sh) piece by piece
# and unpacks it into a root filesystem that tools/gpu/enter_runner.sh enters.
#
#     tools/gpu/runner_unpack.sh stash     keep the .runnerpack/runner.tar.xz.NN pieces that
#                                          came with this call in /tmp/runnerpack (one call
#                                          per piece: a transfer holds one)
#     tools/gpu/runner_unpack.sh install   stash, then, once every piece SHA256SUMS lists is
#                                          there and matches: unpack into /tmp/runner-root,
#                                          rebuild the exact wheels of its wheelhouse, and copy
#                                          this checkout to /work/rules_warp inside
#
# /tmp survives between calls only while the machine stays in use: send the pieces back to
# back. `install` again on an unpacked root only refreshes the checkout copy (Bazel's output
# base inside, /root/.cache/bazel, stays). Inside, the venvs install from the wheelhouse
# (/etc/bazel.bazelrc: --repo_env=WRP_WHEELHOUSE=/opt/wheelhouse) with no index.
# RUNNER_ROOT and RUNNERPACK_STASH override the two directories.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=${RUNNER_ROOT:-/tmp/runner-root}
stash=${RUNNERPACK_STASH:-/tmp/runnerpack}
pack=$repo/.runnerpack
start=$(date +%s)
say() { echo "runner_unpack.sh: $* ($(($(date +%s) - start)) s)" >&2; }

stash_pieces() {
  mkdir -p "$stash"
  [ -f "$pack/SHA256SUMS" ] && cp "$pack/SHA256SUMS" "$stash/SHA256SUMS"
  [ -f "$stash/SHA256SUMS" ] || {
    echo "runner_unpack.sh: no .runnerpack/SHA256SUMS here or in $stash: send it with the first piece" >&2
    exit 1
  }
  local got=0 piece name
  for piece in "$pack"/runner.tar.xz.*; do
    [ -f "$piece" ] || continue
    name=$(basename "$piece")
    grep -q " $name\$" "$stash/SHA256SUMS" || {
      echo "runner_unpack.sh: $name is not in SHA256SUMS (a piece of another pack?)" >&2
      exit 1
    }
    cp "$piece" "$stash/$name.partial"
    (cd "$stash" && grep " $name\$" SHA256SUMS | sed "s/ $name\$/ $name.partial/" | sha256sum --quiet -c -) || {
      rm -f "$stash/$name.partial"
      echo "runner_unpack.sh: $name arrived damaged (sha256 differs from SHA256SUMS): send it again" >&2
      exit 1
    }
    mv "$stash/$name.partial" "$stash/$name"
    got=$((got + 1))
  done
  local have want
  have=$(cd "$stash" && ls runner.tar.xz.* 2>/dev/null | grep -vc partial || true)
  want=$(wc -l <"$stash/SHA256SUMS")
  say "stashed $got piece(s); $have of $want in $stash"
}

copy_checkout() {
  # The checkout as it came (tracked files, and what `carry` named, e.g. buildifier's
  # node_modules), without the pack and Bazel's convenience links.
  rm -rf "$root/work/rules_warp"
  mkdir -p "$root/work/rules_warp"
  tar -C "$repo" --exclude=./.runnerpack --exclude='./bazel-*' --exclude=./.git -cf - . |
    tar -C "$root/work/rules_warp" -xf -
  say "checkout copied to $root/work/rules_warp"
}

add_debian_packages() {
  # The .deb files the C++ build downloads (third_party/debian): a pack made before they were pinned
  # lacks them, and the runner is offline. Carry them in .gpucarry/debs
  # (third_party/debian/fetch.py .gpucarry/debs); the repository rule checks each sha256.
  local deb
  for deb in "$repo"/.gpucarry/debs/*.deb; do
    [ -f "$deb" ] && cp "$deb" "$root/opt/wheelhouse/" && say "added $(basename "$deb") to the wheelhouse"
  done
  return 0
}

install() {
  stash_pieces
  local missing
  missing=$(cd "$stash" && awk '{print $2}' SHA256SUMS | while read -r n; do [ -f "$n" ] || echo "$n"; done)
  [ -z "$missing" ] || {
    echo "runner_unpack.sh: missing pieces: $(echo $missing): send each with \`stash\` (the machine's /tmp was lost if it went idle)" >&2
    exit 1
  }
  if [ -f "$root/.runnerpack.sha256sums" ] && cmp -s "$root/.runnerpack.sha256sums" "$stash/SHA256SUMS"; then
    say "$root already holds this pack"
  else
    rm -rf "$root"
    mkdir -p "$root"
    (cd "$stash" && cat $(awk '{print $2}' SHA256SUMS)) | xz -dc -T0 | tar -xp --numeric-owner -C "$root"
    say "unpacked $(du -xsm "$root" | cut -f1) MiB into $root"
    copy_checkout
    chroot "$root" python3 -B /work/rules_warp/tools/gpu/wheelhouse_pack.py join --jobs "$(nproc)" \
      /opt/wheelhouse.packed /opt/wheelhouse
    rm -rf "$root/opt/wheelhouse.packed"
    cp "$stash/SHA256SUMS" "$root/.runnerpack.sha256sums"
    say "wheelhouse rebuilt: $(ls "$root/opt/wheelhouse" | wc -l) wheels"
    add_debian_packages
    return
  fi
  copy_checkout
  add_debian_packages
}

case "${1:-}" in
  stash) stash_pieces ;;
  install) install ;;
  *)
    echo "usage: tools/gpu/runner_unpack.sh stash|install" >&2
    exit 2
    ;;
esac
