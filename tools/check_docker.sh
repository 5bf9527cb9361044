#!/usr/bin/env bash
# The same bundle on the host and inside the offline-built runner image: builds TARGET
# (default //models:sim_cpu_wrp) in two clean output bases, one as usual and one with
# --config=docker (every action in the image, through Bazel's docker strategy), compares
# the content hashes, and checks with the execution log that every docker spawn carried
# the recorded image. Installs docker.io/mmdebstrap, starts dockerd and builds the image
# first when needed (toolchains/containers/build_image.sh, ~15-25 min on 2 cores).
#     tools/check_docker.sh [//pkg:name]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-//models:sim_cpu_wrp}
path=${target#//}
path=${path/://}
bash tools/setup.sh --containers
bash toolchains/containers/start_dockerd.sh
recorded=$(sed -nE 's/^RUNNER_IMAGE_ID = "(sha256:[0-9a-f]+)"/\1/p' toolchains/containers/image.bzl)
if ! docker image inspect "$recorded" >/dev/null 2>&1; then
  start=$(date +%s)
  built=$(bash toolchains/containers/build_image.sh)
  echo "check_docker.sh: image built in $(($(date +%s) - start)) s: $built"
  if [ "$built" != "$recorded" ]; then
    echo "check_docker.sh: the image built now is not the one toolchains/containers/image.bzl records" >&2
    echo "  (Debian's packages moved on): record $built there and run this again." >&2
    exit 1
  fi
fi
work=$(mktemp -d /var/tmp/rules_warp-check-docker.XXXXXX)
trap 'for b in host docker; do bazel --output_base="$work/$b" shutdown >/dev/null 2>&1 || true; done; chmod -R u+w "$work"; rm -rf "$work"' EXIT
for mode in host docker; do
  flags=(--symlink_prefix=/)
  [ "$mode" = docker ] && flags+=(--config=docker "--execution_log_json_file=$work/exec.json")
  start=$(date +%s)
  bazel --output_base="$work/$mode" build "${flags[@]}" "$target" >"$work/$mode.log" 2>&1 ||
    { tail -30 "$work/$mode.log"; exit 1; }
  bin=$(bazel --output_base="$work/$mode" info "${flags[@]}" bazel-bin 2>/dev/null)
  cp "$bin/$path.sha256" "$work/$mode.sha256"
  echo "$mode: $(($(date +%s) - start)) s, $(grep -E '^INFO: [0-9]+ process' "$work/$mode.log" | tail -1 | cut -c7-), content hash $(cat "$work/$mode.sha256")"
done
python3 tools/check_exec_log.py "$work/exec.json" --image "docker://$recorded"
echo "spawns run by the docker strategy: $(grep -c '"runner": "docker"' "$work/exec.json" || true)"
cmp "$work/host.sha256" "$work/docker.sha256"
echo "$target: the same content hash on the host and in the runner image"
