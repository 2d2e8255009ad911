threadgroup float partial[TG];
uint j = thread_position_in_threadgroup.x;
uint c = threadgroup_position_in_grid.y;
uint k = threadgroup_position_in_grid.z;
uint C = x_shape[1];
uint start = offsets[k];
uint len = lengths[k];

// Each thread strides through the segment: rows j, j + TG, j + 2 TG, ...
float mine = 0.0f;
for (uint i = j; i < len; i += TG) {
    mine += x[(start + i) * C + c];
}
partial[j] = mine;
threadgroup_barrier(mem_flags::mem_threadgroup);

// Tree reduction of the TG partial sums into partial[0].
for (uint stride = 1; stride < TG; stride *= 2) {
    if (j % (2 * stride) == 0) {
        partial[j] += partial[j + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (j == 0) {
    out[k * C + c] = partial[0];
}
