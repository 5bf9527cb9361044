#!/usr/bin/env bash
# Starts Debian's dockerd for --config=docker, unless one already answers. No bridge and
# no iptables rules: the containers Bazel starts have no network anyway (--network=none),
# and a machine without those kernel features still runs them.
#     toolchains/containers/start_dockerd.sh        (log: /var/tmp/rules_warp-dockerd.log)
set -euo pipefail
docker=/usr/bin/docker
if [ -x "$docker" ] && "$docker" info >/dev/null 2>&1; then
  exit 0
fi
command -v dockerd >/dev/null || {
  echo "start_dockerd.sh: no dockerd: run tools/setup.sh --containers (installs Debian's docker.io)" >&2
  exit 1
}
log=/var/tmp/rules_warp-dockerd.log
nohup dockerd --iptables=false --bridge=none >"$log" 2>&1 &
for _ in $(seq 1 120); do
  if "$docker" info >/dev/null 2>&1; then
    echo "start_dockerd.sh: dockerd $(cat /var/run/docker.pid) up, storage driver $("$docker" info --format '{{.Driver}}')" >&2
    exit 0
  fi
  sleep 0.5
done
echo "start_dockerd.sh: dockerd did not answer within 60 s; its log: $log" >&2
tail -20 "$log" >&2
exit 1
