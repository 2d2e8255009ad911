threadgroup float best_values[SIMD_GROUPS];
threadgroup uint best_indices[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint N = x_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;

float best = -INFINITY;
uint index = UINT_MAX;
for (uint k = j; k < N; k += TG) {
    float v = x[r * N + k];
    if (v > best || (v == best && k < index)) {
        best = v;
        index = k;
    }
}
// A shuffle tree carrying the index: after it, lane 0 holds the SIMD-group's first best.
for (ushort d = 16; d > 0; d /= 2) {
    float ov = simd_shuffle_down(best, d);
    uint oi = simd_shuffle_down(index, d);
    if (lane + d < 32 && (ov > best || (ov == best && oi < index))) {
        best = ov;
        index = oi;
    }
}
if (lane == 0) {
    best_values[sg] = best;
    best_indices[sg] = index;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Every thread reduces the slots; thread 0 writes.
float v = -INFINITY;
uint i = UINT_MAX;
for (uint s = 0; s < SIMD_GROUPS; s++) {
    if (best_values[s] > v || (best_values[s] == v && best_indices[s] < i)) {
        v = best_values[s];
        i = best_indices[s];
    }
}
if (j == 0) {
    out[r] = i;
}
