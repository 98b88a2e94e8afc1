// Mean aggregation of a graph's neighbour features (a GNN layer's gather step, GraphSAGE-mean
// style): 2^18 nodes, each with 16 neighbours drawn from 2^20 (a fixed-degree sampled
// neighbourhood), 32-float feature rows (one 128-byte line each, a 128 MB table). One thread per
// node: it reads its neighbour ids and walks each neighbour's whole row. The 32 lanes of a warp
// read 32 different rows, so every load of the row touches 32 lines; the row's address comes from
// the id loaded in the same iteration.
#include "../../common/harness.cuh"

constexpr int kFeat = 32;

__global__ void gnn_mean(float* __restrict__ out, const float* __restrict__ feat, const int* __restrict__ nbr, int nodes, int degree) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= nodes) return;
  float acc[kFeat];
  for (int f = 0; f < kFeat; ++f) acc[f] = 0.f;
  for (int k = 0; k < degree; ++k) {
    const float* row = feat + size_t(nbr[size_t(v) * degree + k]) * kFeat;
    for (int f = 0; f < kFeat; ++f) acc[f] += row[f];
  }
  const float inv = 1.f / degree;
  for (int f = 0; f < kFeat; ++f) out[size_t(v) * kFeat + f] = acc[f] * inv;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int rows = 1 << 20, nodes = 1 << 18, degree = 16;
  gpa::Lcg rng(71);
  std::vector<float> feat(size_t(rows) * kFeat);
  for (auto& x : feat) x = rng.uniform(-1.f, 1.f);
  std::vector<int> nbr(size_t(nodes) * degree);
  for (auto& x : nbr) x = int(rng.next() % rows);
  float* dfeat = gpa::to_device(feat);
  int* dnbr = gpa::to_device(nbr);
  float* dout = gpa::device_alloc<float>(size_t(nodes) * kFeat);
  const int block = 256, grid = (nodes + block - 1) / block;
  auto launch = [&] { gnn_mean<<<grid, block>>>(dout, dfeat, dnbr, nodes, degree); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // reference in double on every 5th output element (node e / 32, feature e % 32)
  std::vector<float> got = gpa::to_host(dout, size_t(nodes) * kFeat);
  auto ref = [&](size_t e) {
    const size_t v = e / kFeat, f = e % kFeat;
    double s = 0.0;
    for (int k = 0; k < degree; ++k) s += feat[size_t(nbr[v * degree + k]) * kFeat + f];
    return s / degree;
  };
  gpa::check_close(got, ref, size_t(nodes) * kFeat, 1e-5, 1e-5, "out (every 5th element)", 5);

  gpa::time_kernel("gnn_mean", opt, launch);
  return 0;
}
