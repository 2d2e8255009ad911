threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;

// The only read of the row: this thread's elements, kept in registers (0 past the row's end).
float v[PER_THREAD];
float squares = 0.0f;
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    v[q] = k < N ? x[r * N + k] : 0.0f;
    squares += v[q] * v[q];
}

// A SIMD-group sum, one slot per SIMD-group, one barrier; every thread adds the slots.
squares = simd_sum(squares);
if (lane == 0) {
    partial[sg] = squares;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = 0.0f;
for (uint s = 0; s < SIMD_GROUPS; s++) {
    total += partial[s];
}
float scale = rsqrt(total / N + EPS);

for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    if (k < N) {
        out[r * N + k] = v[q] * scale * w[k];
    }
}
