// Paged KV-cache gather, as in LLM decode with a paged cache (vLLM's
// PagedAttention): the K rows of every token live in a pool of fixed-size pages
// (16 tokens of 128 halves, 4 KB), handed out in no particular order; a block
// table maps each sequence's logical block (token / 16) to its physical page.
// The kernel copies the K rows of 128 sequences (2048-8191 tokens each, ~168 MB)
// into one contiguous buffer, the sequences back to back (out_start[s] = first
// row of sequence s). Written the way a first port is: one thread per
// (sequence, token), the thread walking the head dimension one half at a time.
// Performance problem: the lanes of a warp hold 32 consecutive tokens, whose rows
// are 256 bytes apart (two pages of 16 rows), so every load and store request of
// the loop touches 32 lines for 2 bytes each: 32 sectors per request for 64
// useful bytes, 128 such loads and 128 such stores per thread.
#include <cuda_fp16.h>

#include "../common/harness.cuh"

__global__ void paged_kv_gather(__half* out, const __half* pool, const int* block_table, const int* seq_lens,
                                const int* out_start, int max_pages, int page_size, int head_dim) {
  const int s = blockIdx.y;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= seq_lens[s]) return;
  const int page = block_table[s * max_pages + t / page_size];
  const __half* src = pool + (size_t(page) * page_size + t % page_size) * head_dim;
  __half* dst = out + size_t(out_start[s] + t) * head_dim;
  for (int d = 0; d < head_dim; ++d) dst[d] = src[d];
}

int main(int argc, char** argv) {
  gpa::Options opt = gpa::parse_args(argc, argv);
  const int seqs = 128, page_size = 16, head_dim = 128, max_len = 8192;
  const int max_pages = max_len / page_size, pool_pages = 49152;  // 192 MB of pages, ~84% in use
  gpa::Lcg rng(61);
  std::vector<int> seq_lens(seqs), out_start(seqs);
  int rows = 0, used_pages = 0;
  for (int s = 0; s < seqs; ++s) {
    seq_lens[s] = 2048 + int(rng.next() % 6144);
    out_start[s] = rows;
    rows += seq_lens[s];
    used_pages += (seq_lens[s] + page_size - 1) / page_size;
  }
  if (used_pages > pool_pages) gpa::fail("pool too small");
  // pages handed out in a random order (a pool after many sequences came and went)
  std::vector<int> perm(pool_pages);
  for (int i = 0; i < pool_pages; ++i) perm[i] = i;
  for (int i = pool_pages - 1; i > 0; --i) std::swap(perm[i], perm[rng.next() % (i + 1)]);
  std::vector<int> block_table(size_t(seqs) * max_pages, -1);
  for (int s = 0, next = 0; s < seqs; ++s)
    for (int b = 0; b < (seq_lens[s] + page_size - 1) / page_size; ++b) block_table[size_t(s) * max_pages + b] = perm[next++];
  // K rows as raw fp16 bit patterns: finite values of magnitude < 1 (a copy moves bits)
  std::vector<unsigned short> pool(size_t(pool_pages) * page_size * head_dim);
  for (auto& v : pool) v = (unsigned short)((rng.next() >> 8) & 0xBBFF);

  unsigned short* dpool16 = gpa::to_device(pool);
  const __half* dpool = reinterpret_cast<const __half*>(dpool16);
  int* dtable = gpa::to_device(block_table);
  int* dlens = gpa::to_device(seq_lens);
  int* dstart = gpa::to_device(out_start);
  unsigned short* dout16 = gpa::device_alloc<unsigned short>(size_t(rows) * head_dim);
  __half* dout = reinterpret_cast<__half*>(dout16);
  const int block = 256;
  const dim3 grid((max_len + block - 1) / block, seqs);
  auto launch = [&] {
    paged_kv_gather<<<grid, block>>>(dout, dpool, dtable, dlens, dstart, max_pages, page_size, head_dim);
  };
  launch();
  CUDA_CHECK(cudaDeviceSynchronize());

  // every element, exactly (bit patterns): row out_start[s] + t is the pool row of token t of s
  std::vector<int> row_seq(rows);
  for (int s = 0; s < seqs; ++s)
    for (int t = 0; t < seq_lens[s]; ++t) row_seq[out_start[s] + t] = s;
  std::vector<unsigned short> got = gpa::to_host(dout16, size_t(rows) * head_dim);
  auto ref = [&](size_t e) {
    const size_t r = e / head_dim, d = e % head_dim;
    const int s = row_seq[r], t = int(r) - out_start[s];
    const size_t page = size_t(block_table[size_t(s) * max_pages + t / page_size]);
    return double(pool[(page * page_size + t % page_size) * head_dim + d]);
  };
  gpa::check_close(got, ref, size_t(rows) * head_dim, 0.0, 0.0, "out (every element)");

  gpa::time_kernel("paged_kv_gather", opt, launch);
  return 0;
}
