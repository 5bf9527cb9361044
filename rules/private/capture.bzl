"""The capture action: runs the user's script under Warp APIC (`wrpkg.capture`)."""

load(":flags.bzl", "CaptureModeInfo")
load(":pools.bzl", "CAPTURE_EXEC_GROUP")
load(":providers.bzl", "WrpKernelCacheInfo")
load(":python.bzl", "run_wrpkg")

def recorded_capture(ctx, stem):
    """A capture made earlier (checked in): its directory and files, in place of the capture action.

    Lets the GPU-free part of the pipeline (per-SM compiles, bundle) build and be tested
    on machines without a GPU, from a raw capture made once on a GPU runner. What the
    later actions read is checked here, at analysis, so a wrong `stem` or a missing file
    names itself instead of failing inside an action."""
    files = ctx.files.recorded_capture
    markers = [f for f in files if f.basename == "capture.json"]
    if len(markers) != 1:
        fail("{}: recorded_capture must hold exactly one capture.json (a `wrpkg capture` output directory), found {}".format(
            ctx.label,
            len(markers),
        ))
    root = markers[0].dirname
    relative = sorted([f.path[len(root) + 1:] for f in files if f.path.startswith(root + "/")])
    wrps = [p for p in relative if "/" not in p and p.endswith(".wrp")]
    if stem + ".wrp" not in wrps:
        fail(("{label}: recorded_capture {capture} has no {stem}.wrp (stem = \"{stem}\"); its .wrp files: {found}.\n" +
              "Fix: set stem to the recorded file's name without .wrp{hint}, or add {stem}.wrp to {capture}.").format(
            label = ctx.label,
            capture = ctx.attr.recorded_capture.label,
            stem = stem,
            found = ", ".join(wrps) or "none",
            hint = " (stem = \"{}\")".format(wrps[0][:-len(".wrp")]) if len(wrps) == 1 else "",
        ))
    modules = [p for p in relative if p.startswith(stem + "_modules/")]
    needed = ["interface.json"]
    missing = [p for p in needed if p not in relative]
    if not modules:
        missing.append(stem + "_modules/ (the captured modules)")
    if missing:
        fail(("{label}: recorded_capture {capture} (in {root}) lacks {missing}.\n" +
              "Fix: re-record it with `python -m wrpkg.capture ... --out-dir DIR` and include every file of DIR " +
              "(e.g. glob([\"DIR/**\"])).").format(
            label = ctx.label,
            capture = ctx.attr.recorded_capture.label,
            root = root,
            missing = ", ".join(missing),
        ))
    return struct(path = root, files = files, script = None, script_deps = [], label = str(ctx.label))

def capture_mode(ctx):
    """"gpu" or "retarget" for a CUDA capture ("auto" follows --//rules:capture_mode); None for CPU."""
    if ctx.attr.device != "cuda":
        if ctx.attr.capture_mode not in ("auto", "gpu"):
            fail('{}: capture_mode = "{}" makes a CUDA capture, but device = "{}"'.format(
                ctx.label,
                ctx.attr.capture_mode,
                ctx.attr.device,
            ))
        return None
    if ctx.attr.capture_mode == "auto":
        return ctx.attr._capture_mode_flag[CaptureModeInfo].mode
    return ctx.attr.capture_mode

def declare_capture(ctx, stem):
    """Declares and registers the capture of ctx.file.capture; returns struct(path, files)."""
    raw = ctx.actions.declare_directory(ctx.label.name + ".raw")
    script_deps = [dep[PyInfo].transitive_sources for dep in ctx.attr.deps if PyInfo in dep]
    script_deps += [depset(ctx.files.data)]
    mode = capture_mode(ctx)
    on_gpu = mode == "gpu"
    options = (["--mode", mode] if mode else []) + (["--cuda-arch", str(ctx.attr.cuda_arch)] if mode == "retarget" else [])

    # A retargeted capture answers device queries as its device_model (wrpkg/capture/device_model.py).
    if mode == "retarget":
        options += ["--device-model", ctx.attr.device_model]

    # A wp.uint64 parameter holding a live wp.Mesh id: recorded as a wp.handle, or refused.
    if not ctx.attr.relocate_uint64_mesh_ids:
        options.append("--no-relocate-uint64-mesh-ids")
    if not ctx.attr.direct_step_check:
        options.append("--no-direct-step-check")
    seeds = []
    if ctx.attr.kernel_cache:
        cache = ctx.attr.kernel_cache[WrpKernelCacheInfo]

        # A retargeted capture also compiles for its cuda_arch; a GPU capture uses Warp's own CUDA cache.
        seeds = [cache.cpu_dir] + ([cache.cuda_dir] if cache.cuda_dir and mode == "retarget" else [])
        for seed in seeds:
            options += ["--seed-cache", seed.path]
    run_wrpkg(
        ctx,
        tool = "capture",
        arguments = [
            "--script",
            ctx.file.capture.path,
            "--device",
            ctx.attr.device,
            "--out-dir",
            raw.path,
            "--stem",
            stem,
            "--label",
            str(ctx.label),
        ] + options,
        inputs = [ctx.file.capture] + seeds,
        outputs = [raw],
        extra_files = script_deps,
        mnemonic = {"gpu": "WrpCaptureCuda", "retarget": "WrpCaptureRetarget"}.get(mode, "WrpCapture"),
        progress_message = "Capturing {} on {}".format(
            ctx.label,
            "the CPU, retargeted to CUDA" if mode == "retarget" else ctx.attr.device,
        ),
        # A capture on the GPU needs one: wrp_artifact routes this exec group to the GPU
        # pool (rules/private/pools.bzl); --config=gpu runs it where the GPU is. A retargeted
        # capture runs on the CPU and stays in the default exec group.
        exec_group = CAPTURE_EXEC_GROUP if on_gpu else None,
    )

    # The per-SM compiles import the script too: Warp rebuilds MathDx modules per SM from it (wrpkg.mathdx).
    return struct(path = raw.path, files = [raw], script = ctx.file.capture, script_deps = script_deps, label = str(ctx.label))
