// Letter histogram of a text, the textbook first histogram: each letter a-z counted in one of 7
// intervals of four letters (a-d, e-h, ..., y-z); other characters are skipped. A grid-stride loop
// in which every thread adds each of its letters to the interval's counter in global memory.
// Performance problem: ~2^24 global atomics on 7 counters (one 32-byte sector): the L2 performs
// the adds to one counter one after another; reading the 16 MB of text is a small part of the time.
#include "../../common/harness.cuh"

constexpr int kIntervals = 7;

__global__ void letter_histogram(const unsigned char* text, unsigned* histo, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int position = text[i] - 'a';
    if (position >= 0 && position < 26) atomicAdd(&histo[position / 4], 1u);
  }
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int n = 1 << 24;
  std::vector<unsigned char> text(n);
  gpa::Lcg rng(2024);
  for (auto& c : text) {       // lower-case letters with a space about every sixth character
    unsigned r = rng.next() % 32;
    c = r < 26 ? static_cast<unsigned char>('a' + r) : ' ';
  }
  unsigned char* dtext = gpa::to_device(text);
  unsigned* dhisto = gpa::device_alloc<unsigned>(kIntervals);
  CUDA_CHECK(cudaMemset(dhisto, 0, sizeof(unsigned) * kIntervals));
  const int block = 256, grid = 4096;
  // the counts accumulate over the timed launches; only the first one is checked
  auto launch = [&] { letter_histogram<<<grid, block>>>(dtext, dhisto, n); };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<unsigned> got = gpa::to_host(dhisto, kIntervals);
  std::vector<double> want(kIntervals, 0.0);
  for (unsigned char c : text)
    if (c >= 'a' && c <= 'z') want[(c - 'a') / 4] += 1.0;
  gpa::check_close(got, [&](size_t b) { return want[b]; }, kIntervals, 0.0, 0.0, "interval counts");

  gpa::time_kernel("letter_histogram", opt, launch);
  return 0;
}
