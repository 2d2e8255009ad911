threadgroup float a_cache[THREADGROUP_MAX_CONV_SIZE];
threadgroup float b_cache[MAX_CONV];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;

uint n = a_shape[0];
uint taps = b_shape[0];
uint width = dispatch_threads_per_threadgroup.x;
uint start = i - local_i;

// Every thread copies its own element of a (zero past the end).
a_cache[local_i] = (i < n) ? a[i] : 0.0f;
// The first `taps` threads copy b; the next `taps - 1` copy the elements just past this group,
// so no thread makes more than two device reads.
if (local_i < taps) {
    b_cache[local_i] = b[local_i];
} else if (local_i < 2 * taps - 1) {
    uint slot = width + local_i - taps;
    a_cache[slot] = (start + slot < n) ? a[start + slot] : 0.0f;
}
threadgroup_barrier(mem_flags::mem_threadgroup);

if (i < n) {
    float acc = 0.0f;
    for (uint j = 0; j < taps && i + j < n; j++) {
        acc += a_cache[local_i + j] * b_cache[j];
    }
    out[i] = acc;
}
