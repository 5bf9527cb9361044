"""The capture action: runs the user's script under Warp APIC (`wrpkg.capture`)."""

load(":pools.bzl", "CAPTURE_EXEC_GROUP")
load(":python.bzl", "run_wrpkg")

def recorded_capture(ctx):
    """A capture made earlier (checked in): its directory and files, in place of the capture action.

    Lets the GPU-free part of the pipeline (per-SM compiles, bundle) build and be tested
    on machines without a GPU, from a raw capture made once on a GPU runner."""
    files = ctx.files.recorded_capture
    markers = [f for f in files if f.basename == "capture.json"]
    if len(markers) != 1:
        fail("{}: recorded_capture must hold exactly one capture.json (a `wrpkg capture` output directory)".format(ctx.label))
    return struct(path = markers[0].dirname, files = files)

def declare_capture(ctx, stem):
    """Declares and registers the capture of ctx.file.capture; returns struct(path, files)."""
    raw = ctx.actions.declare_directory(ctx.label.name + ".raw")
    script_deps = [dep[PyInfo].transitive_sources for dep in ctx.attr.deps if PyInfo in dep]
    script_deps += [depset(ctx.files.data)]
    is_cuda = ctx.attr.device == "cuda"
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
        ],
        inputs = [ctx.file.capture],
        outputs = [raw],
        extra_files = script_deps,
        mnemonic = "WrpCaptureCuda" if is_cuda else "WrpCapture",
        progress_message = "Capturing {} on {}".format(ctx.label, ctx.attr.device),
        # A CUDA capture needs the GPU: wrp_artifact routes this exec group to the GPU
        # pool (rules/private/pools.bzl); --config=gpu runs it where the GPU is.
        exec_group = CAPTURE_EXEC_GROUP,
    )
    return struct(path = raw.path, files = [raw])
