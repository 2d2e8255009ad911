#include <metal_stdlib>
using namespace metal;

// dims = [T, G, C, M, n]; one thread per row (t, g, m) = row index t * G * M + g * M + m.
kernel void mvmr_shader(device const float* a [[buffer(0)]],
                        device const uint* a_idx [[buffer(1)]],
                        device const float* b [[buffer(2)]],
                        device const uint* b_idx [[buffer(3)]],
                        device const uint* o_idx [[buffer(4)]],
                        device float* o [[buffer(5)]],
                        constant uint* dims [[buffer(6)]],
                        uint row [[thread_position_in_grid]]) {
  const uint T = dims[0], G = dims[1], C = dims[2], M = dims[3];
  if (row >= T * G * M) return;
  const uint t = row / (G * M);
  const uint g = (row / M) % G;
  const uint m = row % M;
  const uint pa = a_idx[t];
  const uint pb = b_idx[t];
  float acc = 0.0f;
  for (uint c = 0; c < C; c++) {
    acc += b[(pb * G + g) * C + c] * a[((pa * G + g) * C + c) * M + m];
  }
  device atomic_float* target = (device atomic_float*)&o[(o_idx[t] * G + g) * M + m];
  atomic_fetch_add_explicit(target, acc, memory_order_relaxed);
}
