// K-means assignment step: each of 512K points (16 dimensions) finds its
// nearest of 32 centroids; k and dims are run-time values and the centroids
// sit in global memory. The points are an array of structs (a point's 16
// coordinates contiguous), one thread per point: a warp's load of coordinate
// d touches 32 different sectors 64 bytes apart, and it reloads each
// coordinate for every centroid, so the L1 serves 32 sectors per load
// instruction, k * dims times per point.
//
// Variant block_1024: 1024-thread blocks instead of 256.
#include "../../common/harness.cuh"

__global__ void kmeans_assign(const float* pts, const float* cent, int* member, int n, int k, int dims) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  float best = 3.4e38f;
  int arg = 0;
  for (int c = 0; c < k; ++c) {
    float dist = 0.f;
    for (int d = 0; d < dims; ++d) {
      const float diff = pts[p * dims + d] - cent[c * dims + d];
      dist += diff * diff;
    }
    if (dist < best) {
      best = dist;
      arg = c;
    }
  }
  member[p] = arg;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 19, k = 32, dims = 16;
  std::vector<float> pts(size_t(n) * dims), cent(size_t(k) * dims);
  gpa::Lcg rng(37);
  for (auto& v : pts) v = rng.uniform(0.f, 1.f);
  for (int c = 0; c < k; ++c)  // centroids: k of the points
    for (int d = 0; d < dims; ++d) cent[c * dims + d] = pts[size_t(rng.next() % n) * dims + d];
  float* dpts = gpa::to_device(pts);
  float* dcent = gpa::to_device(cent);
  int* dmember = gpa::device_alloc<int>(n);
  const int block = 1024, grid = (n + block - 1) / block;
  auto launch = [&] { kmeans_assign<<<grid, block>>>(dpts, dcent, dmember, n, k, dims); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // the CPU's nearest centroid in double; a near-tie (within float rounding)
  // may go either way, so the GPU's choice is accepted when it is that close
  std::vector<int> got = gpa::to_host(dmember, n);
  auto dist = [&](size_t p, int c) {
    double s = 0;
    for (int d = 0; d < dims; ++d) {
      const double diff = double(pts[p * dims + d]) - cent[c * dims + d];
      s += diff * diff;
    }
    return s;
  };
  auto ref = [&](size_t p) {
    int arg = 0;
    double best = dist(p, 0);
    for (int c = 1; c < k; ++c) {
      const double dc = dist(p, c);
      if (dc < best) best = dc, arg = c;
    }
    const int g = got[p];
    const bool tie = g >= 0 && g < k && dist(p, g) <= best * (1 + 1e-5) + 1e-6;
    return double(tie ? g : arg);
  };
  gpa::check_close(got, ref, got.size(), 0.0, 0.0, "memberships (every 4th)", 4);

  gpa::time_kernel("kmeans_assign", opt, launch);
  return 0;
}
