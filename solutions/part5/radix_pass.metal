#include <metal_stdlib>
using namespace metal;

// One pass of a least-significant-digit radix sort: the keys ordered by one 4-bit digit,
// (key >> shift) & (RADIX - 1), keys of equal digits kept in their order (stable).
constant uint RADIX = 16;

uint digit_of(uint key, uint shift) {
  return (key >> shift) & (RADIX - 1);
}

// Stage 1: how many keys have each digit (the host zeroes hist first).
kernel void histogram(device const uint* keys [[buffer(0)]],
                      device atomic_uint* hist [[buffer(1)]],
                      constant uint& shift [[buffer(2)]],
                      constant uint& n [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
  if (i >= n) {
    return;
  }
  atomic_fetch_add_explicit(&hist[digit_of(keys[i], shift)], 1u, memory_order_relaxed);
}

// Stage 2: where each digit's keys start: the exclusive scan of the histogram.
kernel void scan(device const uint* hist [[buffer(0)]],
                 device uint* offsets [[buffer(1)]],
                 uint b [[thread_position_in_grid]]) {
  uint sum = 0;
  for (uint c = 0; c < b; c++) {
    sum += hist[c];
  }
  offsets[b] = sum;
}

// Stage 3: each key to its digit's start plus the number of earlier keys of its digit.
kernel void scatter(device const uint* keys [[buffer(0)]],
                    device const uint* offsets [[buffer(1)]],
                    device uint* out [[buffer(2)]],
                    constant uint& shift [[buffer(3)]],
                    constant uint& n [[buffer(4)]],
                    uint i [[thread_position_in_grid]]) {
  if (i >= n) {
    return;
  }
  uint d = digit_of(keys[i], shift);
  uint rank = 0;
  for (uint j = 0; j < i; j++) {
    rank += digit_of(keys[j], shift) == d ? 1 : 0;
  }
  out[offsets[d] + rank] = keys[i];
}
