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
    squares = fma(v[q], v[q], squares);
}

// A SIMD-group sum, one slot per SIMD-group, one barrier; every thread adds the slots.
for (ushort d = 16; d > 0; d /= 2) {
    squares += simd_shuffle_down(squares, d);
}
if (lane == 0) {
    partial[sg] = squares;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = 0.0f;
for (uint s = 0; s < SIMD_GROUPS; s++) {
    total += partial[s];
}
float root = sqrt(total / float(N) + EPS);

for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    if (k < N) {
        out[r * N + k] = w[k] * (v[q] / root);
    }
}
