"""The bundle a wrp_artifact's replay tests load: the artifact itself, or under --//rules:gpu_goldens
(set by --config=gpu) the same bundle with golden outputs made by replaying it on a GPU.

A retargeted CUDA capture's goldens come from the CPU, and a GPU need not reproduce them
(rounding, atomics' order, cooperative tile code: capture.json's cpu_golden_caveats). The
regolden action (`wrpkg.reader.regolden`) replays the unchanged bundle on the gpu pool and writes a
copy whose deployed files, and so content hash, are the artifact's, with new golden files and
golden.json. The deployed artifact (`<name>`, `<name>_cc`) keeps the capture's goldens."""

load(":flags.bzl", "GpuGoldensInfo")
load(":providers.bzl", "WrpInfo")
load(":python.bzl", "WRPKG_PYTHON_TOOLCHAIN", "WRPKG_TOOL_ATTRS", "run_wrpkg")

# The exec group of the regolden action: routed to the gpu pool by wrp_artifact (pools.bzl).
GOLDEN_EXEC_GROUP = "golden"

def _wrp_test_bundle_impl(ctx):
    info = ctx.attr.artifact[WrpInfo]
    needs_gpu_goldens = (
        ctx.attr._gpu_goldens[GpuGoldensInfo].enabled and
        info.device == "cuda" and
        info.golden_device != "cuda"
    )
    if not needs_gpu_goldens:
        return [
            ctx.attr.artifact[DefaultInfo],
            ctx.attr.artifact[OutputGroupInfo],
            info,
        ]
    name = ctx.label.name
    bundle_dir = ctx.actions.declare_directory(name)
    tar = ctx.actions.declare_file(name + ".tar")
    content_hash = ctx.actions.declare_file(name + ".sha256")
    report = ctx.actions.declare_file(name + ".golden_report.txt")
    run_wrpkg(
        ctx,
        tool = "regolden",
        arguments = [
            "--bundle-dir",
            info.bundle_dir.path,
            "--content-hash",
            info.content_hash.path,
            "--device",
            "cuda",
            "--out-dir",
            bundle_dir.path,
            "--out-hash",
            content_hash.path,
            "--tar",
            tar.path,
            "--report",
            report.path,
        ],
        inputs = [info.bundle_dir, info.content_hash],
        outputs = [bundle_dir, tar, content_hash, report],
        mnemonic = "WrpGoldenOnGpu",
        progress_message = "Replaying {} on the GPU for its goldens".format(info.label),
        exec_group = GOLDEN_EXEC_GROUP,
    )
    return [
        DefaultInfo(
            files = depset([bundle_dir, tar, content_hash, report]),
            runfiles = ctx.runfiles(files = [bundle_dir]),
        ),
        OutputGroupInfo(
            bundle_dir = depset([bundle_dir]),
            tar = depset([tar]),
            content_hash = depset([content_hash]),
            golden_report = depset([report]),
        ),
        WrpInfo(
            name = info.name,
            label = info.label,
            device = info.device,
            stem = info.stem,
            bundle_dir = bundle_dir,
            tar = tar,
            content_hash = content_hash,
            archs = info.archs,
            ptx_arch = info.ptx_arch,
            golden_device = "cuda",
        ),
    ]

_ATTRS = dict(WRPKG_TOOL_ATTRS)
_ATTRS.update({
    "artifact": attr.label(mandatory = True, providers = [WrpInfo], doc = "The wrp_artifact whose replay tests load this."),
    "_gpu_goldens": attr.label(default = "//rules:gpu_goldens", providers = [GpuGoldensInfo]),
})

wrp_test_bundle = rule(
    implementation = _wrp_test_bundle_impl,
    attrs = _ATTRS,
    toolchains = [WRPKG_PYTHON_TOOLCHAIN],
    exec_groups = {GOLDEN_EXEC_GROUP: exec_group()},
    doc = "The bundle a wrp_artifact's replay tests load: the artifact, or with --//rules:gpu_goldens its " +
          "copy with goldens made on a GPU (for CUDA bundles whose goldens came from the CPU).",
)
