threadgroup float probs[NV];
threadgroup uint ids[NV];
threadgroup float maxes[SIMD_GROUPS];
threadgroup float sums[SIMD_GROUPS];
threadgroup float nucleus[SIMD_GROUPS];
uint j = thread_position_in_threadgroup.x;
uint r = threadgroup_position_in_grid.y;
uint V = logits_shape[1];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;

// 1. Your logits, read once and divided by the temperature; the row's maximum.
float t = temperature;
float s[PER_THREAD];
float m = -INFINITY;
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    s[q] = k < V ? logits[r * V + k] / t : -INFINITY;
    m = max(m, s[q]);
}
m = simd_max(m);
if (lane == 0) {
    maxes[sg] = m;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint g = 0; g < SIMD_GROUPS; g++) {
    m = max(m, maxes[g]);
}
// exp(s - max) is at most 1: no overflow at any logit. Padding (-1) sorts after every token.
for (uint q = 0; q < PER_THREAD; q++) {
    uint k = j + q * TG;
    probs[k] = k < V ? exp(s[q] - m) : -1.0f;
    ids[k] = k;
}
threadgroup_barrier(mem_flags::mem_threadgroup);

// 2. Bitonic sort: largest probability first, equal probabilities by the smaller token.
for (uint size = 2; size <= NV; size *= 2) {
    for (uint stride = size / 2; stride > 0; stride /= 2) {
        for (uint q = 0; q < NV / 2 / TG; q++) {
            uint pair = j + q * TG;
            uint a = 2 * stride * (pair / stride) + pair % stride;
            uint b = a + stride;
            float pa = probs[a];
            float pb = probs[b];
            uint ia = ids[a];
            uint ib = ids[b];
            bool a_first = pa > pb || (pa == pb && ia < ib);
            bool want_a_first = (a & size) == 0;
            if (a_first != want_a_first) {
                probs[a] = pb;
                probs[b] = pa;
                ids[a] = ib;
                ids[b] = ia;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

// 3. The mass ranked above each of your sorted positions, and the row's total S.
float p[PER_THREAD];
float mine = 0.0f;
for (uint q = 0; q < PER_THREAD; q++) {
    p[q] = max(probs[j * PER_THREAD + q], 0.0f);
    mine += p[q];
}
float above = simd_prefix_exclusive_sum(mine);
if (lane == 31) {
    sums[sg] = above + mine;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float S = 0.0f;
for (uint g = 0; g < SIMD_GROUPS; g++) {
    if (g < sg) {
        above += sums[g];
    }
    S += sums[g];
}

// 4. The nucleus: positions whose mass above is below top_p * S; its mass P.
float cut = top_p * S;
float in_nucleus = 0.0f;
float running = above;
for (uint q = 0; q < PER_THREAD; q++) {
    if (running < cut) {
        in_nucleus += p[q];
    }
    running += p[q];
}
in_nucleus = simd_sum(in_nucleus);
if (lane == 0) {
    nucleus[sg] = in_nucleus;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float P = 0.0f;
for (uint g = 0; g < SIMD_GROUPS; g++) {
    P += nucleus[g];
}

// 5. The draw: the nucleus position whose interval [above, above + p) holds u * P.
float target = u[r] * P;
running = above;
for (uint q = 0; q < PER_THREAD; q++) {
    if (running < cut && running <= target && target < running + p[q]) {
        out[r] = ids[j * PER_THREAD + q];
    }
    running += p[q];
}
