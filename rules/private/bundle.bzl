"""The bundle action: canonical .wrp + fatbins + manifest + deterministic tar (`wrpkg.build.pack`)."""

load(":python.bzl", "run_wrpkg")

def declare_bundle(ctx, raw, stem, sass_dirs, ptx_dir, extra_files = []):
    """Returns (bundle tree, tar, sha256 file)."""
    name = ctx.label.name
    bundle_dir = ctx.actions.declare_directory(name)
    tar = ctx.actions.declare_file(name + ".tar")
    content_hash = ctx.actions.declare_file(name + ".sha256")
    arguments = [
        "--raw-dir",
        raw.path,
        "--stem",
        stem,
        "--name",
        name,
        "--label",
        str(ctx.label),
        "--out-dir",
        bundle_dir.path,
        "--tar",
        tar.path,
        "--hash",
        content_hash.path,
    ]
    for arch in sorted(sass_dirs):
        arguments += ["--arch-dir", "{}={}".format(arch, sass_dirs[arch].path)]
    if ptx_dir:
        arguments += ["--ptx-dir", ptx_dir.path]
    if not ctx.attr.keep_source:
        arguments.append("--no-source")
    run_wrpkg(
        ctx,
        tool = "pack",
        arguments = arguments,
        inputs = raw.files + sass_dirs.values() + ([ptx_dir] if ptx_dir else []),
        outputs = [bundle_dir, tar, content_hash],
        extra_files = extra_files,
        mnemonic = "WrpBundle",
        progress_message = "Bundling {}".format(ctx.label),
    )
    return bundle_dir, tar, content_hash
