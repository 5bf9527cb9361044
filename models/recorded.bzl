"""Targets that exist once a model's CUDA capture has been recorded on a GPU runner."""

load("//rules:defs.bzl", "wrp_artifact")

def cloth_recorded_targets():
    """//models:cloth_recorded_wrp (every default SM) and //models:cloth_ptx_only_wrp (no SASS an
    H200 runs: its PTX JIT road), from recorded/cloth_cuda_sm90/ when it is checked in. Record it
    from the capture tools/gpu/bench_all.sh returns (cloth_cuda_capture.tar)."""
    if not native.glob(["recorded/cloth_cuda_sm90/cloth.wrp"]):
        return
    native.filegroup(
        name = "cloth_cuda_sm90_capture",
        srcs = native.glob(["recorded/cloth_cuda_sm90/**"]),
    )
    wrp_artifact(
        name = "cloth_recorded_wrp",
        device = "cuda",
        recorded_capture = ":cloth_cuda_sm90_capture",
        stem = "cloth",
    )
    wrp_artifact(
        name = "cloth_ptx_only_wrp",
        archs = ["sm_75", "sm_80"],
        device = "cuda",
        ptx = "compute_75",
        recorded_capture = ":cloth_cuda_sm90_capture",
        stem = "cloth",
    )
