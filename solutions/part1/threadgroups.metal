uint group = threadgroup_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint i = group * dispatch_threads_per_threadgroup.x + local_i;
if (i < a_shape[0]) {
    out[i] = a[i] + 10;
}
