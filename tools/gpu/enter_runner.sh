#!/usr/bin/env bash
# Runs a command inside the GPU runner's root filesystem (unpacked by runner_unpack.sh) the
# way NVIDIA's container runtime starts `docker run --gpus all` of the runner image:
#   - a private mount namespace (`unshare -m`): every mount below ends with the command;
#     the root filesystem becomes its root (pivot_root) and the host's tree is unmounted
#   - /dev: a fresh tmpfs with the ordinary nodes (and fuse, where the host has it), /dev/pts
#     and /dev/shm, plus
#     /dev/nvidiactl, /dev/nvidia-uvm* and the /dev/nvidia<minor> node of each GPU that
#     NVIDIA_VISIBLE_DEVICES selects (all | none | comma list of indices or UUIDs)
#   - /proc and /sys of the host (one_gpu.sh reads /proc/driver/nvidia/gpus)
#   - the host driver's user-space libraries (compute: libcuda.so.1, the PTX JIT compiler,
#     libnvidia-nvvm, libnvidia-gpucomp; utility: libnvidia-ml.so.1, nvidia-smi), found with
#     the host's `ldconfig -p`, bound read-only into /usr/local/nvidia/lib64 (bin) inside,
#     which the root filesystem's ld.so.conf.d lists, then `ldconfig` there: every process
#     finds them, also Bazel's sandboxed actions, whose environment is cleared
#   - a clean environment: the image's (PATH, HOME, LANG) and NVIDIA_VISIBLE_DEVICES,
#     NVIDIA_DRIVER_CAPABILITIES=compute,utility, plus each -e NAME=VALUE given
# Without /dev/nvidia* (a machine without a GPU) it says so and runs the command all the same.
#
#     tools/gpu/enter_runner.sh [--root DIR] [-w DIR] [-e NAME=VALUE]... [-v HOST_DIR:DIR]...
#                               [--] COMMAND [ARG]...
#     (root: /tmp/runner-root; working directory: /; -v binds a host directory in, as
#     docker's -v does; needs root, unshare and pivot_root)
# With Docker and the NVIDIA container toolkit the same is (toolchains/containers/README.md):
#     docker run --rm --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility IMAGE COMMAND
set -euo pipefail
root=/tmp/runner-root
workdir=/
envs=()
volumes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=$2; shift 2 ;;
    -w) workdir=$2; shift 2 ;;
    -e) envs+=("$2"); shift 2 ;;
    -v) volumes+=("$2"); shift 2 ;;
    --) shift; break ;;
    -*) echo "enter_runner.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: enter_runner.sh [--root DIR] [-w DIR] [-e NAME=VALUE]... [--] COMMAND..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "enter_runner.sh: needs root (mount namespaces, chroot)" >&2; exit 1; }
[ -x "$root/bin/sh" ] || {
  echo "enter_runner.sh: no runner root filesystem at $root: unpack one with tools/gpu/runner_unpack.sh install" >&2
  exit 1
}
root=$(cd "$root" && pwd)

if [ "${ENTER_RUNNER_IN_NS:-}" != 1 ]; then
  # Mounts made below stay in this namespace and end with it; nothing leaks to the host.
  again=(--root "$root" -w "$workdir")
  for e in "${envs[@]}"; do again+=(-e "$e"); done
  for v in "${volumes[@]}"; do again+=(-v "$v"); done
  exec env ENTER_RUNNER_IN_NS=1 unshare --mount --propagation private -- "$0" "${again[@]}" -- "$@"
fi

visible=${NVIDIA_VISIBLE_DEVICES:-all}
say() { echo "enter_runner.sh: $*" >&2; }
# The root filesystem becomes this namespace's root by pivot_root, as container runtimes do,
# not by chroot alone: the kernel refuses a user namespace to a chrooted process, and Bazel's
# linux-sandbox makes one for every action.
mount --bind "$root" "$root"

# --- /dev: what a container gets, and the selected GPUs ---
mount -t tmpfs -o nosuid,mode=0755 tmpfs "$root/dev"
nodes=(null zero full random urandom tty)
# FUSE where the host has it: the reference cluster's workers (remote/in_runner.sh) stage each
# action's inputs through buildbox-fuse instead of hard-linking 20,000 files an action.
[ -c /dev/fuse ] && nodes+=(fuse)
for node in "${nodes[@]}"; do
  touch "$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
ln -s pts/ptmx "$root/dev/ptmx"

# GPU index (the driver's order, as nvidia-smi numbers them), minor and UUID of every GPU.
gpus=()
index=0
for info in /proc/driver/nvidia/gpus/*/information; do
  [ -r "$info" ] || continue
  minor=$(sed -n 's/^Device Minor:[[:space:]]*//p' "$info")
  uuid=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$info")
  gpus+=("$index $minor $uuid")
  index=$((index + 1))
done
bound=()
if [ "${#gpus[@]}" -eq 0 ] || ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  say "no NVIDIA GPU on this machine (no /dev/nvidia* nodes, no /proc/driver/nvidia/gpus): running without one"
elif [ "$visible" = none ] || [ "$visible" = void ]; then
  say "NVIDIA_VISIBLE_DEVICES=$visible: no GPU mounted"
