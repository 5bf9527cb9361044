"""rules_warp: the public API. Everything here is re-exported from rules/private/."""

load("//rules/private:artifact.bzl", _wrp_artifact = "wrp_artifact")
load("//rules/private:cc.bzl", _wrp_cc_library = "wrp_cc_library")
load("//rules/private:kernel_cache.bzl", _wrp_kernel_cache = "wrp_kernel_cache")
load(
    "//rules/private:providers.bzl",
    _WrpCudaToolchainInfo = "WrpCudaToolchainInfo",
    _WrpInfo = "WrpInfo",
    _WrpKernelCacheInfo = "WrpKernelCacheInfo",
)
load("//rules/private:test.bzl", _wrp_replay_test = "wrp_replay_test")

wrp_artifact = _wrp_artifact
wrp_cc_library = _wrp_cc_library
wrp_kernel_cache = _wrp_kernel_cache
wrp_replay_test = _wrp_replay_test
WrpInfo = _WrpInfo
WrpCudaToolchainInfo = _WrpCudaToolchainInfo
WrpKernelCacheInfo = _WrpKernelCacheInfo
