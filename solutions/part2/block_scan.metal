threadgroup float cache[BLOCK];
uint i = thread_position_in_grid.x;
uint j = thread_position_in_threadgroup.x;
uint n = a_shape[0];
// Spare threads past the end hold a zero: they still reach every barrier below.
float running = (i < n) ? a[i] : 0.0f;
cache[j] = running;
threadgroup_barrier(mem_flags::mem_threadgroup);

// Hillis-Steele: after the round with distance d, slot j holds the sum of the 2d slots ending at j.
for (uint d = 1; d < BLOCK; d *= 2) {
    if (j >= d) {
        running += cache[j - d];
    }
    // Everyone has read the previous round before anyone overwrites it.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    cache[j] = running;
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

if (i < n) {
    out[i] = running;
}
