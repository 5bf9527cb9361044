"""wrp_artifact: capture -> per-SM compiles -> bundle, with WrpInfo as its contract."""

load(":archs.bzl", "resolve_archs")
load(":bundle.bzl", "declare_bundle")
load(":capture.bzl", "capture_mode", "declare_capture", "recorded_capture")
load(":cc.bzl", "wrp_cc_library")
load(":compile.bzl", "declare_compiles")
load(":flags.bzl", "ArchListInfo", "CaptureModeInfo")
load(":golden.bzl", "GOLDEN_EXEC_GROUP", "wrp_test_bundle")
load(":pools.bzl", "CAPTURE_EXEC_GROUP", "gpu_exec_properties")
load(":providers.bzl", "WrpInfo", "WrpKernelCacheInfo")
load(":python.bzl", "WRPKG_PYTHON_TOOLCHAIN", "WRPKG_TOOL_ATTRS")
load(":test.bzl", "wrp_replay_test")

# Label(): resolved in rules_warp, also when a consuming workspace loads this file.
_CUDA_TOOLCHAIN = str(Label("//toolchains/cuda:toolchain_type"))

def _wrp_artifact_impl(ctx):
    script = ctx.file.capture
    if bool(script) == bool(ctx.attr.recorded_capture):
        fail("{}: set exactly one of `capture` (a script) and `recorded_capture`".format(ctx.label))
    stem = ctx.attr.stem or (script.basename[:-len(".py")] if script else "")
    if not stem:
        fail("{}: a recorded_capture needs `stem` (the .wrp file's name without .wrp)".format(ctx.label))
    raw = recorded_capture(ctx, stem) if ctx.attr.recorded_capture else declare_capture(ctx, stem)
    mode = None if ctx.attr.recorded_capture else capture_mode(ctx)
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
        # Single-file views for $(rootpath) and filegroup(output_group = ...).
        OutputGroupInfo(
            bundle_dir = depset([bundle_dir]),
            tar = depset([tar]),
            content_hash = depset([content_hash]),
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
            # Known at analysis except for a recorded capture (its capture.json says).
            golden_device = "cpu" if ctx.attr.device == "cpu" or mode == "retarget" else ("cuda" if mode == "gpu" else None),
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
    "capture_mode": attr.string(
        default = "auto",
        values = ["auto", "gpu", "retarget"],
        doc = "How a CUDA capture is made: gpu (on a CUDA GPU), retarget (on the CPU, rewritten to the " +
              "CUDA capture Warp would write; no GPU), auto (--//rules:capture_mode: retarget, gpu with --config=gpu).",
    ),
    "cuda_arch": attr.int(
        default = 90,
        doc = "SM of a retargeted capture's packaged cubins (the bundle compiles every SM in `archs` anyway).",
    ),
    "data": attr.label_list(allow_files = True, doc = "Files the capture script reads."),
    "deps": attr.label_list(providers = [[PyInfo]], doc = "py_library targets the capture script imports."),
    "device": attr.string(
        default = "cuda",
        values = ["cuda", "cpu"],
        doc = "Where the capture runs. cuda needs a GPU runner (--config=gpu); cpu runs anywhere.",
    ),
    "device_model": attr.string(
        default = "h200",
        # wrpkg/capture/device_model.py's MODELS and "none" (tests/test_retarget.py holds them equal).
        values = ["h200", "h100-sxm", "h100-pcie", "l40s", "a100-sxm4-80gb", "none"],
        doc = "For a retargeted capture: the GPU that the capture script and the libraries it calls are told " +
              "they run on (Device.is_cuda, arch, sm_count, total_memory, mempools, " +
              "wp.is_conditional_graph_supported, ...), so they take the branch a capture on that GPU takes; " +
              "each answer is recorded in capture.json (device_model_answers), and what a CPU run cannot give " +
              "(a CUDA stream or context) is refused. \"none\": they see the CPU and run its branch, the lines " +
              "that asked recorded (cpu_device_branches). Ignored by a GPU capture. Set `cuda_arch` to the model's " +
              "SM (l40s: 89, a100-sxm4-80gb: 80) for the capture such a GPU makes. See docs/retarget.md.",
    ),
    "direct_step_check": attr.bool(
        default = True,
        doc = "After the golden replay, the capture runs build() and step() once more without a capture, in a " +
              "fresh process, and refuses the capture where an output differs from the replay of the saved " +
              "graph and a second such run agrees with the first: something the step did is in no replay " +
              "(host code that writes device memory, a library's host-side work). A program whose two runs " +
              "disagree is captured with a note. False skips the check.",
    ),
    "kernel_cache": attr.label(
        providers = [WrpKernelCacheInfo],
        doc = "A wrp_kernel_cache whose compiled kernels the capture starts from (it compiles only what " +
              "the cache lacks); changes no byte of the bundle.",
    ),
    "keep_source": attr.bool(
        default = True,
        doc = "Keep the retained CUDA source (Warp compiles it at load time on a GPU no SASS/PTX fits).",
    ),
    "ptx": attr.string(
        default = "lowest",
        doc = '"lowest" (PTX for the lowest SM in archs), "none", or compute_NN.',
    ),
    "recorded_capture": attr.label(
        allow_files = True,
        doc = "Instead of `capture`: the files of an earlier `wrpkg capture` (e.g. checked in from a GPU runner).",
    ),
    "relocate_uint64_mesh_ids": attr.bool(
        default = True,
        doc = "A `wp.uint64` kernel parameter that holds exactly the id of a live wp.Mesh (NVIDIA's mesh " +
              "samples pass `mesh.id` so) is recorded as a handle relocation, as if the kernel declared it " +
              "`wp.handle`: the .wrp is the one Warp saves for that program, and the capture log, capture.json " +
              "and `wrpkg inspect` name each such parameter. Warp's APIC alone saves the id verbatim (a crash " +
              "at replay). False: such a capture is refused, naming the parameter. Other live addresses in a " +
              "plain integer (an array's .ptr, a BVH, hash grid or volume id) are refused either way.",
    ),
    "stem": attr.string(doc = "File stem of the .wrp (default: the capture script's name)."),
    "_archs_flag": attr.label(default = "//rules:archs"),
    "_capture_mode_flag": attr.label(default = "//rules:capture_mode", providers = [CaptureModeInfo]),
})

