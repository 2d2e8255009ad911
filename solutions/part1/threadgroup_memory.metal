threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;

if (i < a_shape[0]) {
    shared[local_i] = a[i];
}
// Outside the if: every thread of the threadgroup must reach the barrier.
threadgroup_barrier(mem_flags::mem_threadgroup);

if (i < a_shape[0]) {
    out[i] = shared[local_i] + 10;
}
