#include "runtime/internal/arch.h"

#include <charconv>
#include <set>

namespace wrp {
namespace {

// Parses "<prefix>NN[suffix]" into NN and the suffix; false when malformed.
bool ParseArch(const std::string& text, const std::string& prefix, int* sm, std::string* suffix) {
  if (text.compare(0, prefix.size(), prefix) != 0) return false;
  size_t i = prefix.size();
  size_t digits_start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == digits_start || i - digits_start > 4) return false;
  // from_chars, not atoi or stoll (here and in graph.cc, manifest.cc): glibc 2.38's headers turn those
  // into calls of __isoc23_strtol, which the Jetson/Grace floor (glibc 2.35, tests/aarch64) lacks.
  std::from_chars(text.data() + digits_start, text.data() + i, *sm);
  *suffix = text.substr(i);
  return suffix->empty() || *suffix == "a" || *suffix == "f";
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

bool SassRunsOn(const std::string& sass_arch, int device_sm) {
  int sm = 0;
  std::string suffix;
  if (!ParseArch(sass_arch, "sm_", &sm, &suffix)) return false;
  if (suffix == "a") return sm == device_sm;
  return sm / 10 == device_sm / 10 && sm % 10 <= device_sm % 10;
}

bool PtxRunsOn(const std::string& ptx_arch, int device_sm) {
  int sm = 0;
  std::string suffix;
  if (!ParseArch(ptx_arch, "compute_", &sm, &suffix)) return false;
  // Arch-specific PTX (compute_90a) only JITs for that exact SM.
  if (suffix == "a") return sm == device_sm;
  if (suffix == "f") return sm / 10 == device_sm / 10 && sm % 10 <= device_sm % 10;
  return sm <= device_sm;
}

std::string FormatDriverVersion(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

ArchDecision DecideCudaCode(const Manifest& manifest, const std::string& bundle_title,
                            const CudaDeviceFacts& device, bool source_allowed) {
  ArchDecision decision;
  const std::string device_sm = "sm_" + std::to_string(device.sm);
  const bool driver_ok_for_ptx =
      !manifest.ptx_min_driver || device.driver_version >= *manifest.ptx_min_driver;

  std::vector<std::string> problems;
  bool any_slow = false;
  for (const ModuleRecord& module : manifest.modules) {
    ModuleChoice choice;
    choice.module_name = module.name;
    bool chosen = false;
    // Prefer the SASS closest to the device (highest compatible SM).
    int best_sm = -1;
    for (const SassRecord& sass : module.sass) {
      int sm = 0;
      std::string suffix;
      if (SassRunsOn(sass.arch, device.sm) && ParseArch(sass.arch, "sm_", &sm, &suffix) && sm > best_sm) {
        best_sm = sm;
        choice.choice = CodeChoice::kSass;
        choice.arch = sass.arch;
        chosen = true;
      }
    }
    std::string why;
    if (!chosen && module.ptx) {
      if (!PtxRunsOn(module.ptx->arch, device.sm)) {
        why = "PTX " + module.ptx->arch + " is newer than " + device_sm;
      } else if (!driver_ok_for_ptx) {
        why = "PTX " + module.ptx->arch +
              " needs driver CUDA >= " + FormatDriverVersion(int(*manifest.ptx_min_driver)) +
              ", the device's driver is CUDA " + FormatDriverVersion(device.driver_version);
      } else {
        choice.choice = CodeChoice::kPtx;
        choice.arch = module.ptx->arch;
        chosen = any_slow = true;
      }
    }
    if (!chosen && module.source) {
      if (source_allowed) {
        choice.choice = CodeChoice::kSource;
        choice.arch.clear();
        chosen = any_slow = true;
      } else {
        why += std::string(why.empty() ? "" : "; ") +
               "its retained CUDA source cannot be compiled here: Warp's headers (warp/native) are neither "
               "beside warp.so nor in the binary's runfiles (ship them with warp.so, or set "
               "LoadOptions::warp_include_dir)";
      }
    }
    if (!chosen) {
      std::vector<std::string> held;
      for (const SassRecord& sass : module.sass) held.push_back(sass.arch);
      std::string problem =
          "module " + module.name + " (" + module.hash.substr(0, 8) + "): no SASS for " + device_sm;
      if (!held.empty()) problem += " (has " + JoinList(held) + ")";
      if (!module.ptx) problem += ", no PTX";
      if (!module.source) problem += ", no CUDA source";
      if (!why.empty()) problem += "; " + why;
      problems.push_back(problem);
      continue;
    }
    decision.modules.push_back(choice);
  }

  if (problems.empty()) {
    decision.fits = true;
    if (any_slow) {
      std::string note = bundle_title + " has no SASS for " + device.alias + " (" + device.name + ", " +
                         device_sm + ") in module(s):";
      for (const ModuleChoice& c : decision.modules) {
        if (c.choice == CodeChoice::kPtx) note += " " + c.module_name + " (JIT from PTX " + c.arch + ")";
        if (c.choice == CodeChoice::kSource) note += " " + c.module_name + " (NVRTC from source)";
      }
      note += "; loading compiles at run time. To load native code, add \"" + device_sm +
              "\" to the archs attribute of " + manifest.label;
      decision.message = note;
    }
    return decision;
  }

  // Nothing fits: say what the bundle holds, what the device is, and the one change that fixes it.
  std::set<std::string> sass_archs, ptx_archs;
  bool any_source = false;
  for (const ModuleRecord& module : manifest.modules) {
    for (const SassRecord& sass : module.sass) sass_archs.insert(sass.arch);
    if (module.ptx) ptx_archs.insert(module.ptx->arch);
    any_source = any_source || module.source.has_value();
  }
  std::string holds =
      "SASS " + (sass_archs.empty()
                     ? std::string("none")
                     : JoinList(std::vector<std::string>(sass_archs.begin(), sass_archs.end())));
  holds +=
      ", PTX " + (ptx_archs.empty() ? std::string("none")
                                    : JoinList(std::vector<std::string>(ptx_archs.begin(), ptx_archs.end())));
  if (!ptx_archs.empty() && manifest.ptx_min_driver) {
    holds += " (needs driver CUDA >= " + FormatDriverVersion(int(*manifest.ptx_min_driver)) + ")";
  }
  holds += any_source ? ", CUDA source" : ", no CUDA source";

  std::string message = bundle_title + " has no code that runs on " + device.alias + " \"" + device.name +
                        "\" (" + device_sm + ", driver CUDA " + FormatDriverVersion(device.driver_version) +
                        ").\n";
  message += "  the bundle holds: " + holds + "\n";
  for (const std::string& problem : problems) message += "  " + problem + "\n";
  message += "fix: add \"" + device_sm + "\" to the archs attribute of " + manifest.label + " and rebuild it";
  decision.message = message;
  decision.modules.clear();
  return decision;
}

}  // namespace wrp
