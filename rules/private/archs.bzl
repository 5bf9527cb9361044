"""Choosing and checking target architectures at analysis time."""

def _split(name, prefix, suffixes):
    """("sm_90a", "sm_", {"a": 90}) -> (90, "a"), or None when the name is not of that shape."""
    if not name.startswith(prefix):
        return None
    body = name[len(prefix):]
    suffix = ""
    if body and body[-1] in suffixes:
        suffix = body[-1]
        body = body[:-1]
    if not body or not body.isdigit():
        return None
    return (int(body), suffix)

def _suffix_rules(cuda):
    # "an `a` suffix from sm_90, an `f` suffix from sm_100"
    return ", ".join([
        "an `{}` suffix from sm_{}".format(suffix, sm)
        for suffix, sm in sorted(cuda.suffix_min_sm.items())
    ])

def check_sass_arch(label, name, cuda):
    """Fails the analysis when `name` is not an SM this toolchain's NVRTC can target."""
    parsed = _split(name, "sm_", cuda.suffix_min_sm)
    supported = [_split(a, "sm_", {})[0] for a in cuda.supported_archs]
    ok = parsed != None and parsed[0] in supported
    if ok and parsed[1]:
        ok = parsed[0] >= cuda.suffix_min_sm[parsed[1]]
    if not ok:
        fail(("{}: unknown or unsupported SM '{}' in `archs`. CUDA {} NVRTC supports: {} " +
              "({}). Fix the `archs` attribute or --//rules:archs.").format(
            label,
            name,
            cuda.cuda_version,
            ", ".join(cuda.supported_archs),
            _suffix_rules(cuda),
        ))
    return name

def check_ptx_arch(label, name, cuda):
    """Fails the analysis when the toolchain's PTX compiler (cuda.ptx_compiler) cannot emit `name`."""
    ptx = cuda.ptx_compiler
    parsed = _split(name, "compute_", ptx.suffix_min_sm)
    supported = [_split(a, "sm_", {})[0] for a in ptx.supported_archs]
    if parsed == None or parsed[1] or parsed[0] not in supported:
        fail(("{}: unknown or unsupported PTX architecture '{}' in `ptx`. The PTX compiler " +
              "(CUDA {} NVRTC) supports: {}. Use \"none\", or one of those.").format(
            label,
            name,
            ptx.cuda_version,
            ", ".join(ptx.ptx_archs),
        ))
    return name

def resolve_archs(ctx, cuda, flag_archs):
    """The SASS list and PTX arch of one target: attribute, else --//rules:archs, else the toolchain default."""
    label = str(ctx.label)
    archs = ctx.attr.archs or flag_archs or cuda.default_archs
    seen = {}
    for a in archs:
        if a in seen:
            fail("{}: '{}' appears twice in `archs`".format(label, a))
        seen[a] = True
        check_sass_arch(label, a, cuda)
    ptx = ctx.attr.ptx
    if ptx == "lowest":
        lowest = sorted([_split(a, "sm_", cuda.suffix_min_sm)[0] for a in archs])[0]
        ptx = "compute_{}".format(lowest)
    if ptx == "none":
        ptx = None
    else:
        check_ptx_arch(label, ptx, cuda)
    return archs, ptx
