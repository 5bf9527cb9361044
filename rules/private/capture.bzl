"""The capture action: runs the user's script under Warp APIC (`wrpkg.capture`)."""

load(":python.bzl", "run_wrpkg")

def declare_capture(ctx, stem):
    """Declares and registers the capture of ctx.file.capture; returns the raw/ tree artifact."""
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
        # A CUDA capture needs the GPU: remote executors and runner pools route on
        # `gpu`; --config=gpu runs it where the GPU is (see .bazelrc).
        execution_requirements = {"gpu": "1"} if is_cuda else {},
    )
    return raw
