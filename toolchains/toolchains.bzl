"""The toolchains of rules_warp, declared over venv repositories of any name.

rules/repositories.bzl generates a small repository whose BUILD file calls
`declare_rules_warp_toolchains` with the names the WORKSPACE chose; rules only ever
resolve toolchain types, so no rule names a venv repository.

The CUDA toolchain, from pinned wheels (no host CUDA):

- SASS: NVRTC 13.4.92 (the NVRTC inside warp-lang 1.19.0), so every cubin is byte for
  byte what Warp itself builds, plus nvFatbin 13.4.92 and cuobjdump 13.4.92 for
  packing; all from toolchains/python/requirements.lock (the main venv).
- PTX: NVRTC 13.0.88 (`nvrtc_13_0`, the PTX venv from
  toolchains/cuda/nvrtc_13_0/requirements.lock). Why an older NVRTC: PTX is the bundle's
  promise to GPUs without matching SASS, and the *driver* JITs it. A driver only JITs
  PTX whose ISA it knows: NVRTC 13.4 writes `.version 9.4`, which drivers older than
  CUDA 13.4 reject (measured on an H200 with driver 580 = CUDA 13.0: the bundle's PTX
  did not load and Warp fell back to compiling the retained source). NVRTC 13.0 writes
  `.version 9.0`, which every CUDA 13 driver (r580+) JITs. So a bundle's PTX must come
  from a toolkit no newer than the oldest driver it promises; SASS needs no JIT and
  keeps Warp's own NVRTC.

Room for more: another wrp_nvrtc (e.g. CUDA 12.9's NVRTC, the last with sm_70/sm_72,
whose PTX ISA 8.8 also older drivers JIT) in its own venv, and a wrp_cuda_toolchain
that names it.

The architecture tables are not written here: rules_warp_dependencies asks each venv's
NVRTC (nvrtcGetSupportedArchs(), and which SMs take an `a`/`f` suffix) when it makes the
toolchains repository, and passes the answer in. wrpkg/archs.py keeps its own copy for
Python without NVRTC; //tests:pins_test holds it to the same answer.
"""

load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")
load("//toolchains/cuda:toolchain.bzl", "wrp_cuda_toolchain", "wrp_nvrtc")
load("//toolchains/python:toolchain.bzl", "wrp_python_toolchain")
load("//toolchains/warp:toolchain.bzl", "wrp_warp_toolchain")

def _nvrtc_tables(answer):
    """wrp_nvrtc's architecture attributes from what that NVRTC answered (cuda_archs.json)."""
    return {
        "cuda_version": answer["cuda_version"],
        "suffix_min_sm": {suffix: str(sm) for suffix, sm in answer["suffix_min_sm"].items()},
        "supported_archs": ["sm_{}".format(sm) for sm in answer["supported_sms"]],
    }

def _toolchain(kind, name, toolchain_type, toolchain_name = None, **attrs):
    """`kind(name, **attrs)` and the toolchain() offering it, `<name>_toolchain` unless named."""
    kind(name = name, **attrs)
    native.toolchain(
        name = toolchain_name or name + "_toolchain",
        toolchain = ":" + name,
        toolchain_type = toolchain_type,
    )

def declare_rules_warp_toolchains(venv, ptx_venv, cuda_archs):
    """Declares every rules_warp toolchain in the calling package.

    Args:
      venv: the main venv repository, e.g. "@wrp_venv" (warp-lang, NVRTC 13.4.92, ...).
      ptx_venv: the PTX compiler's venv repository, e.g. "@wrp_nvrtc_13_0_venv".
      cuda_archs: the generated CUDA_ARCHS of the toolchains repository: what each venv's
        NVRTC reports it supports (`sass`, `ptx`) and the default target list.

    Declares (toolchain() targets end in _toolchain; rules_warp_register_toolchains
    registers them): wrpkg_python, nvrtc_13_0, nvrtc_13_4, warp, py3_runtime_pair, and
    the aliases cuda_files and ruff.
    """
    _toolchain(
        wrp_python_toolchain,
        "wrpkg_python",
        Label("//toolchains/python:toolchain_type"),
        interpreter = venv + "//:venv/bin/python3",
        python_files = venv + "//:python_files",
    )

    # The PTX compiler: its own venv, so its libnvrtc never meets 13.4.92's in one process.
    wrp_nvrtc(
        name = "nvrtc_13_0",
        files = ptx_venv + "//:cuda_files",
        interpreter = ptx_venv + "//:venv/bin/python3",
        python_files = ptx_venv + "//:python_files",
        **_nvrtc_tables(cuda_archs["ptx"])
    )
    _toolchain(
        wrp_cuda_toolchain,
        "nvrtc_13_4",
        Label("//toolchains/cuda:toolchain_type"),
        default_archs = cuda_archs["default_archs"],
        default_ptx = cuda_archs["default_ptx"],
        files = venv + "//:cuda_files",
        interpreter = venv + "//:venv/bin/python3",
        ptx_compiler = ":nvrtc_13_0",
        python_files = venv + "//:python_files",
        **_nvrtc_tables(cuda_archs["sass"])
    )
    _toolchain(
        wrp_warp_toolchain,
        "warp",
        Label("//toolchains/warp:toolchain_type"),
        warp_cc = venv + "//:warp_cc",
        warp_clang = venv + "//:warp_clang",
    )

    # For py_test/py_binary (e.g. bazel run @rules_warp//:wrpkg): registered only on request.
    _toolchain(
        py_runtime_pair,
        "py3_runtime_pair",
        "@bazel_tools//tools/python:toolchain_type",
        toolchain_name = "py3_toolchain",
        py3_runtime = venv + "//:py3_runtime",
    )

    native.alias(name = "cuda_files", actual = venv + "//:cuda_files")
    native.alias(name = "ruff", actual = venv + "//:ruff")
    native.alias(name = "clang_format", actual = venv + "//:clang_format")
