// knn.cl -- brute-force Hamming k nearest neighbours of binary descriptors (standalone; built with
// WORDS, the descriptor's 32-bit words, and K, 1..8). Work-item q holds query q in registers; the
// work-group stages the training rows through local memory, `rows` at a time, and every work-item
// keeps its k smallest (distance, index) keys sorted: a strictly smaller distance is needed to pass
// an equal one, so among equal distances the lower index comes first (OpenCV's order). The sets
// start at rows query_first and train_first of their buffers; indices count from train_first.
kernel void knn_hamming(global const uint* query, long query_first, long queries, global const uint* train,
                        long train_first, long trains, global int* idx, global int* dist, local uint* tile, long rows) {
  const long q = get_global_id(0);
  query += query_first * WORDS;  // the rows of one image of a collection
  train += train_first * WORDS;
  const uint lid = get_local_id(0), size = get_local_size(0);
  uint a[WORDS];
#pragma unroll
  for (int w = 0; w < WORDS; ++w) a[w] = q < queries ? query[q * WORDS + w] : 0;
  int best_dist[K], best_idx[K];
#pragma unroll
  for (int j = 0; j < K; ++j) best_dist[j] = INT_MAX, best_idx[j] = -1;
  for (long t0 = 0; t0 < trains; t0 += rows) {
    const long count = min(rows, trains - t0);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long x = lid; x < count * WORDS; x += size) tile[x] = train[t0 * WORDS + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (q < queries) {
      for (long r = 0; r < count; ++r) {
        int d = 0;
#pragma unroll
        for (int w = 0; w < WORDS; ++w) d += popcount(a[w] ^ tile[r * WORDS + w]);
        if (d < best_dist[K - 1]) {
          int p = K - 1;
          while (p > 0 && best_dist[p - 1] > d) {
            best_dist[p] = best_dist[p - 1];
            best_idx[p] = best_idx[p - 1];
            --p;
          }
          best_dist[p] = d;
          best_idx[p] = (int)(t0 + r);
        }
      }
    }
  }
  if (q < queries) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      idx[q * K + j] = best_idx[j];
      dist[q * K + j] = best_idx[j] < 0 ? -1 : best_dist[j];
    }
  }
}
