// One step of Conway's Game of Life (rule B3/S23) on a 16384 x 12288 board of
// bytes (0 dead, 1 alive; 192 MiB in, 192 MiB out), cells outside the board
// dead (a bounded board, not a torus): a dead cell with exactly three live
// neighbours is born, a live cell with two or three survives, every other cell
// is dead in the next generation. One thread per cell in 16 x 16 blocks, as a
// first CUDA port of the CPU loop writes it: the thread walks its 3 x 3
// neighbourhood with a bounds test and a one-byte load from global memory per
// neighbour, loads its own cell, applies the rule and writes one byte.
// Performance problem: 9 one-byte loads per cell (9 LDG.E.U8, 8 of them
// predicated by the bounds tests, among 83 SASS instructions per thread); each
// warp request reads 16 bytes in each of two rows 16 KB apart (two lines), and
// each store writes half of a sector in each of two rows.
//
// Variant block_32x8: 32 x 8 blocks instead of 16 x 16: a warp covers 32 cells of one row.
#include "../../common/harness.cuh"

__global__ void life_bytes(const unsigned char* in, unsigned char* out, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  int n = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      if (dx == 0 && dy == 0) continue;
      const int nx = x + dx, ny = y + dy;
      if (nx >= 0 && nx < w && ny >= 0 && ny < h) n += in[ny * w + nx];
    }
  }
  const unsigned char alive = in[y * w + x];
  unsigned char next = 0;
  if (alive) {
    if (n == 2 || n == 3) next = 1;
  } else {
    if (n == 3) next = 1;
  }
  out[y * w + x] = next;
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int w = 16384, h = 12288;
  const size_t cells = size_t(w) * h;
  gpa::Lcg rng(1970);
  // a random soup: each draw gives 10 cells of 3 bits, alive when the 3 bits are
  // below 3 (37.5% alive)
  std::vector<unsigned char> board(cells);
  for (size_t i = 0; i < cells; i += 10) {
    unsigned r = rng.next();
    for (size_t k = i; k < std::min(cells, i + 10); ++k, r >>= 3) board[k] = (r & 7u) < 3u;
  }
  unsigned char* din = gpa::to_device(board);
  unsigned char* dout = gpa::device_alloc<unsigned char>(cells);
  CUDA_CHECK(cudaMemset(dout, 0xFF, cells));  // a cell the kernel does not write reads 255
  const dim3 block(32, 8);
  const dim3 grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
  auto launch = [&] { life_bytes<<<grid, block>>>(din, dout, w, h); };
  launch();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  // every cell, exactly, against the rule in its other textbook form: s = the 3 x 3
  // sum including the cell, next = (s == 3) or (s == 4 and alive), computed row by
  // row from column sums of three rows (rows and columns outside the board add 0);
  // the timed launches below recompute the same generation from the same input
  std::vector<unsigned char> got = gpa::to_host(dout, cells);
  std::vector<unsigned char> want(cells), zero(w, 0), col(w + 2, 0);
  size_t before = 0, after = 0;
  for (int y = 0; y < h; ++y) {
    const unsigned char* up = y > 0 ? &board[size_t(y - 1) * w] : zero.data();
    const unsigned char* mid = &board[size_t(y) * w];
    const unsigned char* down = y + 1 < h ? &board[size_t(y + 1) * w] : zero.data();
    unsigned char* next = &want[size_t(y) * w];
    for (int x = 0; x < w; ++x) col[x + 1] = up[x] + mid[x] + down[x];
    for (int x = 0; x < w; ++x) {
      const int s = col[x] + col[x + 1] + col[x + 2];
      next[x] = (s == 3) | ((s == 4) & mid[x]);
    }
    for (int x = 0; x < w; ++x) before += mid[x], after += next[x];
  }
  gpa::check_close(got, [&](size_t i) { return double(want[i]); }, cells, 0.0, 0.0, "next generation");
  std::printf("alive: %.2f%% -> %.2f%%\n", 100.0 * before / cells, 100.0 * after / cells);

  gpa::time_kernel("life_bytes", opt, launch);
  return 0;
}
