// The same copy through pointers: the cache's head starts at head * T * D, offset rows in; the
// step's element i sits (i % (L * D)) past its head's start.
uint i = thread_position_in_grid.x;
uint heads = k_shape[0] * k_shape[1];
uint L = k_shape[2];
uint D = k_shape[3];
uint T = t_max;
uint head = i / (L * D);
device float* keys = cache + (head * T + uint(offset)) * D;
device float* vals = cache + ((heads + head) * T + uint(offset)) * D;
keys[i % (L * D)] = k[i];
vals[i % (L * D)] = v[i];
