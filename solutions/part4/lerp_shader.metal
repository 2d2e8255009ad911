#include <metal_stdlib>
using namespace metal;

// out = start + weight * (end - start), computed in float, stored as T.
template <typename T>
kernel void lerp(device const T* start [[buffer(0)]],
                 device const T* end [[buffer(1)]],
                 device T* out [[buffer(2)]],
                 constant float& weight [[buffer(3)]],
                 constant uint& numel [[buffer(4)]],
                 uint index [[thread_position_in_grid]]) {
  if (index >= numel) return;
  const float s = float(start[index]);
  out[index] = T(s + weight * (float(end[index]) - s));
}

// One line per type, as PyTorch's shaders register them (host names lerp_float, lerp_half, ...).
#define REGISTER_LERP(T) template [[host_name("lerp_" #T)]] kernel void lerp<T>(device const T*, device const T*, device T*, constant float&, constant uint&, uint);
REGISTER_LERP(float)
REGISTER_LERP(half)
REGISTER_LERP(bfloat)
