// WRONG: each thread subtracts the maximum of its own elements, not the row's: the
// exponentials of different threads are scaled differently before they are added.
threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
float m = -INFINITY;
for (uint k = j; k < N; k += TG) {
    m = max(m, x[r * N + k]);
}
float sum = 0.0f;
for (uint k = j; k < N; k += TG) {
    sum += exp(x[r * N + k] - m);
}
sum = simd_sum(sum);
if (thread_index_in_simdgroup == 0) {
    partial[simdgroup_index_in_threadgroup] = sum;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
sum = 0.0f;
for (uint s = 0; s < SIMD_GROUPS; s++) {
    sum += partial[s];
}
for (uint k = j; k < N; k += TG) {
    out[r * N + k] = exp(x[r * N + k] - m) / sum;
}
