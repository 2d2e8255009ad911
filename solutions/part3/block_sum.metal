threadgroup float partial[SIMD_GROUPS];  // for your version: one slot per SIMD-group
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// Level 1: each SIMD-group in registers.
float v = simd_sum(i < a_shape[0] ? a[i] : 0.0f);
if (lane == 0) {
    partial[sg] = v;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Level 2: the first SIMD-group adds the SIMD-groups' sums.
if (sg == 0) {
    float total = simd_sum(lane < SIMD_GROUPS ? partial[lane] : 0.0f);
    if (lane == 0) {
        out[threadgroup_position_in_grid.x] = total;
    }
}
