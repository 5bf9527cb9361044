#!/usr/bin/env bash
# The reference cluster on a GPU machine, inside the GPU runner (tools/gpu/enter_runner.sh):
# the runner's own root filesystem is the workers' image (the machine has no Docker, and no
# room to unpack the image twice), N CPU workers and one GPU worker per GPU the runner sees.
# Then one Bazel command against it, with an execution log, and the spawns it ran per runner
# and pool.
#
#     remote/in_runner.sh --image-id sha256:... [--cpu-workers N] [--out DIR] -- BAZEL_ARGS...
#     e.g. remote/in_runner.sh --image-id sha256:$(sha256sum < .runnerpack/SHA256SUMS | cut -d' ' -f1) \
#              -- test --config=gpu --test_tag_filters=-remote //...
#
# --config=remote is added; the cluster stays up afterwards (remote/cluster.py down stops
# it). --out gets the execution log's summary and the cluster's logs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
image_id=
cpu_workers=8
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --image-id) image_id=$2; shift ;;
    --cpu-workers) cpu_workers=$2; shift ;;
    --out) out=$2; shift ;;
    --) shift; break ;;
    *) echo "in_runner.sh: unknown option $1 (the Bazel arguments come after --)" >&2; exit 2 ;;
  esac
  shift
done
case "$image_id" in
  sha256:*) ;;
  *) echo "in_runner.sh: --image-id sha256:... is required (the ID the platforms will name)" >&2; exit 2 ;;
esac
[ $# -gt 0 ] || { echo "in_runner.sh: no Bazel command after --" >&2; exit 2; }
[ -d /opt/wheelhouse ] || { echo "in_runner.sh: no /opt/wheelhouse: run inside tools/gpu/enter_runner.sh" >&2; exit 2; }

state=/var/tmp/rules_warp-remote
mkdir -p "$state"
chmod 755 "$state" # PostgreSQL runs as its own user
# Offline: BuildGrid's venv and the buildbox wheel come from the runner's wheelhouse.
export WRP_WHEELHOUSE=/opt/wheelhouse
start=$(date +%s)
python3 "$repo/remote/cluster.py" --state "$state/cluster" --cache "$state/cache" up \
  --cpu-workers "$cpu_workers" --gpu-workers auto --image-root / --image-id "$image_id"
echo "in_runner.sh: cluster up in $(($(date +%s) - start)) s" >&2

log=$state/exec.json
rm -f "$log"
command=$1
shift
set +e
(cd "$repo" && bazel --bazelrc="$state/cluster/bazelrc" "$command" --config=remote \
  --execution_log_json_file="$log" "$@")
rc=$?
set -e
echo "in_runner.sh: bazel $command exited $rc after $(($(date +%s) - start)) s" >&2
python3 - "$log" "$repo/tools" <<'EOF' | tee ${out:+"$out/spawns.txt"}
import collections, json, sys
sys.path.insert(0, sys.argv[2])
from check_exec_log import spawns

count = collections.Counter()
for spawn in spawns(sys.argv[1]):
    props = {p["name"]: p["value"] for p in spawn.get("platform", {}).get("properties", [])}
    count[(spawn.get("runner", "?"), props.get("Pool", "-"), spawn.get("mnemonic", "?"))] += 1
for (runner, pool, mnemonic), n in sorted(count.items()):
    print(f"{n:6d}  runner={runner:<18} Pool={pool:<8} {mnemonic}")
by_pool = collections.Counter()
for (runner, pool, _), n in count.items():
    by_pool[(runner, pool)] += n
print("total:", ", ".join(f"{runner}/Pool={pool}: {n}" for (runner, pool), n in sorted(by_pool.items())))
EOF
if [ -n "$out" ]; then
  tar -C "$state/cluster" -czf "$out/cluster-logs.tgz" logs 2>/dev/null || true
fi
exit "$rc"
