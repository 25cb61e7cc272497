// multireduce/cpu/detail/window.hpp -- the van Herk / Gil-Werman window engine: direct folds for
// W <= 4, tiles of whole blocks, and sub-tiles joined through carries for long windows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "fold.hpp"
#include "parallel.hpp"

namespace multireduce::cpu::detail {

/// Windows up to this long are folded directly: W operations per output (init included), no more
/// than vHGW's 4, and the loop vectorises.
inline constexpr std::int64_t direct_window_max = 4;
/// Window tile: windows up to this long are grouped whole into tiles of about this many elements;
/// longer ones are cut into sub-tiles of this many elements, joined through carries.
inline constexpr std::int64_t window_tile = std::int64_t{1} << 12;

// ---- window reductions (van Herk / Gil-Werman) -------------------------------------------------
//
// Cut the input into blocks of W elements aligned at 0. For a window starting at i = bW + r,
// r > 0, the window is the suffix of block b from r plus the prefix of block b + 1 up to r - 1:
//   out[i] = init (+) (S_b[r] (+) P_{b+1}[r - 1]),  S_b[r] = x[bW+r] (+) ... (+) x[bW+W-1],
//                                                 P_{b+1}[q] = x[(b+1)W] (+) ... (+) x[(b+1)W+q];
// for r = 0 the window is block b itself: out[i] = init (+) S_b[0]. Four operations per element
// whatever W (suffix, prefix, join, init), no inverse needed, operands kept in left-to-right order. Blocks with
// outputs: b < n / W (the last one may need only part of P_{b+1}).

/// Windows of compile-time length W <= direct_window_max, folded directly: out[i] = init (+)
/// (in[i] (+) ... (+) in[i + W - 1]), the same association as a short segment.
template <int W, class Acc, class It, class Out, class Op>
void window_direct(It in, std::int64_t outputs, Out out, const Op& op, const Acc& init) {
  MULTIREDUCE_OMP(parallel for schedule(static) if (outputs > chunk_elements))
  for (std::int64_t i = 0; i < outputs; ++i) {
    Acc r = static_cast<Acc>(in[i]);
    for (int j = 1; j < W; ++j) r = op(r, static_cast<Acc>(in[i + j]));
    out[i] = op(init, r);
  }
}

/// W <= window_tile: tiles of whole blocks. Blocks are taken four at a time so that eight
/// independent chains (a suffix and a prefix per block) advance side by side in registers.
template <class Acc, class It, class Out, class Op>
void window_blocks(It in, std::int64_t n, std::int64_t w, Out out, const Op& op, const Acc& init) {
  auto x = [&](std::int64_t i) { return static_cast<Acc>(in[i]); };
  const std::int64_t blocks = n / w;                                      // blocks holding outputs
  const std::int64_t group = std::max<std::int64_t>(1, window_tile / w);  // blocks per tile
  const std::int64_t tiles = ceil_div(blocks, group);
  // P_{b+1}[0, len) is needed for the outputs r = 1..len of block b: len = min(W - 1, n - (b + 1)W).
  auto prefix_length = [&](std::int64_t b) { return std::min(w - 1, n - (b + 1) * w); };
  MULTIREDUCE_OMP(parallel if (tiles > 1))
  {
    std::vector<Acc> suffix(static_cast<std::size_t>(group * w), init), prefix(static_cast<std::size_t>(group * w), init);
    MULTIREDUCE_OMP(for schedule(static))
    for (std::int64_t t = 0; t < tiles; ++t) {
      const std::int64_t b0 = t * group, g_count = std::min(blocks, b0 + group) - b0;
      Acc* S = suffix.data();
      Acc* P = prefix.data();
      std::int64_t g = 0;
      for (; g + 4 <= g_count && prefix_length(b0 + g + 3) == w - 1; g += 4) {
        const std::int64_t base = (b0 + g) * w;
        Acc s[4] = {x(base + w - 1), x(base + 2 * w - 1), x(base + 3 * w - 1), x(base + 4 * w - 1)};
        Acc p[4] = {x(base + w), x(base + 2 * w), x(base + 3 * w), x(base + 4 * w)};
        for (int j = 0; j < 4; ++j) {
          S[(g + j) * w + w - 1] = s[j];
          P[(g + j) * w] = p[j];
        }
        for (std::int64_t q = 1; q < w - 1; ++q)
          for (int j = 0; j < 4; ++j) {
            s[j] = op(x(base + j * w + w - 1 - q), s[j]);
            S[(g + j) * w + w - 1 - q] = s[j];
            p[j] = op(p[j], x(base + (j + 1) * w + q));
            P[(g + j) * w + q] = p[j];
          }
        for (int j = 0; j < 4; ++j) S[(g + j) * w] = op(x(base + j * w), s[j]);
      }
      for (; g < g_count; ++g) {  // the tile's last few blocks, and the array's last block
        const std::int64_t base = (b0 + g) * w, len = prefix_length(b0 + g);
        Acc s = x(base + w - 1);
        S[g * w + w - 1] = s;
        for (std::int64_t r = w - 2; r >= 0; --r) S[g * w + r] = s = op(x(base + r), s);
        if (len > 0) {
          Acc p = x(base + w);
          P[g * w] = p;
          for (std::int64_t q = 1; q < len; ++q) P[g * w + q] = p = op(p, x(base + w + q));
        }
      }
      for (g = 0; g < g_count; ++g) {
        const std::int64_t base = (b0 + g) * w, len = prefix_length(b0 + g);
        const Acc* Sg = S + g * w;
        const Acc* Pg = P + g * w - 1;
        out[base] = op(init, Sg[0]);
        for (std::int64_t r = 1; r <= len; ++r) out[base + r] = op(init, op(Sg[r], Pg[r]));
      }
    }
  }
}

/// W > window_tile: every block is cut into sub-tiles of window_tile elements so that long windows
/// (a few blocks, or one) still use every thread and bounded memory. Pass 1 folds each sub-tile;
/// pass 2 turns those into carries (the fold of the rest of the block after a sub-tile, and of the
/// block before it); pass 3 runs each sub-tile's suffix and prefix chains from its carries.
template <class Acc, class It, class Out, class Op>
void window_subtiles(It in, std::int64_t n, std::int64_t w, Out out, const Op& op, const Acc& init) {
  auto x = [&](std::int64_t i) { return static_cast<Acc>(in[i]); };
  constexpr std::int64_t tile = window_tile;
  const std::int64_t blocks = n / w;                   // blocks holding outputs
  const std::int64_t span = blocks + (blocks * w < n);  // plus a partial block read by prefixes
  const std::int64_t per_block = ceil_div(w, tile);
  const std::int64_t slots = span * per_block;
  auto slot_range = [&](std::int64_t slot) {  // elements of sub-tile `slot`, clipped to n
    const std::int64_t b = slot / per_block, k = slot % per_block;
    const std::int64_t first = b * w + k * tile, last = std::min(b * w + std::min(w, (k + 1) * tile), n);
    return std::pair<std::int64_t, std::int64_t>{first, last};
  };
  std::vector<std::optional<Acc>> fold(static_cast<std::size_t>(slots)), after(static_cast<std::size_t>(slots)),
      before(static_cast<std::size_t>(slots));
  MULTIREDUCE_OMP(parallel for schedule(static))
  for (std::int64_t slot = 0; slot < slots; ++slot) {
    const auto [first, last] = slot_range(slot);
    if (first < last) fold[static_cast<std::size_t>(slot)] = fold_nonempty<Acc>(in, first, last, op);
  }
  auto join = [&](const std::optional<Acc>& a, const std::optional<Acc>& b) -> std::optional<Acc> {
    if (!a) return b;
    if (!b) return a;
    return op(*a, *b);
  };
  MULTIREDUCE_OMP(parallel for schedule(static))
  for (std::int64_t b = 0; b < span; ++b) {
    const std::size_t s0 = static_cast<std::size_t>(b * per_block), count = static_cast<std::size_t>(per_block);
    for (std::size_t k = 1; k < count; ++k) before[s0 + k] = join(before[s0 + k - 1], fold[s0 + k - 1]);
    for (std::size_t k = count - 1; k-- > 0;) after[s0 + k] = join(fold[s0 + k + 1], after[s0 + k + 1]);
  }
  MULTIREDUCE_OMP(parallel if (blocks * per_block > 1))
  {
    std::vector<Acc> suffix(static_cast<std::size_t>(tile), init);
    MULTIREDUCE_OMP(for schedule(static))
    for (std::int64_t slot = 0; slot < blocks * per_block; ++slot) {
      const std::int64_t b = slot / per_block, k = slot % per_block, base = b * w;
      const std::int64_t r0 = k * tile, r1 = std::min(w, r0 + tile);  // block b is whole
      const std::int64_t r_last = std::min(r1 - 1, n - w - base);        // last output start in the sub-tile
      if (r0 > r_last) continue;
      Acc* S = suffix.data();
      const auto& carry = after[static_cast<std::size_t>(slot)];
      S[r1 - 1 - r0] = carry ? op(x(base + r1 - 1), *carry) : x(base + r1 - 1);
      for (std::int64_t r = r1 - 2; r >= r0; --r) S[r - r0] = op(x(base + r), S[r - r0 + 1]);
      // running: the fold of block b + 1 over [0, r), for the output at r.
      std::int64_t r = r0;
      Acc running = init;
      if (r0 == 0) {
        out[base] = op(init, S[0]);
        if (r_last == 0) continue;
        running = x(base + w);
        r = 1;
      } else {
        running = *before[static_cast<std::size_t>(slot + per_block)];  // block b + 1 holds >= r0 elements
      }
      for (;; ++r) {
        out[base + r] = op(init, op(S[r - r0], running));
        if (r == r_last) break;
        running = op(running, x(base + w + r));
      }
    }
  }
}

}  // namespace multireduce::cpu::detail
