// One thread adds every product in order with fma: another summation order, fused roundings.
threadgroup float total[1];
uint i = thread_position_in_grid.x;
if (i == 0) {
    float s = 0.0f;
    for (uint k = 0; k < a_shape[0]; k++) {
        s = fma(a[k], b[k], s);
    }
    total[0] = s;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i == 0) {
    out[0] = total[0];
}
