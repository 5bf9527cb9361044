"""rules_warp: the public API. Everything here is re-exported from rules/private/."""

load("//rules/private:artifact.bzl", _wrp_artifact = "wrp_artifact")
load("//rules/private:providers.bzl", _WrpInfo = "WrpInfo")

wrp_artifact = _wrp_artifact
WrpInfo = _WrpInfo
