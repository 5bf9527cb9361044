// Loads the embedded bundle, replays it once and prints y[10] (= 3 * 10).
#include <cstdio>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "scale_wrp_cc.h"

int main() {
  try {
    const WrpEmbeddedBundle* embedded = wrp_bundle_scale_wrp();
    wrp::BundleOptions options;
    options.expected_content_hash = embedded->content_hash;
    wrp::Bundle bundle = wrp::Bundle::FromTar(embedded->data, embedded->size, embedded->label, options);
    wrp::Graph graph = wrp::Graph::Load(bundle, wrp::Device::Parse("cpu"));
    graph.Launch();
    graph.Synchronize();
    std::vector<float> y(graph.ParamSize("y") / sizeof(float));
    graph.GetParam("y", y.data(), y.size() * sizeof(float));
    std::printf("%s: y[10] = %g\n", bundle.manifest().label.c_str(), y[10]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "app: %s\n", e.what());
    return 1;
  }
}
