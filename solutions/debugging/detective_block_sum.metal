threadgroup float shared[TG];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = TG / 2; s > 0; s /= 2) {
    if (local_i < s) {
        shared[local_i] += shared[local_i + s];
    }
    // Every round reads what the previous round wrote: all threads wait here, in every round.
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) {
    out[threadgroup_position_in_grid.x] = shared[0];
}
