threadgroup float partial[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];

float mine = 0.0f;
for (uint i = j; i < N; i += TG) {
    mine += x[r * N + i];
}
// Level 1: the 32 lanes of each SIMD-group, in registers.
float group_total = simd_sum(mine);
if (thread_index_in_simdgroup == 0) {
    partial[simdgroup_index_in_threadgroup] = group_total;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Level 2: the SIMD-groups' totals.
if (j == 0) {
    float total = 0.0f;
    for (uint s = 0; s < SIMD_GROUPS; s++) {
        total += partial[s];
    }
    out[r] = total;
}
