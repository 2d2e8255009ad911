constant uint TABLE = 4096;
// Threads per threadgroup: every test launches threadgroups of TG threads. Choose it.
// 1024 threads (32 SIMD-groups) per 16 KiB table: 3 threadgroups fill a core's 96 SIMD-groups.
constant uint TG = 1024;
