"""wrp_artifact: capture -> per-SM compiles -> bundle, with WrpInfo as its contract."""

load(":archs.bzl", "resolve_archs")
load(":bundle.bzl", "declare_bundle")
load(":capture.bzl", "declare_capture", "recorded_capture")
load(":compile.bzl", "declare_compiles")
load(":flags.bzl", "ArchListInfo")
load(":providers.bzl", "WrpInfo")
load(":python.bzl", "WRPKG_TOOL_ATTRS")

_CUDA_TOOLCHAIN = "//toolchains/cuda:toolchain_type"

def _wrp_artifact_impl(ctx):
    script = ctx.file.capture
    if bool(script) == bool(ctx.attr.recorded_capture):
        fail("{}: set exactly one of `capture` (a script) and `recorded_capture`".format(ctx.label))
    stem = ctx.attr.stem or (script.basename[:-len(".py")] if script else "")
    if not stem:
        fail("{}: a recorded_capture needs `stem` (the .wrp file's name without .wrp)".format(ctx.label))
    raw = recorded_capture(ctx) if ctx.attr.recorded_capture else declare_capture(ctx, stem)
    archs, ptx = [], None
    sass_dirs, ptx_dir = {}, None
    if ctx.attr.device == "cuda":
        cuda = ctx.toolchains[_CUDA_TOOLCHAIN].cuda
        archs, ptx = resolve_archs(ctx, cuda, ctx.attr._archs_flag[ArchListInfo].archs)
        sass_dirs, ptx_dir = declare_compiles(ctx, cuda, raw, stem, archs, ptx)
    bundle_dir, tar, content_hash = declare_bundle(ctx, raw, stem, sass_dirs, ptx_dir)
    return [
        DefaultInfo(
            files = depset([bundle_dir, tar, content_hash]),
            runfiles = ctx.runfiles(files = [bundle_dir]),
        ),
        OutputGroupInfo(
            raw_capture = depset(raw.files),
            compiled = depset(sass_dirs.values() + ([ptx_dir] if ptx_dir else [])),
        ),
        WrpInfo(
            name = ctx.label.name,
            label = str(ctx.label),
            device = ctx.attr.device,
            stem = stem,
            bundle_dir = bundle_dir,
            tar = tar,
            content_hash = content_hash,
            archs = archs,
            ptx_arch = ptx,
        ),
    ]

_ATTRS = dict(WRPKG_TOOL_ATTRS)
_ATTRS.update({
    "archs": attr.string_list(
        doc = "SASS targets (sm_75 ... sm_121, `a`/`f` suffixes). Empty: --//rules:archs, else the toolchain default.",
    ),
    "capture": attr.label(
        allow_single_file = [".py"],
        doc = "The capture script: defines build(device) -> wrpkg.capture.CaptureSpec.",
    ),
    "data": attr.label_list(allow_files = True, doc = "Files the capture script reads."),
    "deps": attr.label_list(providers = [[PyInfo]], doc = "py_library targets the capture script imports."),
    "device": attr.string(
        default = "cuda",
        values = ["cuda", "cpu"],
        doc = "Where the capture runs. cuda needs a GPU runner (--config=gpu); cpu runs anywhere.",
    ),
    "ptx": attr.string(
        default = "lowest",
        doc = '"lowest" (PTX for the lowest SM in archs), "none", or compute_NN.',
    ),
    "recorded_capture": attr.label(
        allow_files = True,
        doc = "Instead of `capture`: the files of an earlier `wrpkg capture` (e.g. checked in from a GPU runner).",
    ),
    "stem": attr.string(doc = "File stem of the .wrp (default: the capture script's name)."),
    "_archs_flag": attr.label(default = "//rules:archs"),
})

wrp_artifact_rule = rule(
    implementation = _wrp_artifact_impl,
    attrs = _ATTRS,
    toolchains = [_CUDA_TOOLCHAIN],
    doc = "Captures a Warp program and bundles it for every listed GPU architecture.",
)

def wrp_artifact(name, tags = [], visibility = None, **kwargs):
    """Declares `name` (the bundle).

    Args:
      name: the bundle's name: `bazel build //pkg:name` writes name/, name.tar, name.sha256.
      tags: applied to every target; a CUDA capture is always tagged `gpu`.
      visibility: of every target.
      **kwargs: capture, deps, data, device, archs, ptx, stem (see wrp_artifact_rule).
    """
    device = kwargs.get("device", "cuda")

    # Only a live CUDA capture needs a GPU; a recorded one compiles and bundles anywhere.
    gpu_tags = ["gpu"] if device == "cuda" and not kwargs.get("recorded_capture") else []
    wrp_artifact_rule(
        name = name,
        tags = tags + [t for t in gpu_tags if t not in tags],
        visibility = visibility,
        **kwargs
    )
