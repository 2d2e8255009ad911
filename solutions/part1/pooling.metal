threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint n = a_shape[0];

// One device read per thread; the neighbours' values come from the shared copy.
if (i < n) {
    shared[local_i] = a[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);

if (i < n) {
    float total = shared[local_i];
    if (local_i >= 1) {
        total += shared[local_i - 1];
    }
    if (local_i >= 2) {
        total += shared[local_i - 2];
    }
    out[i] = total;
}
