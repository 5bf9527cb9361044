"""Build settings: `--//rules:archs=sm_80,sm_90` sets the default SM list of every wrp_artifact."""

ArchListInfo = provider(
    doc = "Value of a string-list build setting.",
    fields = {"archs": "List of architecture names; empty means the toolchain's default."},
)

def _arch_list_flag_impl(ctx):
    return [ArchListInfo(archs = [a for a in ctx.build_setting_value if a])]

arch_list_flag = rule(
    implementation = _arch_list_flag_impl,
    build_setting = config.string_list(flag = True),
    doc = "A comma-separated list of SM names given on the command line.",
)

CaptureModeInfo = provider(
    doc = "Value of the capture-mode build setting.",
    fields = {"mode": '"gpu" (capture on a CUDA GPU) or "retarget" (capture on the CPU, write the CUDA capture).'},
)

CAPTURE_MODES = ["gpu", "retarget"]

def _capture_mode_flag_impl(ctx):
    mode = ctx.build_setting_value
    if mode not in CAPTURE_MODES:
        fail("{}: unknown capture mode '{}'; use one of {}".format(ctx.label, mode, ", ".join(CAPTURE_MODES)))
    return [CaptureModeInfo(mode = mode)]

capture_mode_flag = rule(
    implementation = _capture_mode_flag_impl,
    build_setting = config.string(flag = True),
    doc = 'How wrp_artifact(capture_mode = "auto") targets capture: "gpu" or "retarget".',
)

GpuGoldensInfo = provider(
    doc = "Value of the gpu-goldens build setting.",
    fields = {"enabled": "Whether the replay tests of CUDA bundles with CPU-made goldens use goldens made on a GPU."},
)

def _gpu_goldens_flag_impl(ctx):
    return [GpuGoldensInfo(enabled = ctx.build_setting_value)]

gpu_goldens_flag = rule(
    implementation = _gpu_goldens_flag_impl,
    build_setting = config.bool(flag = True),
    doc = "--//rules:gpu_goldens: replay tests of retargeted CUDA bundles compare with goldens made on a GPU.",
)
