#!/usr/bin/env bash
# The reference cluster for real (remote/README.md): up on loopback with two CPU workers,
# then, from clean Bazel output bases that share nothing with this build but the source tree:
#   - TLS and tokens: calls without a valid token, or without TLS, are refused; every port
#     listens on loopback; a blob that does not match its digest is refused; only the worker
#     token writes the action cache and opens bot sessions; the workers' cache is theirs alone
#   - `bazel build --config=remote` of a CPU and a retargeted CUDA model: every spawn that is
#     not internal ran remote, in the runner image (not the host), with the content hashes
#     of this (local) build; a C++ replay test passes on a worker (its runfiles are copied)
#   - the whole server side restarted (BuildGrid, Redis, PostgreSQL): a second clean output
#     base at another path, which makes its own venvs, executes nothing (action cache and CAS
#     lasted, and the venvs' files do not depend on their path) and gets the same hashes
#   - a worker killed mid-action: the action runs again on the other worker, the build passes
#   - BuildGrid restarted mid-action: the build passes with the action's real output, or fails
#     saying so; never a wrong output
#   - a job for the gpu pool, which no worker serves: refused within a minute, naming the pool
#   - an input blob corrupted on the server's disk and in the workers' casd cache: a build that
#     reads it is right or refused naming the blob, and the next one is right (bgd_verified.py,
#     worker.py's check_local_inputs)
#   - the queue page (remote/queue_page.py): TLS and its own token, which BuildGrid lets read
#     and nothing else; it lists the action of a build in flight with its pool and worker
#     remote_cluster_test.sh WORKSPACE SIM_CPU_SHA256 SIM_CUDA_SHA256 CLUSTER_PROBE
# Needs tools/setup.sh's packages (postgresql, redis-server, bubblewrap, nginx) and the
# runner image of this host's Debian release (tools/dev.sh test builds it:
# toolchains/containers/build_image.sh --release R ... /var/tmp/rules_warp-image-R), or
# WRP_RUNNER_IMAGE_DIR naming one.
set -uo pipefail
root=$(dirname "$(readlink -f "$1")")
local_cpu=$(cut -d' ' -f1 "$2")
local_cuda=$(cut -d' ' -f1 "$3")
probe=$(readlink -f "$4")
release=$(bash "$root/tools/host_release.sh" release) || exit 1
image=${WRP_RUNNER_IMAGE_DIR:-/var/tmp/rules_warp-image-$release}
# Not under TEST_TMPDIR: PostgreSQL runs as the user postgres, who cannot enter /root.
mkdir -p /var/tmp/rules_warp-remote
work=$(mktemp -d /var/tmp/rules_warp-remote/test.XXXXXX)
chmod 755 "$work"
state=$work/cluster
# Downloads and the unpacked image are keyed by their hashes: kept between runs.
cache=/var/tmp/rules_warp-remote/cache
cluster() { python3 "$root/remote/cluster.py" --state "$state" --cache "$cache" "$@"; }
targets=(//models:sim_cpu_wrp //models:sim_wrp //tests/remote:image_probe)

failed=0
passed=0
check() { # what, command...
  local what=$1
  shift
  if "$@"; then
    echo "PASS: $what"
    passed=$((passed + 1))
  else
    echo "FAIL: $what"
    failed=$((failed + 1))
  fi
}
bazel_in() { # OUTPUT_BASE bazel-args...
  local ob=$1
  shift
  (cd "$root" && bazel --bazelrc="$state/bazelrc" --output_user_root="$work/user_root" --output_base="$work/$ob" "$@")
}
# What the cluster logged, for a build that failed.
diagnose() { # OUTPUT_BASE
  echo "--- client proxy (nginx) errors:"
  tail -5 "$state/client/error.log" 2>/dev/null | cut -c1-300
  echo "--- BuildGrid errors:"
  grep -E "ERROR|Error" "$state/logs/bgd.log" 2>/dev/null | tail -5 | cut -c1-300
  echo "--- workers:"
  tail -n 3 "$state"/logs/worker-*.log 2>/dev/null | cut -c1-300
  echo "--- Bazel's server log:"
  grep -E "Caused by|message:" "$work/$1/java.log" 2>/dev/null | sort | uniq -c | sort -rn | head -8 | cut -c1-300
}
cleanup() {
  for ob in "$work"/ob*; do
    [ -d "$ob" ] && bazel_in "$(basename "$ob")" shutdown >/dev/null 2>&1
  done
  cluster down >/dev/null 2>&1
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

start=$(date +%s)
cluster up --cpu-workers 2 --gpu-workers 0 --keepalive 10 --queue-timeout 60 --image "$image" >"$work/up.log" 2>&1 ||
  { cat "$work/up.log"; echo "FAIL: remote/cluster.py up"; exit 1; }
echo "cluster up: $(($(date +%s) - start)) s"
venv_python=$(ls -d "$cache"/venv-*/bin/python3 | head -1)
image_root=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c["image_id"].split(":")[1][:32])' "$state/cluster.json")
image_root=$cache/images/$image_root

"$venv_python" "$probe" "$state" auth >"$work/auth.log" 2>&1
check "TLS and tokens: $(grep -c PASS "$work/auth.log") checks ($(tr '\n' ';' <"$work/auth.log"))" \
  test "$(grep -c FAIL "$work/auth.log")" = 0 -a "$(grep -c PASS "$work/auth.log")" -gt 3
"$venv_python" "$probe" "$state" client-token >"$work/client_token.log" 2>&1
check "only workers write results: $(grep -c '^PASS' "$work/client_token.log") checks ($(cut -c7- "$work/client_token.log" | tr '\n' ';'))" \
  test "$(grep -c '^FAIL' "$work/client_token.log")" = 0 -a "$(grep -c '^PASS' "$work/client_token.log")" = 4
"$venv_python" "$probe" "$state" listen >"$work/listen.log" 2>&1
check "every port on loopback ($(grep -c PASS "$work/listen.log") ports)" \
  test "$(grep -c FAIL "$work/listen.log")" = 0 -a "$(grep -c PASS "$work/listen.log")" -ge 4
"$venv_python" "$probe" "$state" corrupt-upload >"$work/corrupt.log" 2>&1
check "a blob that does not match its digest is refused and not stored" \
  test "$(grep -c FAIL "$work/corrupt.log")" = 0 -a "$(grep -c PASS "$work/corrupt.log")" = 2
"$venv_python" "$probe" "$state" queue-token >"$work/queue_token.log" 2>&1
check "the queue page's token reads the queue and nothing else" \
  test "$(grep -c FAIL "$work/queue_token.log")" = 0 -a "$(grep -c PASS "$work/queue_token.log")" = 2
"$venv_python" "$probe" "$state" queue-page >"$work/queue_page.log" 2>&1
check "the queue page answers its token over TLS, and refuses none or another" \
  test "$(grep -c FAIL "$work/queue_page.log")" = 0 -a "$(grep -c PASS "$work/queue_page.log")" = 3
cat "$work"/{auth,client_token,listen,corrupt,queue_token,queue_page}.log | grep '^FAIL'

# The spawns of an execution log: remote ones, and any other that is not Bazel-internal.
spawns() { # EXEC_JSON -> "remote=N cache_hit=N other=N" and the other ones' mnemonics
  python3 - "$root/tools" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from check_exec_log import spawns
remote = hits = 0
other = []
for spawn in spawns(sys.argv[2]):
    if spawn.get("remoteCacheHit"):
        hits += 1
    elif spawn.get("runner") == "remote":
        remote += 1
    else:
        other.append(f"{spawn.get('mnemonic')}({spawn.get('runner')})")
print(f"remote={remote} cache_hit={hits} other={len(other)} {' '.join(other)}")
PY
}
content_hash() { # OUTPUT_BASE TARGET_NAME
  cut -d' ' -f1 "$(bazel_in "$1" info --config=remote bazel-bin 2>/dev/null)/models/$2.sha256"
}

start=$(date +%s)
bazel_in ob1 build --config=remote --symlink_prefix=/ --execution_log_json_file="$work/ob1.exec.json" \
  "${targets[@]}" >"$work/ob1.log" 2>&1 ||
  { tail -40 "$work/ob1.log"; diagnose ob1; echo "FAIL: the first remote build failed"; exit 1; }
echo "first output base, empty cluster: $(($(date +%s) - start)) s; $(grep -E '^INFO: [0-9]+ process' "$work/ob1.log" | tail -1)"
counts=$(spawns "$work/ob1.exec.json")
check "every spawn that is not internal ran remote ($counts)" \
  eval '[[ "$counts" =~ ^remote=[1-9][0-9]*\ cache_hit=0\ other=0 ]]'
check "the CPU model's content hash is the local build's (${local_cpu:0:16})" \
  test "$(content_hash ob1 sim_cpu_wrp)" = "$local_cpu"
check "the retargeted CUDA model's content hash is the local build's (${local_cuda:0:16})" \
  test "$(content_hash ob1 sim_wrp)" = "$local_cuda"
# Staging: through buildbox-fuse where the machine has FUSE (hard links cost 7-15 s an action:
# remote/README.md), and each action's phases in the workers' logs.
staging=$(awk '/inputs (.*) s, command/ { sub(/.*\(inputs /, ""); sub(/ s,.*/, ""); n++; t += $0 } END { if (n) printf "%d actions, inputs %.2f s on average", n, t / n }' "$state"/logs/worker-*.log)
said=$(grep -o "inputs staged .*" "$work/up.log")
if [ -e /dev/fuse ]; then
  check "inputs are staged through buildbox-fuse (cluster.py: ${said:-nothing}; ${staging:-no phases logged})" \
    eval 'grep -q "inputs staged through buildbox-fuse" "$work/up.log" && [ -n "$staging" ]'
else
  check "without /dev/fuse inputs are staged as hard links (cluster.py: ${said:-nothing}; ${staging:-no phases logged})" \
    eval 'grep -q "inputs staged as hard links (no /dev/fuse)" "$work/up.log" && [ -n "$staging" ]'
fi
if [ -e /dev/fuse ] && [ "$(id -u)" = 0 ]; then
  # As in a container without CAP_SYS_ADMIN: /dev/fuse is there, a mount is not allowed.
  without_sys_admin=$(setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin python3 -c \
    'import sys; sys.path.insert(0, sys.argv[1]); import cluster_setup; print(cluster_setup.fuse_staging(sys.argv[2]))' \
    "$root/remote" "$(ls -d "$cache"/buildbox-* | head -1)" 2>&1)
  check "where a FUSE mount is refused, staging falls back to hard links ($without_sys_admin)" \
    eval '[[ "$without_sys_admin" == "(False, "*"a FUSE mount is refused: Operation not permitted"* ]]'
fi
# The workers' caches hold every action's inputs and outputs: their user's alone. Every folder
# 0700; no file another user could read, but casd's objects (0444 by casd's design, so that a
# hard-linked input stays read-only), which lie in those folders.
loose=$(find "$state/workers" \( -type d -perm /077 \) -o \( ! -type d -perm /077 \
  ! \( -type f -perm 0444 -path "$state/workers/casd/cas/objects/*" \) \) -printf '%m %P\n' 2>&1)
objects=$(find "$state/workers/casd/cas/objects" -type f 2>/dev/null | wc -l)
check "the workers' cache is for their user alone: no folder or file others may read ($objects casd objects; ${loose:-none loose})" \
  test -z "$loose" -a "$objects" -gt 0
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  blob=$(find "$state/workers/casd/cas/objects" -type f | head -1)
  check "another user (nobody) can neither list the workers' folder nor read a casd object" \
    eval '! setpriv --reuid=nobody --regid=nogroup --clear-groups ls "$state/workers" >/dev/null 2>&1 &&
      ! setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$blob" >/dev/null 2>&1'
fi
probe_out=$(bazel_in ob1 info --config=remote bazel-bin 2>/dev/null)/tests/remote/image_probe.txt
expected_probe=$(cat "$image_root/etc/os-release"; echo '--- gcc:'; ls "$image_root/usr/lib/gcc/x86_64-linux-gnu"
  echo '--- python3:'; readlink "$image_root/usr/bin/python3"; echo '--- /bin:'; readlink "$image_root/bin")
check "actions run in the runner image ($(sed -n 's/^PRETTY_NAME=//p' "$probe_out"), its GCC and python3), not on the host" \
  test "$(cat "$probe_out")" = "$expected_probe"
# A C++ replay test on a worker: its runfiles are copied there, not linked, so the runtime must
# find warp-clang.so in them (not beside warp.so's _solib entry).
bazel_in ob1 test --config=remote --symlink_prefix=/ --test_output=errors //models:sim_cpu_wrp_replay_test \
  --execution_log_json_file="$work/ob1.test.exec.json" >"$work/ob1.test.log" 2>&1
rc=$?
check "a C++ replay test of the CPU model passes on a worker (rc $rc)" \
  eval '[ $rc = 0 ] && grep -q "sim_cpu_wrp_replay_test .*PASSED" "$work/ob1.test.log"'
# One spawn per test: a second one that writes test.xml would queue on the test's pool again.
test_spawns=$(python3 - "$root/tools" "$work/ob1.test.exec.json" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from check_exec_log import spawns
print(sum(1 for spawn in spawns(sys.argv[2]) if spawn.get("mnemonic") == "TestRunner"))
PY
)
check "the test ran as one spawn, which wrote its test.xml ($test_spawns TestRunner spawns)" \
  test "$test_spawns" = 1
[ $rc = 0 ] || tail -30 "$work/ob1.test.log"
bazel_in ob1 shutdown >/dev/null 2>&1

# The server side goes down and comes back: the action cache (Redis, append-only file) and
# the CAS (disk) must still hold the first build.
cluster down >/dev/null 2>&1
cluster up --cpu-workers 2 --gpu-workers 0 --keepalive 10 --queue-timeout 60 --image "$image" >"$work/up2.log" 2>&1 ||
  { cat "$work/up2.log"; echo "FAIL: remote/cluster.py up after down"; exit 1; }
# The venvs are repository rules, which no cache holds: the second output base, at another
# path, makes its own, whose files name no path (toolchains/python/relocate_venv.py), so
# the actions that take them have the same keys as the first output base's.
start=$(date +%s)
bazel_in ob2 build --config=remote --symlink_prefix=/ --execution_log_json_file="$work/ob2.exec.json" \
  "${targets[@]}" >"$work/ob2.log" 2>&1 ||
  { tail -40 "$work/ob2.log"; diagnose ob2; echo "FAIL: the rebuild after the restart failed"; exit 1; }
counts=$(spawns "$work/ob2.exec.json")
echo "second output base, after the restart: $(($(date +%s) - start)) s; $(grep -E '^INFO: [0-9]+ process' "$work/ob2.log" | tail -1)"
check "after a server restart a clean output base at another path, with venvs of its own, executes nothing ($counts)" \
  eval '[[ "$counts" =~ ^remote=0\ cache_hit=[1-9][0-9]*\ other=0 ]]'
check "and gets the same content hashes" \
  test "$(content_hash ob2 sim_cpu_wrp)" = "$local_cpu" -a "$(content_hash ob2 sim_wrp)" = "$local_cuda"
venv_tree() { # OUTPUT_BASE REPOSITORY: one digest over the venv's paths and contents
  (cd "$work/$1/external/$2" && find venv -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}
for repo in wrp_venv wrp_nvrtc_13_0_venv; do
  check "@$repo made in $work/ob1 and in $work/ob2 is the same files ($(venv_tree ob1 $repo), $(venv_tree ob2 $repo))" \
    test "$(venv_tree ob1 $repo)" = "$(venv_tree ob2 $repo)"
done

# Waits until a worker's log says it started a lease since mark_logs; prints the worker.
started_worker() { # SECONDS
  local deadline=$(($(date +%s) + $1)) log
  while [ "$(date +%s)" -lt "$deadline" ]; do
    for log in "$state"/logs/worker-*.log; do
      if tail -c +"$(($(cat "$log.offset" 2>/dev/null || echo 0) + 1))" "$log" | grep -q ' started$'; then
        basename "$log" .log
        return 0
      fi
    done
    sleep 0.5
  done
  return 1
}
mark_logs() { for log in "$state"/logs/worker-*.log; do stat -c %s "$log" >"$log.offset"; done; }
output_of() { echo "$(bazel_in ob2 info --config=remote bazel-bin 2>/dev/null)/tests/remote/$1.txt"; }

# A worker dies mid-action (SIGKILL, its runner with it): its lease is given to the other.
mark_logs
bazel_in ob2 build --config=remote --symlink_prefix=/ //tests/remote:slow_killed_worker \
  >"$work/killed.log" 2>&1 &
build=$!
victim=$(started_worker 120) || { kill "$build"; echo "FAIL: no worker started the slow action"; exit 1; }
# While it runs, the queue page lists it: its pool, and the worker about to be killed.
"$venv_python" "$probe" "$state" queue-lists slow_killed_worker.txt "${victim#worker-}" >"$work/queue_lists.log" 2>&1
check "the queue page lists the action in flight: $(sed -n "1s/^[A-Z]*: //p" "$work/queue_lists.log")" \
  test "$(grep -c FAIL "$work/queue_lists.log")" = 0 -a "$(grep -c PASS "$work/queue_lists.log")" = 2
kill -9 "$(cat "$state/run/$victim.pid")"
wait "$build"
rc=$?
others=$(for log in "$state"/logs/worker-*.log; do
  [ "$(basename "$log" .log)" != "$victim" ] && tail -c +"$(($(cat "$log.offset") + 1))" "$log" | grep -c ' exit 0 '
done | awk '{ n += $1 } END { print n + 0 }')
check "a worker killed mid-action: the build passed (rc $rc), the other worker ran the action (${others:-0} lease)" \
  test "$rc" = 0 -a "${others:-0}" -ge 1
check "with the action's own output" \
  grep -qx 'killed_worker: the action ran to its end' "$(output_of slow_killed_worker)"
cluster up --cpu-workers 2 --gpu-workers 0 --keepalive 10 --queue-timeout 60 --image "$image" >>"$work/up2.log" 2>&1

# BuildGrid restarts mid-action (its jobs are in PostgreSQL).
mark_logs
bazel_in ob2 build --config=remote --symlink_prefix=/ //tests/remote:slow_server_restart \
  >"$work/restart.log" 2>&1 &
build=$!
started_worker 120 >/dev/null || { kill "$build"; echo "FAIL: no worker started the slow action"; exit 1; }
kill "$(cat "$state/run/bgd.pid")"
sleep 2
cluster up --cpu-workers 2 --gpu-workers 0 --keepalive 10 --queue-timeout 60 --image "$image" >>"$work/up2.log" 2>&1
wait "$build"
rc=$?
out=$(output_of slow_server_restart)
if [ "$rc" = 0 ]; then
  check "BuildGrid restarted mid-action: the build passed with the action's own output" \
    grep -qx 'server_restart: the action ran to its end' "$out"
else
  check "BuildGrid restarted mid-action: the build failed (rc $rc) saying why, with no output" \
    eval 'grep -q "^ERROR" "$work/restart.log" && test ! -e "$out"'
  grep -m1 "^ERROR" "$work/restart.log" | cut -c1-300
fi

# The gpu pool has no worker here: the job is refused when submitted, naming the pool.
start=$(date +%s)
bazel_in ob2 build --config=remote --symlink_prefix=/ //tests/remote:gpu_pool_probe \
  >"$work/gpu_pool.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
check "a job for the unserved gpu pool fails (rc $rc) in ${took} s, naming the pool" \
  eval 'test "$rc" != 0 -a "$took" -lt 60 && grep -q "Pool.*gpu" "$work/gpu_pool.log"'
grep -m1 -o "Could not find property set for.*" "$work/gpu_pool.log" | cut -c1-200

# A corrupted blob: one input's copies on the server's disk and in the workers' casd cache get
# other bytes of the same size (a bad sector does not change a file's length). An action that
# reads it, run from a clean output base, must get the right digest or be refused naming the
# blob, never a wrong digest; the next build, with no hand step between, must be right.
start=$(date +%s)
blob=$(sha256sum <"$root/tests/remote/fault_input.txt" | cut -c1-64)
copies=("$state/cas/cas/objects/${blob:0:2}/${blob:2}" "$state/workers/casd/cas/objects/${blob:0:2}/${blob:2}")
bazel_in ob2 build --config=remote --symlink_prefix=/ //tests/remote:fault_seed >"$work/fault_seed.log" 2>&1
check "the fault test's input is in the server's CAS and the workers' cache" test -f "${copies[0]}" -a -f "${copies[1]}"
for copy in "${copies[@]}"; do
  printf 'X' | dd of="$copy" bs=1 seek=0 conv=notrunc status=none 2>/dev/null
done
fault_build() { # OUTPUT_BASE -> its rc; LOG: $work/OUTPUT_BASE.log
  bazel_in "$1" build --config=remote --symlink_prefix=/ //tests/remote:fault_check >"$work/$1.log" 2>&1
}
fault_output() { cat "$(bazel_in "$1" info --config=remote bazel-bin 2>/dev/null)/tests/remote/fault_check.txt" 2>/dev/null; }
fault_build ob3
rc=$?
got=$(fault_output ob3)
if [ "$rc" = 0 ]; then
  check "a corrupted input on the server and the worker: the build is right (digest ${got:0:16})" test "$got" = "$blob"
else
  check "a corrupted input on the server and the worker: the build is refused (rc $rc), naming the blob, with no output" \
    eval 'grep -q "blob $blob" "$work/ob3.log" && test -z "$got"'
  grep -m1 -o "Not Found: .*" "$work/ob3.log" | cut -c1-300
fi
fault_build ob4
rc=$?
got=$(fault_output ob4)
whole=$(for copy in "${copies[@]}"; do [ ! -e "$copy" ] || sha256sum <"$copy" | cut -c1-64; done | sort -u)
check "and the next build, from another clean output base, is right (rc $rc, digest ${got:0:16}), every copy whole again" \
  test "$rc" = 0 -a "$got" = "$blob" -a "$whole" = "$blob"
echo "the corrupted blob: $(grep -c "$blob" "$state/logs/bgd.log") server log lines, $(cat "$state"/logs/worker-*.log | grep -c "blob $blob") worker log lines; $(($(date +%s) - start)) s"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
