threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint n = a_shape[0];

// Threads past the end contribute zero, so every slot the sum reads is written.
shared[local_i] = (i < n) ? a[i] * b[i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);

if (local_i == 0) {
    float total = 0.0f;
    for (uint k = 0; k < threads_per_threadgroup.x; k++) {
        total += shared[k];
    }
    out[0] = total;
}
