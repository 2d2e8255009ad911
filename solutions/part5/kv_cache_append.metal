uint i = thread_position_in_grid.x;  // the element of k (and of v) this thread copies
uint heads = k_shape[0] * k_shape[1];  // B * KV
uint L = k_shape[2];
uint D = k_shape[3];
uint T = t_max;
uint head = i / (L * D);
uint l = i / D % L;
uint d = i % D;
// In k and v a head's L tokens follow each other; in the cache each head owns T positions.
uint to = (head * T + uint(offset) + l) * D + d;
cache[to] = k[i];
cache[heads * T * D + to] = v[i];
