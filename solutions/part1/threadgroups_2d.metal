uint3 group = threadgroup_position_in_grid;
uint3 local_pos = thread_position_in_threadgroup;
uint3 group_size = dispatch_threads_per_threadgroup;
uint col = group.x * group_size.x + local_pos.x;
uint row = group.y * group_size.y + local_pos.y;
uint rows = a_shape[0];
uint cols = a_shape[1];
if (row < rows && col < cols) {
    uint idx = row * cols + col;
    out[idx] = a[idx] + 10;
}
