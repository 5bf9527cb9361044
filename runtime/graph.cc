#include "runtime/graph.h"

#include <sys/stat.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "apic.h"  // Warp: wp_apic_*
#include "runtime/error.h"
#include "runtime/internal/arch.h"
#include "runtime/internal/crash_report.h"
#include "runtime/internal/device_view.h"
#include "runtime/internal/load_tuning.h"
#include "runtime/internal/private_cache.h"
#include "runtime/internal/warp_library.h"
#include "runtime/internal/wrp_check.h"
#include "warp.h"  // Warp: wp_cuda_*

namespace wrp {
namespace {

std::string Basename(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct GraphDeleter {
  void operator()(APICGraph* graph) const { wp_apic_destroy_graph(graph); }
};
using GraphHandle = std::unique_ptr<APICGraph, GraphDeleter>;

// One CPU kernel object loaded into warp-clang's JIT under a process-unique name.
class CpuObject {
 public:
  CpuObject(const WarpClang* clang, std::string name) : clang_(clang), name_(std::move(name)) {}
  CpuObject(const CpuObject&) = delete;
  CpuObject& operator=(const CpuObject&) = delete;
  ~CpuObject() { clang_->unload_obj(name_.c_str()); }
  const std::string& name() const { return name_; }

 private:
  const WarpClang* clang_;
  std::string name_;
};

class CudaStream {
 public:
  CudaStream(void* context, void* stream) : context_(context), stream_(stream) {}
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { wp_cuda_stream_destroy(context_, stream_); }
  void* get() const { return stream_; }

 private:
  void* context_;
  void* stream_;
};

APICGraph* LoadDeviceView(void* cuda_context, const DeviceView& view) {
  std::vector<APICModuleBytes> modules;
  for (size_t i = 0; i < view.images.size(); ++i) {
    modules.push_back(
        APICModuleBytes{view.filenames[i].c_str(), view.images[i].data(), view.images[i].size()});
  }
  return wp_apic_load_graph_from_bytes(cuda_context, view.wrp.data(), view.wrp.size(), modules.data(),
                                       static_cast<uint32_t>(modules.size()), APIC_DEVICE_CUDA);
}

// Marks the end of each Load step into LoadTuning::phases; does nothing when no one asked.
class PhaseClock {
 public:
  explicit PhaseClock(std::vector<internal::LoadPhase>* phases) : phases_(phases) {
    if (phases_) last_ = std::chrono::steady_clock::now();
  }
  void Mark(const char* name) {
    if (!phases_) return;
    const auto now = std::chrono::steady_clock::now();
    phases_->push_back({name, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }

 private:
  std::vector<internal::LoadPhase>* phases_;
  std::chrono::steady_clock::time_point last_;
};

// Each load gets its own JIT object names: two graphs from one bundle must not share (and unload) code.
std::atomic<unsigned> g_load_counter{0};

}  // namespace

struct Graph::Impl {
  Device device;
  std::string title;  // Bundle::Title()
  std::string origin;
  std::string rebuild_hint;
  std::string crash_cause;  // LikelyReplayCrashCause, for CrashContext
  // Launch and Synchronize run per step: their crash reports are formatted once, and the handlers stay
  // installed while the graph lives, so a launch adds no string building or signal-handler syscalls.
  CrashHandlers crash_handlers;
  std::optional<CrashMessage> launch_message;
  std::optional<CrashMessage> wait_message;
  std::vector<BindingRecord> bindings;
  std::map<std::string, size_t> binding_index;  // by name, into `bindings`: a lookup per Set/GetParam
  std::string load_note;
  std::string load_source;
  void* cuda_context = nullptr;
  void* graph_exec = nullptr;                // owned by `graph`; made at the first launch
  const CudaDriverLaunch* driver = nullptr;  // CUDA: how Launch launches (nullptr: through Warp)
  // The stream of the last CUDA launch not yet waited for (nullptr may mean the legacy default stream).
  bool launch_pending = false;
  void* pending_stream = nullptr;
  // Destroyed in reverse order: the graph first (it holds kernel pointers into the objects and launches on
  // the stream), then the objects, then the stream.
  std::unique_ptr<CudaStream> stream;
  std::vector<std::unique_ptr<CpuObject>> cpu_objects;
  GraphHandle graph;

  const BindingRecord& Binding(const std::string& name) const {
    if (auto it = binding_index.find(name); it != binding_index.end()) return bindings[it->second];
    std::string known;
    for (const BindingRecord& b : bindings) known += (known.empty() ? "" : ", ") + b.name;
    throw Error(title + ": no parameter named \"" + name +
                "\"; its parameters are: " + (known.empty() ? std::string("(none)") : known));
  }

  // Load's steps, one decision each.
  void LoadCuda(const Bundle& bundle, const LoadOptions& options, const internal::LoadTuning& tuning,
                PhaseClock* clock);
  void LoadCpu(const Bundle& bundle, bool from_directory, PhaseClock* clock);
  void CheckAgainstWrp(const Manifest& manifest) const;

  void CheckSize(const char* verb, const BindingRecord& binding, size_t size) const {
    if (size != binding.bytes) {
      throw Error(title + ": " + verb + " \"" + binding.name + "\" with " + std::to_string(size) +
                  " bytes, but its region holds exactly " + std::to_string(binding.bytes) +
                  " bytes (each name binds the array's whole base allocation, region " + binding.region +
                  "); fix: pass a buffer of " + std::to_string(binding.bytes) + " bytes");
    }
  }
};

Device Device::Parse(const std::string& text) {
  Device device;
  if (text == "cpu") return device;
  device.kind = Kind::kCuda;
  if (text == "cuda") return device;
  if (text.compare(0, 5, "cuda:") == 0 && text.size() > 5 && text.size() < 9 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos) {
    std::from_chars(text.data() + 5, text.data() + text.size(), device.ordinal);
    return device;
  }
  throw Error("unknown device \"" + text + "\"; fix: use \"cpu\", \"cuda\" or \"cuda:N\"");
}

Device Device::ForBundle(const Bundle& bundle) {
  return Parse(bundle.manifest().device == "cpu" ? "cpu" : "cuda:0");
}

std::string Device::ToString() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(ordinal); }

Graph::Graph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

namespace {

// What Warp is given when it loads from memory: the verified .wrp and every file of <stem>_modules/ by the
// bare filename the .wrp records (Warp ignores entries it does not use).
struct VerifiedInputs {
  ByteView wrp;
  std::string modules_prefix;
  std::map<std::string, ByteView> module_files;
};

// The .wrp's header (Warp's own APICFileHeader) against the manifest: the format version and the device.
// Warp reads both when it loads, but checks neither against the manifest, which the runtime trusts for them.
// Then the whole .wrp as Warp's loader would judge it (wrp_check.h).
void CheckWrpHeader(const Bundle& bundle, const std::string& title, const std::string& rebuild_hint) {
  const Manifest& manifest = bundle.manifest();
  const ByteView wrp = bundle.File(manifest.wrp);
  APICFileHeader header;
  if (wrp.size < sizeof header || std::memcmp(wrp.data, APIC_MAGIC, 4) != 0) {
    throw Error(title + ": " + bundle.Describe(manifest.wrp) + " is not a .wrp file (no " + APIC_MAGIC +
                " header); fix: " + rebuild_hint);
  }
  std::memcpy(&header, wrp.data, sizeof header);
  const char* device = header.device_type == APIC_DEVICE_CPU ? "cpu" : "cuda";
  if (header.version != static_cast<uint64_t>(manifest.format_version) || manifest.device != device) {
    throw Error(title + ": " + bundle.Describe(manifest.wrp) + " is format " +
                std::to_string(header.version) + " for " + device + ", but manifest.json says format " +
                std::to_string(manifest.format_version) + " for " + manifest.device +
                "; fix: " + rebuild_hint);
  }
  // Everything Warp's loader would refuse, refused before it gets the bytes (Bundle::VerifyAll checks the
  // same): a wrp::Error naming the file and the rule, never Warp's bare refusal.
  CheckLoadableWrp(wrp, bundle.Describe(manifest.wrp), rebuild_hint);
}

// "<stem>_modules/": where the .wrp's module records name their binaries (Warp's capture_save layout).
std::string ModulesPrefix(const Manifest& manifest) {
  const std::string& wrp = manifest.wrp;
  return wrp.substr(0, wrp.size() - (wrp.size() > 4 ? 4 : 0)) + "_modules/";
}

VerifiedInputs GatherInputs(const Bundle& bundle) {
  const Manifest& manifest = bundle.manifest();
  VerifiedInputs inputs;
  inputs.modules_prefix = ModulesPrefix(manifest);
  inputs.wrp = bundle.File(manifest.wrp);
  for (const FileRecord& record : manifest.files) {
    if (record.path.compare(0, inputs.modules_prefix.size(), inputs.modules_prefix) == 0) {
      inputs.module_files[Basename(record.path)] = bundle.File(record.path);
    }
  }
  return inputs;
}

APICGraph* LoadFromMemory(void* cuda_context, const VerifiedInputs& inputs, int device_type) {
  std::vector<APICModuleBytes> modules;
  for (const auto& entry : inputs.module_files) {
    modules.push_back(APICModuleBytes{entry.first.c_str(), entry.second.data, entry.second.size});
  }
  return wp_apic_load_graph_from_bytes(cuda_context, inputs.wrp.data, inputs.wrp.size, modules.data(),
                                       static_cast<uint32_t>(modules.size()), device_type);
}

}  // namespace

// CUDA: decide which code each module runs (SASS, PTX or retained source), then hand Warp the device view,
// the bundle's bytes, or (when source must be compiled) a private copy on disk.
void Graph::Impl::LoadCuda(const Bundle& bundle, const LoadOptions& options,
                           const internal::LoadTuning& tuning, PhaseClock* clock) {
  const Manifest& manifest = bundle.manifest();
  CudaDeviceFacts facts = QueryCudaDevice(device.ordinal);
  std::string include_dir = options.warp_include_dir;
  if (include_dir.empty()) include_dir = WarpIncludeDirectory();
  ArchDecision decision = DecideCudaCode(manifest, title, facts, !include_dir.empty());
  if (!decision.fits) throw Error(decision.message);
  load_note = decision.message;
  bool compiles_source = false;
  for (const ModuleChoice& choice : decision.modules) compiles_source |= choice.choice == CodeChoice::kSource;
  cuda_context = wp_cuda_device_get_primary_context(device.ordinal);
  if (!cuda_context) {
    throw Error("cannot get the CUDA context of " + device.ToString() + ": " + WarpErrorString());
  }
  clock->Mark("arch check");

  if (compiles_source) {
    // Warp compiles retained source only on its directory path, and caches the result beside the modules:
    // give it the verified bytes in the private per-user cache, never the bundle's own directory.
    const std::string wrp_path = MaterializeForWarp(bundle);
    CheckModuleBinaries(bundle);  // what verify refuses in the fatbins, refused before the driver sees them
    load_source = "private cache " + wrp_path.substr(0, wrp_path.rfind('/'));
    clock->Mark("verify");
    graph.reset(wp_apic_load_graph_ex(cuda_context, wrp_path.c_str(), APIC_DEVICE_CUDA, include_dir.c_str()));
    clock->Mark("warp load");
  } else if (tuning.from_directory) {
    GatherInputs(bundle);         // verifies what Warp is about to read again (it may have changed since)
    CheckModuleBinaries(bundle);  // what verify refuses in the fatbins, refused before the driver sees them
    clock->Mark("verify");
    graph.reset(wp_apic_load_graph_ex(cuda_context, bundle.Describe(manifest.wrp).c_str(), APIC_DEVICE_CUDA,
                                      nullptr));
    clock->Mark("warp load");
  } else {
    std::optional<DeviceView> view;
    if (tuning.device_view) view = MakeDeviceView(bundle, decision);
    clock->Mark("device view");
    if (view) {
      // Warp parses the .wrp while helper threads hash it (unless hash_during_load is off); the graph is kept
      // only when every digest matched (else it goes, unlaunched, with this Impl). Warp checks each image.
      load_source = "device view";
      if (!tuning.hash_during_load) {
        const std::string failure = view->WrpFailure(bundle);
        clock->Mark("verify");
        if (!failure.empty()) throw Error(failure);
      }
      graph.reset(LoadDeviceView(cuda_context, *view));
      clock->Mark("warp load");
      std::string failure = view->WrpFailure(bundle);
      clock->Mark("hash wait");
      if (failure.empty() && !graph) failure = view->ImageFailure(bundle);
      if (!failure.empty()) throw Error(failure);
    } else {
      const VerifiedInputs inputs = GatherInputs(bundle);
      CheckModuleBinaries(bundle);  // what verify refuses in the fatbins, refused before the driver sees them
      clock->Mark("verify");
      graph.reset(LoadFromMemory(cuda_context, inputs, APIC_DEVICE_CUDA));
      clock->Mark("warp load");
    }
  }
  if (!graph) {
    throw Error(title + ": Warp could not load " + bundle.Describe(manifest.wrp) + " on " +
                device.ToString() + ": " + WarpErrorString() + "\nfix: " + rebuild_hint);
  }
  driver = GetCudaDriverLaunch();
  void* cuda_stream = wp_cuda_stream_create(cuda_context, 0);
  if (!cuda_stream) {
    throw Error("cannot create a CUDA stream on " + device.ToString() + ": " + WarpErrorString());
  }
  stream = std::make_unique<CudaStream>(cuda_context, cuda_stream);
  clock->Mark("stream");
}

// CPU: Warp loads the operation stream and leaves kernels to the caller (Python does this in
// _apic_load_cpu_modules): load each recorded object into warp-clang's JIT from the verified bytes, look up
// every kernel's entry points, and register them with the graph.
void Graph::Impl::LoadCpu(const Bundle& bundle, bool from_directory, PhaseClock* clock) {
  const Manifest& manifest = bundle.manifest();
  const VerifiedInputs inputs = GatherInputs(bundle);
  APICGraph* apic_graph =
      from_directory ? wp_apic_load_graph(nullptr, bundle.Describe(manifest.wrp).c_str(), APIC_DEVICE_CPU)
                     : wp_apic_load_graph_from_bytes(nullptr, inputs.wrp.data, inputs.wrp.size, nullptr, 0,
                                                     APIC_DEVICE_CPU);
  if (!apic_graph) {
    throw Error(title + ": Warp could not load " + bundle.Describe(manifest.wrp) + ": " + WarpErrorString() +
                "\nfix: " + rebuild_hint);
  }
  graph.reset(apic_graph);
  clock->Mark("warp load");

  const int num_kernels = wp_apic_get_num_kernels(apic_graph);
  if (num_kernels <= 0) return;
  const WarpClang& clang = GetWarpClang();
  const unsigned load_id = g_load_counter++;
  std::map<std::string, const CpuObject*> objects;  // recorded filename -> loaded object
  for (int i = 0; i < num_kernels; ++i) {
    const char* key = wp_apic_get_kernel_key(apic_graph, i);
    const char* module_hash = wp_apic_get_kernel_module_hash(apic_graph, i);
    const char* filename = wp_apic_get_kernel_module_binary_filename(apic_graph, i);
    const char* forward_name = wp_apic_get_kernel_forward_name(apic_graph, i);
    const char* backward_name = wp_apic_get_kernel_backward_name(apic_graph, i);
    if (!key || !forward_name || !*forward_name) continue;
    const std::string file = filename ? filename : "";
    auto loaded = objects.find(file);
    if (loaded == objects.end()) {
      auto bytes = inputs.module_files.find(file);
      if (file.empty() || bytes == inputs.module_files.end()) {
        throw Error(title + ": kernel " + key + " needs module object \"" + file + "\", which is not in " +
                    bundle.Describe(inputs.modules_prefix) + "; fix: " + rebuild_hint);
      }
      std::string name = "wrp_" + std::to_string(load_id) + "_" + file.substr(0, file.rfind('.'));
      if (clang.load_obj_from_bytes(bytes->second.data, bytes->second.size, name.c_str(), false) != 0) {
        throw Error(title + ": warp-clang could not load " + bundle.Describe(inputs.modules_prefix + file) +
                    ": " + WarpErrorString() + "\nfix: " + rebuild_hint + " on this CPU architecture");
      }
      cpu_objects.push_back(std::make_unique<CpuObject>(&clang, name));
      loaded = objects.emplace(file, cpu_objects.back().get()).first;
    }
    const std::string& object_name = loaded->second->name();
    uint64_t forward = clang.lookup(object_name.c_str(), forward_name);
    if (!forward) {
      throw Error(title + ": kernel entry point " + forward_name + " is missing from " +
                  bundle.Describe(inputs.modules_prefix + file) + "; fix: " + rebuild_hint);
    }
    uint64_t backward =
        (backward_name && *backward_name) ? clang.lookup(object_name.c_str(), backward_name) : 0;
    wp_apic_register_loaded_cpu_kernel(apic_graph, key, module_hash, reinterpret_cast<void*>(forward),
                                       reinterpret_cast<void*>(backward));
  }
  clock->Mark("cpu kernels");
}

// The manifest and the .wrp must agree: every binding's name and capacity (SetParam/GetParam check sizes
// against the manifest before Warp is called), the modules, and which bindings alias one allocation.
void Graph::Impl::CheckAgainstWrp(const Manifest& manifest) const {
  // wp_apic_get_num_params counts a name bound as both input and output twice, so compare name sets.
  std::set<std::string> warp_names;
  for (int i = 0, n = wp_apic_get_num_params(graph.get()); i < n; ++i) {
    if (const char* name = wp_apic_get_param_name(graph.get(), i)) warp_names.insert(name);
  }
  std::set<std::string> manifest_names;
  for (const BindingRecord& binding : manifest.bindings) manifest_names.insert(binding.name);
  if (warp_names != manifest_names) {
    auto join = [](const std::set<std::string>& names) {
      std::string out;
      for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
      return out.empty() ? std::string("(none)") : out;
    };
    throw Error(title + ": the .wrp binds parameters {" + join(warp_names) + "} but manifest.json lists {" +
                join(manifest_names) + "}; fix: " + rebuild_hint);
  }
  for (const BindingRecord& binding : manifest.bindings) {
    size_t warp_size = wp_apic_get_param_size(graph.get(), binding.name.c_str());
    if (warp_size != binding.bytes) {
      throw Error(title + ": parameter \"" + binding.name + "\" is " + std::to_string(warp_size) +
                  " bytes in the .wrp but " + std::to_string(binding.bytes) +
                  " in manifest.json; fix: " + rebuild_hint);
    }
  }
  // The modules: each kernel's is one the manifest lists (and verified), under the binary the manifest names
  // for it, and each listed one has a kernel.
  std::map<std::string, const ModuleRecord*> listed;
  for (const ModuleRecord& module : manifest.modules) listed.emplace(module.hash, &module);
  const std::string modules_dir = ModulesPrefix(manifest);
  std::set<std::string> warp_modules;
  for (int i = 0, n = wp_apic_get_num_kernels(graph.get()); i < n; ++i) {
    const char* hash = wp_apic_get_kernel_module_hash(graph.get(), i);
    if (!hash) continue;
    warp_modules.insert(hash);
    const char* filename = wp_apic_get_kernel_module_binary_filename(graph.get(), i);
    auto module = listed.find(hash);
    if (module != listed.end() && filename && module->second->binary != modules_dir + filename) {
      throw Error(title + ": the .wrp's module " + module->second->name + " is " + modules_dir + filename +
                  " but manifest.json names " + module->second->binary + "; fix: " + rebuild_hint);
    }
  }
  std::set<std::string> manifest_modules;
  for (const auto& [hash, module] : listed) manifest_modules.insert(hash);
  if (warp_modules != manifest_modules) {
    auto join = [](const std::set<std::string>& hashes) {
      std::string out;
      for (const std::string& h : hashes) out += (out.empty() ? "" : ", ") + h.substr(0, 16);
      return out.empty() ? std::string("(none)") : out;
    };
    throw Error(title + ": the .wrp's kernels use modules {" + join(warp_modules) +
                "} but manifest.json lists {" + join(manifest_modules) +
                "} (by module hash); fix: " + rebuild_hint);
  }
  // Which names alias one allocation. Region numbers are the capture's labels, which Warp does not expose:
  // what the manifest and the .wrp must agree on is the aliasing, seen here as the names whose parameter
  // memory is one (wrpkg.reader.verify compares the same partition). Empty regions have no memory to compare.
  std::map<std::string, std::pair<const void*, const BindingRecord*>> by_region;
  std::map<const void*, const BindingRecord*> by_memory;
  for (const BindingRecord& binding : manifest.bindings) {
    const void* memory = wp_apic_get_param_ptr(graph.get(), binding.name.c_str());
    if (!memory) continue;
    auto [region, new_region] = by_region.try_emplace(binding.region, memory, &binding);
    auto [shared, new_memory] = by_memory.try_emplace(memory, &binding);
    const BindingRecord* other = region->second.first != memory             ? region->second.second
                                 : shared->second->region != binding.region ? shared->second
                                                                            : nullptr;
    if (other) {
      throw Error(title + ": manifest.json puts \"" + other->name + "\" in region " + other->region +
                  " and \"" + binding.name + "\" in region " + binding.region + ", but in the .wrp they " +
                  (region->second.first != memory ? "are separate allocations" : "share one allocation") +
                  "; fix: " + rebuild_hint);
    }
  }
}

Graph Graph::Load(const Bundle& bundle, const Device& device, const LoadOptions& options) {
  return internal::LoadTuning{}.Load(bundle, device, options);
}

Graph internal::LoadTuning::Load(const Bundle& bundle, const Device& device,
                                 const LoadOptions& options) const {
  PhaseClock clock(phases);
  InitWarp();
  CheckWarpVersion(bundle, LinkedWarpVersion());
  const Manifest& manifest = bundle.manifest();

  auto impl = std::make_unique<Graph::Impl>();
  impl->device = device;
  impl->title = bundle.Title();
  impl->origin = bundle.origin();
  impl->rebuild_hint = manifest.RebuildHint();
  impl->crash_cause = LikelyReplayCrashCause(impl->title, impl->rebuild_hint);
  impl->launch_message.emplace("launching " + impl->title + " on " + device.ToString(), impl->crash_cause);
  impl->wait_message.emplace("waiting for " + impl->title + " on " + device.ToString(), impl->crash_cause);
  impl->bindings = manifest.bindings;
  for (size_t i = 0; i < impl->bindings.size(); ++i) impl->binding_index.emplace(impl->bindings[i].name, i);
  CrashContext crash_context("loading " + impl->title + " on " + device.ToString(), impl->crash_cause);

  if ((manifest.device == "cpu") != device.is_cpu()) {
    throw Error(impl->title + " was captured for " + manifest.device + " and cannot load on " +
                device.ToString() + "; fix: pass --device " + (manifest.device == "cpu" ? "cpu" : "cuda:N") +
                ", or depend on the artifact captured for that device");
  }
  // Default: the bytes Bundle verified. Reading the files again would load whatever is on disk by then.
  if (from_directory && !bundle.from_directory()) {
    throw Error(impl->title + " came from " + bundle.origin() +
                ", not a directory; fix: load it with Graph::Load, which loads the verified bytes");
  }
  impl->load_source = from_directory ? "directory" : "memory";
  CheckWrpHeader(bundle, impl->title, impl->rebuild_hint);
  clock.Mark("checks");

  if (device.is_cpu()) {
    impl->LoadCpu(bundle, from_directory, &clock);
  } else {
    impl->LoadCuda(bundle, options, *this, &clock);
  }
  impl->CheckAgainstWrp(manifest);
  clock.Mark("bindings");
  return Graph(std::move(impl));
}

// SetParam and GetParam: the name must be a binding and `size` its region's whole capacity; Warp copies on
// the legacy default stream, so the graph's last launch (possibly on a caller's non-blocking stream) is
// waited for first.
template <typename Copy>
void Graph::CopyParam(const char* verb, const std::string& name, const void* data, size_t size, Copy copy) {
  const BindingRecord& binding = impl_->Binding(name);
  impl_->CheckSize(verb, binding, size);
  if (!data) throw Error(impl_->title + ": " + verb + " \"" + name + "\" with a null pointer");
  Synchronize();
  if (!copy(impl_->graph.get(), name.c_str())) {
    throw Error(impl_->title + ": " + verb + " \"" + name + "\" failed: " + WarpErrorString());
  }
}

void Graph::SetParam(const std::string& name, const void* data, size_t size) {
  CopyParam("SetParam", name, data, size,
            [&](APICGraph* graph, const char* n) { return wp_apic_set_param(graph, n, data, size); });
}

void Graph::GetParam(const std::string& name, void* data, size_t size) {
  CopyParam("GetParam", name, data, size,
            [&](APICGraph* graph, const char* n) { return wp_apic_get_param(graph, n, data, size); });
}

size_t Graph::ParamSize(const std::string& name) const { return impl_->Binding(name).bytes; }

std::vector<std::string> Graph::ParamNames() const {
  std::vector<std::string> names;
  for (const BindingRecord& b : impl_->bindings) names.push_back(b.name);
  return names;
}

void Graph::Launch() { Launch(impl_->stream ? impl_->stream->get() : nullptr); }

void Graph::Launch(void* cuda_stream) {
  CrashScope crash_scope(*impl_->launch_message);
  if (impl_->device.is_cpu()) {
    if (!wp_apic_cpu_replay_graph(impl_->graph.get())) {
      throw Error(impl_->title + ": CPU replay failed: " + WarpErrorString());
    }
    return;
  }
  // As wp.capture_launch does for a loaded graph: instantiate once, then launch the executable graph with
  // wp_cuda_graph_launch. wp_apic_launch would look the graph and its instance up again, switching
  // contexts three times, on every launch.
  if (!impl_->graph_exec) {
    impl_->graph_exec = wp_apic_get_cuda_graph_exec(impl_->graph.get());
    if (!impl_->graph_exec) {
      throw Error(impl_->title + ": cannot build the CUDA graph on " + impl_->device.ToString() + ": " +
                  WarpErrorString());
    }
  }
  wp_cuda_context_set_current(impl_->cuda_context);  // no-op when it is current (the usual case)
  // The driver's cuGraphLaunch on the same graph exec, rather than Warp's wp_cuda_graph_launch (the CUDA
  // runtime's cudaGraphLaunch between two checks of Warp's profiling flags): through Warp, this function took
  // 20.6 us of host time per launch against 18.4 us for bare cuGraphLaunch (cloth, H200; sim 15.9 against
  // 13.7). Warp's range only feeds its Python-side timers. tools/bench:replay_bench times each part apart.
  if (impl_->driver) {
    const int result = impl_->driver->graph_launch(impl_->graph_exec, cuda_stream);
    if (result != 0) {
      throw Error(impl_->title + ": CUDA graph launch on " + impl_->device.ToString() +
                  " failed: " + CudaDriverErrorText(*impl_->driver, result));
    }
  } else if (!wp_cuda_graph_launch(impl_->graph_exec, cuda_stream)) {
    throw Error(impl_->title + ": CUDA graph launch on " + impl_->device.ToString() +
                " failed: " + WarpErrorString());
  }
  impl_->launch_pending = true;
  impl_->pending_stream = cuda_stream;
}

void Graph::Synchronize() {
  if (impl_->device.is_cpu() || !impl_->launch_pending) return;
  CrashScope crash_scope(*impl_->wait_message);
  if (!wp_cuda_stream_synchronize(impl_->pending_stream)) {
    // An illegal address on the GPU has the same usual cause as a crash on the CPU.
    throw Error(impl_->title + ": waiting for " + impl_->device.ToString() + " failed: " + WarpErrorString() +
                "\nlikely cause: " + impl_->crash_cause);
  }
  impl_->launch_pending = false;
}

const Device& Graph::device() const { return impl_->device; }
void* Graph::cuda_stream() const { return impl_->stream ? impl_->stream->get() : nullptr; }
void* Graph::cuda_graph_exec() const {
  return !impl_->device.is_cpu() ? wp_apic_get_cuda_graph_exec(impl_->graph.get()) : nullptr;
}
const std::string& Graph::load_note() const { return impl_->load_note; }
const std::string& Graph::load_source() const { return impl_->load_source; }

}  // namespace wrp