wrp_artifact_rule = rule(
    implementation = _wrp_artifact_impl,
    attrs = _ATTRS,
    toolchains = [_CUDA_TOOLCHAIN, WRPKG_PYTHON_TOOLCHAIN],
    exec_groups = {CAPTURE_EXEC_GROUP: exec_group()},
    doc = "Captures a Warp program and bundles it for every listed GPU architecture.",
)

_OUTPUT_GROUPS = {"dir": "bundle_dir", "tar": "tar", "sha256": "content_hash"}

def _bundle_views(bundle, parts, tags, visibility, testonly, target_compatible_with):
    """The single-file views <bundle>_<part> of a WrpInfo target and its wrp_cc_library <bundle>_cc."""
    for part in parts:
        native.filegroup(
            name = "{}_{}".format(bundle, part),
            srcs = [":" + bundle],
            output_group = _OUTPUT_GROUPS[part],
            tags = tags,
            visibility = visibility,
            testonly = testonly,
        )
    wrp_cc_library(
        name = bundle + "_cc",
        artifact = ":" + bundle,
        tags = tags,
        target_compatible_with = target_compatible_with,
        visibility = visibility,
        testonly = testonly,
    )

def wrp_artifact(name, tags = [], visibility = None, testonly = False, replay_tests = True, **kwargs):
    """A bundle plus everything C++ needs to use and test it.

    Declares:
      name:                       the bundle (name/, name.tar, name.sha256; provides WrpInfo)
      name_cc:                    wrp_cc_library embedding it (C++ deps = ["//pkg:name_cc"])
      name_replay_test:           cc_test replaying the bundle directory against its golden outputs
      name_embedded_replay_test:  the same from the bytes linked into the test binary
      name_test_bundle:           (CUDA) the bundle those tests load: name itself, or with
                                  --//rules:gpu_goldens (--config=gpu) its copy whose goldens
                                  were made by replaying it on the GPU pool, when the capture's
                                  goldens came from the CPU (a retargeted capture)
      name_dir, name_tar, name_sha256: single-file views for $(rootpath ...)

    Args:
      name: the bundle's name.
      tags: applied to every target. CUDA artifacts' tests are tagged `gpu`, and a live
        CUDA capture too (it needs a GPU runner).
      visibility: of every target.
      testonly: of every target.
      replay_tests: declare the two replay tests (False for a bundle meant not to load).
      **kwargs: the attributes of wrp_artifact_rule, the rule behind this macro (capture, device,
        archs, ptx, ...), each documented with that rule.
    """
    device = kwargs.get("device", "cuda")
    gpu = ["gpu"] if device == "cuda" else []

    # A CPU bundle's modules are object code for the capture host's CPU: C++ targets that
    # embed or replay it exist only for that CPU (the bundle itself is data and builds anywhere).
    same_cpu = select({
        str(Label("//rules:target_cpu_is_host_cpu")): [],
        "//conditions:default": [str(Label("//rules:cpu_bundle_needs_the_capture_cpu"))],
    }) if device == "cpu" else []

    # Only a capture on the GPU needs one to build; a retargeted or recorded capture
    # ("auto" retargets unless --config=gpu) compiles and bundles anywhere.
    needs_gpu = kwargs.get("capture_mode", "auto") == "gpu" and not kwargs.get("recorded_capture")
    build_tags = tags + (gpu if needs_gpu else [])

    # The capture's `capture` exec group goes to the GPU pool; the rule puts the capture action
    # in that group only when it runs on the GPU (capture_mode "gpu", or "auto" under
    # --config=gpu), so a retargeted capture stays in the default pool.
    live_cuda = device == "cuda" and not kwargs.get("recorded_capture") and kwargs.get("capture_mode", "auto") != "retarget"
    test_tags = tags + gpu
    wrp_artifact_rule(
        name = name,
        tags = build_tags,
        visibility = visibility,
        testonly = testonly,
        exec_properties = gpu_exec_properties(CAPTURE_EXEC_GROUP) if live_cuda else {},
        **kwargs
    )
    _bundle_views(name, ["dir", "tar", "sha256"], build_tags, visibility, testonly, same_cpu)
    if not replay_tests:
        return

    # The replay tests of a CUDA bundle load <name>_test_bundle: the bundle itself, or under
    # --//rules:gpu_goldens (--config=gpu) its copy with goldens made by a replay on the GPU pool
    # when the capture's goldens came from the CPU (rules/private/golden.bzl).
    tested = name
    if device == "cuda":
        tested = name + "_test_bundle"
        wrp_test_bundle(
            name = tested,
            artifact = ":" + name,
            tags = test_tags,
            visibility = visibility,
            testonly = True,
            exec_properties = gpu_exec_properties(GOLDEN_EXEC_GROUP),
        )
        _bundle_views(tested, ["dir", "sha256"], test_tags, visibility, True, [])
    wrp_replay_test(
        name = name + "_replay_test",
        cc_library = ":" + tested + "_cc",
        bundle_dir = ":" + tested + "_dir",
        content_hash = ":" + tested + "_sha256",
        tags = test_tags,
        target_compatible_with = same_cpu,
    )
    wrp_replay_test(
        name = name + "_embedded_replay_test",
        cc_library = ":" + tested + "_cc",
        embedded = True,
        tags = test_tags,
        target_compatible_with = same_cpu,
    )
