threadgroup float best_values[SIMD_GROUPS];
threadgroup uint best_indices[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;

// This thread's best: elements in increasing order, replaced only by a strictly larger value.
float best = -INFINITY;
uint index = UINT_MAX;
for (uint k = j; k < N; k += TG) {
    float v = x[r * N + k];
    if (v > best) {
        best = v;
        index = k;
    }
}

// The SIMD-group's best value, and the first index holding it.
float group_best = simd_max(best);
uint group_index = simd_min(best == group_best ? index : UINT_MAX);
if (lane == 0) {
    best_values[sg] = group_best;
    best_indices[sg] = group_index;
}
threadgroup_barrier(mem_flags::mem_threadgroup);

if (j == 0) {
    float v = best_values[0];
    uint i = best_indices[0];
    for (uint s = 1; s < SIMD_GROUPS; s++) {
        if (best_values[s] > v || (best_values[s] == v && best_indices[s] < i)) {
            v = best_values[s];
            i = best_indices[s];
        }
    }
    out[r] = i;
}
