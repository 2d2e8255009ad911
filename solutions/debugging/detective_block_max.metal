threadgroup float shared[TG];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
// A spare thread fills its slot with -infinity, which never wins a maximum.
shared[local_i] = i < a_shape[0] ? a[i] : -INFINITY;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == 0) {
    float best = shared[0];
    for (uint k = 1; k < TG; k++) {
        best = max(best, shared[k]);
    }
    out[threadgroup_position_in_grid.x] = best;
}
