threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;

// The only read of the row: this thread's elements, kept in registers.
float v[PER_THREAD];
float m = -INFINITY;
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    v[q] = k < N ? x[r * N + k] : -INFINITY;
    m = max(m, v[q]);
}
m = simd_max(m);
if (lane == 0) {
    partial[sg] = m;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
m = partial[0];
for (uint s = 1; s < SIMD_GROUPS; s++) {
    m = max(m, partial[s]);
}
threadgroup_barrier(mem_flags::mem_threadgroup);

float sum = 0.0f;
for (uint q = 0; q < PER_THREAD; q++) {
    v[q] = exp(v[q] - m);  // exp(-inf) = 0 past the end of the row
    sum += v[q];
}
sum = simd_sum(sum);
if (lane == 0) {
    partial[sg] = sum;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
sum = 0.0f;
for (uint s = 0; s < SIMD_GROUPS; s++) {
    sum += partial[s];
}

for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    if (k < N) {
        out[r * N + k] = v[q] / sum;
    }
}
