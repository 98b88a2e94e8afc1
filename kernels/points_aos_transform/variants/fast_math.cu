// Affine transform of a point cloud stored as an array of structs (a 3D-vision
// or graphics pre-pass: world <- camera, a rigid motion with scale): in and
// out are 2^24 points of struct {float x, y, z;} (12-byte stride, 192 MB per
// array), M a 3 x 4 row-major matrix passed by value as a kernel argument,
// out[i] = M * (p_i, 1). One thread per point, as a first port of the CPU loop.
// Performance problem: the lanes of a warp read 32 structs 12 bytes apart, so
// each of the three 4-byte loads (x, y, z) and each of the three 4-byte stores
// spans the same 384 bytes (3 lines, 12 sectors) and uses a third of each
// sector it touches: 3x the L1 requests and, for the stores, 3x the partial
// sector writes into the L2 that 16-byte accesses of the same bytes would need.
//
// Variant fast_math: built with --use_fast_math (source unchanged).
#include "../../common/harness.cuh"

struct Point {
  float x, y, z;
};
struct Affine {
  float m[12];  // row-major 3 x 4: rotation-scale in columns 0-2, translation in column 3
};

__global__ void points_aos_transform(Point* out, const Point* in, Affine a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Point p = in[i];
  Point q;
  q.x = a.m[0] * p.x + a.m[1] * p.y + a.m[2] * p.z + a.m[3];
  q.y = a.m[4] * p.x + a.m[5] * p.y + a.m[6] * p.z + a.m[7];
  q.z = a.m[8] * p.x + a.m[9] * p.y + a.m[10] * p.z + a.m[11];
  out[i] = q;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 24;
  gpa::Lcg rng(113);
  // points uniform in a 200 m cube around the origin
  std::vector<Point> in(n);
  for (auto& p : in) {
    p.x = rng.uniform(-100.f, 100.f);
    p.y = rng.uniform(-100.f, 100.f);
    p.z = rng.uniform(-100.f, 100.f);
  }
  // M = [s R | t]: R rotates by 0.6 rad about z then 0.3 rad about x, s = 1.25
  Affine a;
  {
    const double cz = std::cos(0.6), sz = std::sin(0.6), cx = std::cos(0.3), sx = std::sin(0.3), s = 1.25;
    const double r[3][3] = {{cz, -sz, 0.0}, {cx * sz, cx * cz, -sx}, {sx * sz, sx * cz, cx}};
    const double t[3] = {12.5, -3.0, 40.0};
    for (int row = 0; row < 3; ++row) {
      for (int col = 0; col < 3; ++col) a.m[row * 4 + col] = float(s * r[row][col]);
      a.m[row * 4 + 3] = float(t[row]);
    }
  }
  Point* din = gpa::to_device(in);
  Point* dout = gpa::device_alloc<Point>(n);
  const int block = 256, grid = (n + block - 1) / block;
  auto launch = [&] { points_aos_transform<<<grid, block>>>(dout, din, a, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every coordinate of every point against a double reference (same float matrix)
  std::vector<float> got = gpa::to_host(reinterpret_cast<const float*>(dout), size_t(3) * n);
  auto ref = [&](size_t e) {
    const Point& p = in[e / 3];
    const float* m = a.m + 4 * (e % 3);
    return double(m[0]) * p.x + double(m[1]) * p.y + double(m[2]) * p.z + double(m[3]);
  };
  gpa::check_close(got, ref, size_t(3) * n, 1e-5, 1e-4, "out");

  gpa::time_kernel("points_aos_transform", opt, launch);
  return 0;
}
