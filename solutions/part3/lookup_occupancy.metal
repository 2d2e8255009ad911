threadgroup float lut[TABLE];  // 16 KiB of threadgroup memory per threadgroup
uint i = thread_position_in_grid.x;
uint t = thread_position_in_threadgroup.x;
uint threads = threads_per_threadgroup.x;  // TG, or fewer in a partial last threadgroup
// The threadgroup copies the table, each thread every threads-th entry, then looks up.
for (uint k = t; k < TABLE; k += threads) {
    lut[k] = table[k];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = lut[idx[i]];
