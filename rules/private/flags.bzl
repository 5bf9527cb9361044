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