else
  for gpu in "${gpus[@]}"; do
    read -r i minor uuid <<<"$gpu"
    case ",$visible," in
      ,all, | *",$i,"* | *",$uuid,"*) ;;
      *) continue ;;
    esac
    touch "$root/dev/nvidia$minor"
    mount --bind "/dev/nvidia$minor" "$root/dev/nvidia$minor"
    bound+=("nvidia$minor ($uuid)")
  done
  [ "${#bound[@]}" -gt 0 ] || { say "NVIDIA_VISIBLE_DEVICES=$visible selects none of the ${#gpus[@]} GPUs"; exit 1; }
  for node in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia-modeset; do
    [ -e "$node" ] || continue
    touch "$root$node"
    mount --bind "$node" "$root$node"
  done
  if [ -d /dev/nvidia-caps ]; then
    mkdir -p "$root/dev/nvidia-caps"
    mount --bind /dev/nvidia-caps "$root/dev/nvidia-caps"
  fi
  say "GPUs: ${bound[*]}"
fi

# --- /proc, /sys ---
mount --rbind /proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --make-rslave "$root/proc"
mount --make-rslave "$root/sys"

# --- the host driver's user-space libraries and tools ---
driver_lib=$root/usr/local/nvidia/lib64
driver_bin=$root/usr/local/nvidia/bin
mkdir -p "$driver_lib" "$driver_bin"
mount -t tmpfs -o mode=0755 nvidia-lib "$driver_lib"
mount -t tmpfs -o mode=0755 nvidia-bin "$driver_bin"
libs=()
# ldconfig -p: "	libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"; a host
# that finds its driver through LD_LIBRARY_PATH only has it in those directories.
find_driver_lib() {
  local found dir
  found=$(ldconfig -p | awk -v s="$1" '$1 ~ "^"s && /x86-64/ {print $NF}' | sort -u)
  if [ -z "$found" ]; then
    for dir in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
      found=$(ls "$dir/$1"* 2>/dev/null | head -1)
      [ -n "$found" ] && break
    done
  fi
  [ -z "$found" ] || echo "$found"
}
# What NVIDIA's container toolkit mounts for the compute and utility capabilities.
for soname in libcuda.so.1 libcudadebugger.so.1 libnvidia-ptxjitcompiler.so.1 libnvidia-nvvm.so.4 \
  libnvidia-gpucomp.so libnvidia-ml.so.1 libnvidia-cfg.so.1 libnvidia-opencl.so.1; do
  while read -r path; do
    real=$(readlink -f "$path")
    name=$(basename "$real")
    [ -e "$driver_lib/$name" ] && continue
    touch "$driver_lib/$name"
    mount --bind -o ro "$real" "$driver_lib/$name"
    # The name programs open (dlopen("libcuda.so.1")); ldconfig makes the same link from
    # the library's own SONAME.
    case "$soname" in *.so.[0-9]*) [ "$name" = "$soname" ] || ln -sf "$name" "$driver_lib/$soname" ;; esac
    libs+=("$name")
  done < <(find_driver_lib "$soname")
done
# Whatever those need beyond the root filesystem's own libraries (glibc, normally nothing).
if [ "${#libs[@]}" -gt 0 ]; then
  while read -r dep path; do
    [ -e "$driver_lib/$dep" ] && continue
    chroot "$root" /sbin/ldconfig -p | grep -q "^[[:space:]]$dep " && continue
    touch "$driver_lib/$dep"
    mount --bind -o ro "$(readlink -f "$path")" "$driver_lib/$dep"
    libs+=("$dep (needed)")
  done < <(for l in "${libs[@]}"; do ldd "$driver_lib/${l%% *}" 2>/dev/null; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
  say "driver libraries: ${libs[*]}"
else
  say "no NVIDIA driver libraries on this machine (ldconfig -p has no libcuda.so.1)"
fi
for tool in nvidia-smi nvidia-debugdump; do
  path=$(command -v "$tool" || true)
  [ -n "$path" ] || continue
  touch "$driver_bin/$tool"
  mount --bind -o ro "$(readlink -f "$path")" "$driver_bin/$tool"
done
for volume in "${volumes[@]}"; do
  host_dir=${volume%%:*}
  inside=${volume#*:}
  [ -d "$host_dir" ] || { say "-v $volume: no directory $host_dir on this machine"; exit 1; }
  mkdir -p "$root$inside"
  mount --bind "$host_dir" "$root$inside"
done
echo /usr/local/nvidia/lib64 >"$root/etc/ld.so.conf.d/000-nvidia-driver.conf"
chroot "$root" /sbin/ldconfig

image_env=(
  PATH=/usr/local/nvidia/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  HOME=/root LANG=C.UTF-8 USER=root
  NVIDIA_VISIBLE_DEVICES="$visible"
  NVIDIA_DRIVER_CAPABILITIES=compute,utility
)
# After pivot_root the host's tree is at /.oldroot, and it goes from the runner's view (a lazy
# unmount). The root filesystem may have no umount (the runner image has none; a fresh Debian
# root has neither umount nor python3): the host's umount does it, run from /.oldroot through
# the host's own dynamic loader and libraries, named by their real paths (an absolute symlink
# under /.oldroot would resolve inside the new root).
umount_bin=$(readlink -f "$(command -v umount)")
loader=$(readlink -f "$(ldd "$umount_bin" | awk '$1 ~ /^\// && $1 ~ /ld-linux/ {print $1}')")
lib_path=$(ldd "$umount_bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | xargs -r -n1 readlink -f |
  xargs -r -n1 dirname | sort -u | sed 's|^|/.oldroot|' | paste -sd: -)
mkdir -p "$root/.oldroot"
cd "$root"
pivot_root . .oldroot
exec /usr/bin/env -i "${image_env[@]}" "${envs[@]}" /bin/sh -c \
  '"/.oldroot$1" --library-path "$2" "/.oldroot$3" -l /.oldroot || exit 1; cd "$4" && shift 4 && exec "$@"' \
  sh "$loader" "$lib_path" "$umount_bin" "$workdir" "$@"
