#!/usr/bin/env bash
# The C++ runtime's load on a GPU machine, end to end (what runtime/ tests cannot do without a GPU), with the
# -c opt binaries tools/gpu/stage_bench.sh puts in .gpubench/. Needs warp.so on LD_LIBRARY_PATH (/tmp/wrp-site,
# ../shared/gpu). Exit 0 when every check holds.
#   1. replay (every file verified, device view) of cloth_wrp and sim_recorded_wrp matches the golden outputs;
#   2. on changed copies, start_bench (a load that verifies only what it hands Warp):
#      a changed .wrp byte past the first chunk is named with its chunk, after Warp's load (before it with
#      --hash-first, LoadOptions::hash_during_load off);
#      a changed byte of the device's sm_90 image is refused by Warp and named with its fatbin and SM;
#      a changed byte of the sm_75 image is not read, so the load succeeds, while replay (every file) names it;
#   3. host time per launch, interleaved: Graph::Launch, bare cuGraphLaunch, Warp's wp_cuda_graph_launch
#      (cudaGraphLaunch) and Warp's context check + cuGraphLaunch (replay_bench, SECONDS of GPU time each).
#   tools/gpu/cpp_load_check.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/tmp/wrp-site/warp/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
c=.gpubench
seconds=${1:-3}
work=$(mktemp -d)
status=0
fail() { echo "!! FAILED: $*"; status=1; }

# Byte offset of the middle of module 0's `arch` image in bundle directory $1 (nvFatbin layout, as
# runtime/fatbin.cc reads it).
image_middle() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
bundle, arch = sys.argv[1], sys.argv[2]
path = json.load(open(f"{bundle}/manifest.json"))["modules"][0]["binary"]
data = open(f"{bundle}/{path}", "rb").read()
offset = 0
while offset < len(data):
    _, _, header, body = struct.unpack_from("<IHHQ", data, offset)
    entry, end = offset + header, offset + header + body
    while entry < end:
        _, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
        name_offset, name_length = struct.unpack_from("<II", data, entry + 32)
        name = data[entry + name_offset : entry + name_offset + name_length].split(b"\0")[0].decode()
        if name == arch:
            print(path, entry + entry_header + payload // 2)
            sys.exit(0)
        entry += entry_header + payload
    offset = end
sys.exit(f"{path}: no {arch} image")
PY
}

flip() {  # flip one bit of file $1 at byte $2
  python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[o] ^= 1; open(p, "wb").write(b)' "$1" "$2"
}

changed_copy() {  # a copy of bundle $1 named $2, without its .sha256 (the content hash still holds)
  rm -rf "$work/$2" && cp -r "$c/$1" "$work/$2" && chmod -R u+w "$work/$2"
}

# start_bench on copy $2 of bundle $1, with the byte at $4 of its file $3 flipped, must fail naming $5.
refused() {
  local bundle=$1 name=$2 file=$3 at=$4 expected=$5 out
  changed_copy "$bundle" "$name"
  flip "$work/$name/$file" "$at"
  out=$("$c/start_bench" --bundle "$work/$name" 2>&1) && fail "$bundle: $name loaded"
  echo "$out"
  echo "$out" | grep -qF "$expected" || fail "$bundle: $name not named (\"$expected\")"
}

for bundle in cloth_wrp sim_recorded_wrp; do
  echo "== replay $bundle"
  out=$("$c/replay" --bundle "$c/$bundle" 2>&1)
  echo "$out" | tail -3
  echo "$out" | grep -q "loaded from device view" || fail "$bundle: not loaded through the device view"
  echo "$out" | grep -q "^PASS" || fail "$bundle: replay did not pass"

  echo "== $bundle: a changed .wrp byte in its second chunk"
  wrp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wrp"])' "$c/$bundle/manifest.json")
  refused "$bundle" wrp_chunk "$wrp" $((262144 + 7)) "(bytes 262144 to "
  out=$("$c/start_bench" --bundle "$work/wrp_chunk" --hash-first 2>&1) && fail "$bundle: --hash-first loaded it"
  echo "$out" | grep -qF "(bytes 262144 to " || fail "$bundle: --hash-first did not name the chunk"

  read -r module middle < <(image_middle "$c/$bundle" sm_90)
  echo "== $bundle: a changed byte of $module's sm_90 image"
  refused "$bundle" image_sm90 "$module" "$middle" "its sm_90 image"

  read -r module middle < <(image_middle "$c/$bundle" sm_75)
  echo "== $bundle: a changed byte of $module's sm_75 image (not read by an sm_90 load)"
  changed_copy "$bundle" image_sm75
  flip "$work/image_sm75/$module" "$middle"
  "$c/start_bench" --bundle "$work/image_sm75" || fail "$bundle: an unused image stopped the load"
  out=$("$c/replay" --bundle "$work/image_sm75" 2>&1) && fail "$bundle: replay (every file) passed a changed file"
  echo "$out" | tail -2
  { echo "$out" | grep -F "$module" | grep -q "sha256 is"; } || fail "$bundle: replay did not name $module"
done

for bundle in cloth_wrp sim_recorded_wrp; do
  echo "== host time per launch: $bundle"
  "$c/replay_bench" --bundle "$c/$bundle" --seconds "$seconds" || fail "replay_bench $bundle"
done
rm -rf "$work"
[ "$status" = 0 ] && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
exit "$status"
