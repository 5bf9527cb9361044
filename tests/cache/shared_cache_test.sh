#!/usr/bin/env bash
# A team's shared cache, for real: nginx (Debian's, WebDAV PUT) on loopback, and two Bazel
# output bases that share it and nothing else. The first builds and tests the CPU targets
# and fills the cache; the second, just as clean, must execute no action at all (Bazel's
# process summary: only `internal` and `remote cache hit`) and get the same content hash.
#     shared_cache_test.sh WORKSPACE NGINX_CONF_IN WRP_VENV_VERSIONS NVRTC_VENV_VERSIONS
# The pinned venvs are repository rules, which no cache holds: both builds reuse this
# build's (--override_repository), so the test downloads nothing.
set -uo pipefail
root=$(dirname "$(readlink -f "$1")")
conf_in=$(readlink -f "$2")
venv=$(dirname "$(readlink -f "$3")")
nvrtc_venv=$(dirname "$(readlink -f "$4")")
targets=(//models:sim_cpu_wrp)
tests=(//models:sim_cpu_wrp_replay_test //models:sim_cpu_wrp_embedded_replay_test)

nginx=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$nginx" ]; then
  echo "FAIL: nginx is not installed: run tools/setup.sh (apt-get install nginx-light)"
  exit 1
fi
work=${TEST_TMPDIR:-$(mktemp -d)}/shared_cache
rm -rf "$work"
mkdir -p "$work/nginx/store/cache" "$work/nginx/tmp"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e "s|@DIR@|$work/nginx|g" -e "s|@PORT@|$port|g" "$conf_in" >"$work/nginx/nginx.conf"
"$nginx" -c "$work/nginx/nginx.conf" -p "$work/nginx" &
nginx_pid=$!
cleanup() {
  for ob in "$work"/ob*; do
    [ -d "$ob" ] && bazel --output_user_root="$work/user_root" --output_base="$ob" shutdown >/dev/null 2>&1
  done
  kill "$nginx_pid" 2>/dev/null
  wait "$nginx_pid" 2>/dev/null
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cache=http://127.0.0.1:$port/cache
python3 - "$cache/" <<'PY' || { echo "FAIL: nginx did not answer on $cache"; cat "$work/nginx/error.log"; exit 1; }
import sys, time, urllib.error, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1)
        break
    except urllib.error.HTTPError:
        break  # it answered (a directory without an index is 403/404)
    except OSError:
        time.sleep(0.1)
else:
    sys.exit(1)
PY

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

# One clean output base: bazel build + bazel test of the CPU targets against the cache.
# Prints the content hash; leaves Bazel's logs in $work/<ob>.{build,test}.log.
run() {
  local ob=$1
  local flags=(--config=cache "--remote_cache=$cache" --symlink_prefix=/
    "--override_repository=wrp_venv=$venv" "--override_repository=wrp_nvrtc_13_0_venv=$nvrtc_venv")
  local startup=(--output_user_root="$work/user_root" --output_base="$work/$ob")
  (cd "$root" && bazel "${startup[@]}" build "${flags[@]}" --execution_log_json_file="$work/$ob.build.exec.json" \
    "${targets[@]}") >"$work/$ob.build.log" 2>&1 ||
    { tail -30 "$work/$ob.build.log"; return 1; }
  (cd "$root" && bazel "${startup[@]}" test "${flags[@]}" --execution_log_json_file="$work/$ob.test.exec.json" \
    "${tests[@]}") >"$work/$ob.test.log" 2>&1 ||
    { tail -30 "$work/$ob.test.log"; return 1; }
  cat "$(cd "$root" && bazel "${startup[@]}" info "${flags[@]}" bazel-bin 2>/dev/null)/models/sim_cpu_wrp.sha256"
}
processes() { grep -E '^INFO: [0-9]+ process' "$1" | tail -1; }
# Nothing ran here: every spawn in the execution log was a remote cache hit, except the
# test.xml writers when allowed: Bazel 4.2 passes the test's wall time to that spawn, so
# after a cached test (time 0) its key differs from the first run's. The tests themselves
# (test-setup.sh) must be hits, at least MIN_TESTS of them.
executed_nothing() { # LOG EXEC_JSON MIN_TESTS
  echo "  $(basename "$1"): $(processes "$1" | cut -c7-)"
  python3 - "$2" "$3" <<'PY'
import json, sys
text, decoder, at = open(sys.argv[1]).read(), json.JSONDecoder(), 0
ran, cached_tests = [], 0
while text[at:].strip():
    while text[at].isspace():
        at += 1
    spawn, at = decoder.raw_decode(text, at)
    args = " ".join(spawn.get("commandArgs", []))
    if spawn.get("remoteCacheHit"):
        cached_tests += "test-setup.sh" in args
    elif "generate-xml.sh" in args:
        print("    ran (test.xml writer, see above):", spawn.get("progressMessage"))
    else:
        ran.append(f"{spawn.get('mnemonic')} {spawn.get('progressMessage')} ({spawn.get('runner')})")
for what in ran:
    print("    executed:", what)
if cached_tests < int(sys.argv[2]):
    print(f"    only {cached_tests} test runs came from the cache, expected {sys.argv[2]}")
sys.exit(1 if ran or cached_tests < int(sys.argv[2]) else 0)
PY
}
executed_something() {
  local line
  line=$(processes "$1")
  echo "  $(basename "$1"): ${line#INFO: }"
  echo "$line" | grep -qE '[0-9]+ (linux-sandbox|processwrapper-sandbox|local|sandbox|docker)'
}

start=$(date +%s)
hash1=$(run ob1) || { echo "FAIL: first build/test (cold cache) failed"; exit 1; }
echo "first output base (cold cache): $(($(date +%s) - start)) s, content hash ${hash1:0:16}"
check "the first build executed actions and the first test run executed the tests" \
  eval 'executed_something "$work/ob1.build.log" && executed_something "$work/ob1.test.log"'
stored=$(find "$work/nginx/store/cache" -type f | wc -l)
check "the first output base uploaded to nginx ($stored entries under ac/ and cas/)" \
  test -d "$work/nginx/store/cache/ac" -a -d "$work/nginx/store/cache/cas" -a "$stored" -gt 0
bazel --output_user_root="$work/user_root" --output_base="$work/ob1" shutdown >/dev/null 2>&1

start=$(date +%s)
hash2=$(run ob2) || { echo "FAIL: second build/test (warm cache) failed"; exit 1; }
echo "second output base (warm cache): $(($(date +%s) - start)) s, content hash ${hash2:0:16}"
check "the second clean output base's build executed no action" \
  executed_nothing "$work/ob2.build.log" "$work/ob2.build.exec.json" 0
check "the second clean output base's test run executed no test and no build action (cached test results)" \
  executed_nothing "$work/ob2.test.log" "$work/ob2.test.exec.json" "${#tests[@]}"
check "the same content hash from both output bases" test "$hash1" = "$hash2" -a -n "$hash1"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
