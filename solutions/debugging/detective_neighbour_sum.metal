threadgroup float tile[TG + 1];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
uint n = a_shape[0];
tile[local_i] = i < n ? a[i] : 0.0f;
if (local_i == TG - 1) {
    tile[TG] = i + 1 < n ? a[i + 1] : 0.0f;
}
// Every thread of the threadgroup reaches the barrier; only the guard's threads write.
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n) {
    out[i] = tile[local_i] + tile[local_i + 1];
}
