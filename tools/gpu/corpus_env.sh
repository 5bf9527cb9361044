# Sourced by the corpus checks (apic_retarget_check.sh, mesh_canonical_check.sh) with a NAME: the
# repository on PYTHONPATH, $out ($OUT, else /tmp/NAME-out) with logs/ in it, a fresh $work, $start, and
# the GPU they compare on printed (without one, the check stops here).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
out=${OUT:-/tmp/$1-out}
work=$(mktemp -d "/tmp/$1.XXXXXX")
mkdir -p "$out/logs"
python3 -c 'import warp as wp; wp.config.quiet = True; wp.init(); d = wp.get_cuda_device(0); print("device:", d.name, "sm", d.arch, "warp", wp.config.version)' || exit 1
start=$(date +%s)
