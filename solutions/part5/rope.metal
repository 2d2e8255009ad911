uint i = thread_position_in_grid.x;
uint l = thread_position_in_grid.y;
uint h = thread_position_in_grid.z;
uint L = x_shape[1];
uint D = x_shape[2];
uint row = (h * L + l) * D;

float theta = float(offset + int(l)) * pow(BASE, -2.0f * float(i) / float(D));
float c = cos(theta);
float s = sin(theta);
// Halves: (x[i], x[i + D/2]).
float a = x[row + i];
float b = x[row + i + D / 2];
out[row + i] = a * c - b * s;
out[row + i + D / 2] = a * s + b * c;
