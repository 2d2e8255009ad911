uint i = thread_position_in_grid.x;
uint l = thread_position_in_grid.y;
uint h = thread_position_in_grid.z;
uint L = x_shape[1];
uint D = x_shape[2];
uint row = (h * L + l) * D;

float theta = float(offset + int(l)) * pow(BASE, -2.0f * float(i) / float(D));
float c = cos(theta);
float s = sin(theta);
// Interleaved pairs: (x[2i], x[2i + 1]).
float a = x[row + 2 * i];
float b = x[row + 2 * i + 1];
out[row + 2 * i] = a * c - b * s;
out[row + 2 * i + 1] = a * s + b * c;
