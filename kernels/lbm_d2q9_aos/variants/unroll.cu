// One fused stream-and-collide step of a D2Q9 lattice Boltzmann (BGK) fluid on
// a periodic NX x NY = 4096 x 2048 grid (8 M cells), as a first CUDA port of the
// textbook algorithm writes it: the 9 distributions of a cell stored together
// (struct Cell { float f[9]; }, 36 bytes), double-buffered (read f_in, write
// f_out), one thread per cell in 32 x 8 blocks. Pull scheme: the thread gathers
// f_i from the neighbour at x - e_i (periodic wrap by a modulo of the run-time
// extents), computes the density and velocity, the BGK equilibrium
// feq_i = w_i rho (1 + 3 e.u + 4.5 (e.u)^2 - 1.5 u.u), relaxes
// f_i <- f_i - omega (f_i - feq_i) and writes its 9 values.
// Performance problem (prior): each of the 9 loads and 9 stores of a warp spans
// 32 cells x 36 bytes (9-10 lines) and uses one word in nine of it; the loads'
// other words come back from the L1 for the next directions, the stores write
// a ninth of every sector they touch.
//
// Variant unroll: #pragma unroll on the three 9-trip loops of the kernel; nvcc
// already unrolls them fully (compile-time trip count 9), f[] stays in registers.
#include "../../common/harness.cuh"

struct Cell {
  float f[9];
};

// D2Q9 velocities (rest, 4 axis, 4 diagonal) and weights
__constant__ int cx[9] = {0, 1, 0, -1, 0, 1, -1, -1, 1};
__constant__ int cy[9] = {0, 0, 1, 0, -1, 1, 1, -1, -1};
__constant__ float w[9] = {4.f / 9.f,  1.f / 9.f,  1.f / 9.f,  1.f / 9.f, 1.f / 9.f,
                           1.f / 36.f, 1.f / 36.f, 1.f / 36.f, 1.f / 36.f};

__global__ void lbm_d2q9_aos(const Cell* f_in, Cell* f_out, int nx, int ny, float omega) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  float f[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) {
    const int xs = (x - cx[i] + nx) % nx;
    const int ys = (y - cy[i] + ny) % ny;
    f[i] = f_in[ys * nx + xs].f[i];
  }
  float rho = 0.f, jx = 0.f, jy = 0.f;
#pragma unroll
  for (int i = 0; i < 9; ++i) {
    rho += f[i];
    jx += f[i] * cx[i];
    jy += f[i] * cy[i];
  }
  const float ux = jx / rho;
  const float uy = jy / rho;
  const float usq = ux * ux + uy * uy;
#pragma unroll
  for (int i = 0; i < 9; ++i) {
    const float eu = cx[i] * ux + cy[i] * uy;
    const float feq = w[i] * rho * (1.f + 3.f * eu + 4.5f * eu * eu - 1.5f * usq);
    f_out[y * nx + x].f[i] = f[i] - omega * (f[i] - feq);
  }
}

// Host side (not timed): the D2Q9 tables again, the initial state and the reference step.
static const int hcx[9] = {0, 1, 0, -1, 0, 1, -1, -1, 1};
static const int hcy[9] = {0, 0, 1, 0, -1, 1, 1, -1, -1};
static const double hw[9] = {4.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9, 1.0 / 9,
                             1.0 / 36, 1.0 / 36, 1.0 / 36, 1.0 / 36};

// A small perturbation of rest: per cell rho = 1 +- 1%, |u| components <= 0.02,
// f_i = feq_i(rho, u) plus a non-equilibrium part of +-0.1% of w_i (fixed seed).
static void init_state(std::vector<Cell>& c, int nx, int ny) {
  gpa::Lcg rng(2718);
  for (size_t k = 0; k < size_t(nx) * ny; ++k) {
    const double rho = 1.0 + rng.uniform(-0.01f, 0.01f);
    const double ux = rng.uniform(-0.02f, 0.02f), uy = rng.uniform(-0.02f, 0.02f);
    const double noise = rng.uniform(-0.001f, 0.001f);
    for (int i = 0; i < 9; ++i) {
      const double eu = hcx[i] * ux + hcy[i] * uy;
      const double feq = hw[i] * rho * (1 + 3 * eu + 4.5 * eu * eu - 1.5 * (ux * ux + uy * uy));
      c[k].f[i] = float(feq + hw[i] * noise * (i % 2 ? 1 : -1));
    }
  }
}

// One pull step of the whole grid in double (the same algorithm as the kernel).
static void reference_step(const std::vector<Cell>& in, std::vector<double>& out, int nx, int ny,
                           double omega) {
  std::vector<int> wx(9 * size_t(nx)), wy(9 * size_t(ny));  // the wrapped source coordinates
  for (int i = 0; i < 9; ++i) {
    for (int x = 0; x < nx; ++x) wx[i * nx + x] = (x - hcx[i] + nx) % nx;
    for (int y = 0; y < ny; ++y) wy[i * ny + y] = (y - hcy[i] + ny) % ny;
  }
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      double f[9], rho = 0, jx = 0, jy = 0;
      for (int i = 0; i < 9; ++i) {
        f[i] = in[size_t(wy[i * ny + y]) * nx + wx[i * nx + x]].f[i];
        rho += f[i];
        jx += f[i] * hcx[i];
        jy += f[i] * hcy[i];
      }
      const double ux = jx / rho, uy = jy / rho, usq = ux * ux + uy * uy;
      for (int i = 0; i < 9; ++i) {
        const double eu = hcx[i] * ux + hcy[i] * uy;
        const double feq = hw[i] * rho * (1 + 3 * eu + 4.5 * eu * eu - 1.5 * usq);
        out[(size_t(y) * nx + x) * 9 + i] = f[i] - omega * (f[i] - feq);
      }
    }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int nx = 4096, ny = 2048;
  const size_t cells = size_t(nx) * ny;
  const float omega = 1.f / 0.8f;  // tau = 0.8
  std::vector<Cell> h_in(cells);
  init_state(h_in, nx, ny);
  Cell* d_in = gpa::to_device(h_in);
  Cell* d_out = gpa::device_alloc<Cell>(cells);
  const dim3 block(32, 8), grid((nx + block.x - 1) / block.x, (ny + block.y - 1) / block.y);
  auto launch = [&] { lbm_d2q9_aos<<<grid, block>>>(d_in, d_out, nx, ny, omega); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every distribution of every cell against the double reference (the timed
  // launches below redo the same step from the same f_in: the same result)
  std::vector<Cell> h_out = gpa::to_host(d_out, cells);
  std::vector<float> got(cells * 9);
  for (size_t k = 0; k < cells; ++k)
    for (int i = 0; i < 9; ++i) got[k * 9 + i] = h_out[k].f[i];
  std::vector<double> want(cells * 9);
  reference_step(h_in, want, nx, ny, omega);
  gpa::check_close(got, [&](size_t e) { return want[e]; }, cells * 9, 1e-5, 1e-6, "f_out");

  gpa::time_kernel("lbm_d2q9_aos", opt, launch);
  return 0;
}
