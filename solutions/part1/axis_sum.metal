threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint batch = thread_position_in_grid.y;

uint size = a_shape[1];
uint blocks = (size + THREADGROUP_MEM_SIZE - 1) / THREADGROUP_MEM_SIZE;
uint width = threads_per_threadgroup.x;

cache[local_i] = (i < size) ? a[batch * size + i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);

for (uint stride = 1; stride < width; stride *= 2) {
    if (local_i % (2 * stride) == 0 && local_i + stride < width) {
        cache[local_i] += cache[local_i + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

if (local_i == 0) {
    out[batch * blocks + threadgroup_position_in_grid.x] = cache[0];
}
