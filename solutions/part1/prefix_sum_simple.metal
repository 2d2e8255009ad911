threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint n = a_shape[0];
// This group's actual size: smaller than 8 in a partial last group.
uint width = threads_per_threadgroup.x;

cache[local_i] = (i < n) ? a[i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);

// Round by round, pairs `stride` apart are added into the left one.
for (uint stride = 1; stride < width; stride *= 2) {
    if (local_i % (2 * stride) == 0 && local_i + stride < width) {
        cache[local_i] += cache[local_i + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

if (local_i == 0) {
    out[threadgroup_position_in_grid.x] = cache[0];
}
