uint group = threadgroup_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
// The size the launch asked for, the same in every threadgroup (the partial last one included).
uint i = group * dispatch_threads_per_threadgroup.x + local_i;
if (i < a_shape[0]) {
    float x = a[i];
    out[i] = x * x;
}
