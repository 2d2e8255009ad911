"""Counter values expected from first principles, written down before measuring (issue 17).

For each variant and launch, the totals that Nsight Compute should read on an NVIDIA Hopper GPU if
the hardware did exactly what the simple model says:

* a warp is 32 consecutive threads of a block; one global load or store instruction of a warp is
  one *request*; the request touches one 32-byte *sector* for every distinct aligned 32-byte
  segment its active lanes address (so 32 consecutive floats: 4 sectors; 32 floats in 32
  different rows: 32 sectors; 32 lanes reading the same float: 1 sector);
* shared memory has 32 banks of 4 bytes; a warp's shared access takes one *wavefront* per
  distinct word in its most-loaded bank (a broadcast of one word is free), and ncu's *bank
  conflicts* are the wavefronts beyond the first of each request;
* instructions are counted per warp, and a warp whose lanes are all inactive for a statement does
  not execute it (the compiler branches around it);
* theoretical occupancy on H100: 64 warps, 32 blocks, 65536 registers and 228 KiB of shared memory
  per SM, 1 KiB of shared memory reserved per block.

These are the figures the simulator's cost model, set to NVIDIA's parameters, should reproduce;
``measure.py`` compares them with what ncu reads. Where compiler choices decide a count (e.g.
vectorised shared loads, predication instead of branches, WMMA's internal layout), the count is
left out rather than guessed: the README says which.
"""

from __future__ import annotations

import variants as V

# ncu metric names (Hopper, Nsight Compute 2025)
LD_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
LD_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
ST_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
ST_SEC = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
SH_LD_INST = "smsp__sass_inst_executed_op_shared_ld.sum"
SH_ST_INST = "smsp__sass_inst_executed_op_shared_st.sum"
SH_LD_WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SH_ST_WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
# The same wavefronts as counted per SASS instruction (the Source page's figures): unlike the
# l1tex__ counters, they leave out cycles lost to arbitration with other L1 traffic.
SASS_SH_LD_WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SASS_SH_ST_WAVES = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SH_LD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SH_ST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"

H100_WARPS_PER_SM = 64
H100_BLOCKS_PER_SM = 32
H100_SMEM_PER_SM = 228 * 1024
H100_SMEM_RESERVED_PER_BLOCK = 1024


def theoretical_occupancy_pct(threads_per_block: int, smem_per_block: int) -> float:
    """Warps resident per SM over 64, from the block-count, warp and shared-memory limits.

    Registers are left out: every variant here uses at most 40 registers per thread, which allows
    at least 1536 threads per SM, more than any shared-memory limit below.
    """
    warps = -(-threads_per_block // 32)
    blocks = min(H100_BLOCKS_PER_SM, H100_WARPS_PER_SM // warps)
    if smem_per_block:
        blocks = min(blocks, H100_SMEM_PER_SM // (smem_per_block + H100_SMEM_RESERVED_PER_BLOCK))
    return 100.0 * blocks * warps / H100_WARPS_PER_SM


def _global(ld_req: int, ld_sec: int, st_req: int, st_sec: int) -> dict[str, float]:
    return {LD_REQ: ld_req, LD_SEC: ld_sec, ST_REQ: st_req, ST_SEC: st_sec}


def _shared(ld: int, st: int, ld_waves: int | None = None, st_waves: int | None = None) -> dict[str, float]:
    """Shared instructions and wavefronts; wavefronts default to one per instruction."""
    ld_waves = ld if ld_waves is None else ld_waves
    st_waves = st if st_waves is None else st_waves
    return {SH_LD_INST: ld, SH_ST_INST: st, SH_LD_WAVES: ld_waves, SH_ST_WAVES: st_waves,
            SASS_SH_LD_WAVES: ld_waves, SASS_SH_ST_WAVES: st_waves,
            SH_LD_CONFLICTS: ld_waves - ld, SH_ST_CONFLICTS: st_waves - st}


def _no_shared() -> dict[str, float]:
    return _shared(0, 0)


def expected(variant: V.Variant, params: dict[str, int]) -> dict[str, float]:
    """The counters of ``variant`` launched with ``params``, from first principles (see above)."""
    launch = variant.launch(params)
    warps = launch.threads // 32
    groups = launch.groups[0] * launch.groups[1] * launch.groups[2]
    name = variant.name
    out: dict[str, float] = {}
    if name == "copy_coalesced":
        out |= _global(warps, 4 * warps, warps, 4 * warps) | _no_shared()
    elif name == "copy_strided":
        # 32 lanes read 32 rows of a (stride n/32 floats >= 8 floats = one sector): 32 sectors.
        out |= _global(warps, 32 * warps, warps, 4 * warps) | _no_shared()
    elif name == "transpose_naive":
        # Reads along a row (4 sectors); writes down a column of out (32 sectors).
        out |= _global(warps, 4 * warps, warps, 32 * warps) | _no_shared()
    elif name == "transpose_tiled":
        # Row store tile[ty][tx]: 32 banks, 1 wavefront. Column load tile[tx][ty]: the 32 words
        # are 32 floats apart, all in bank ty: 32 wavefronts, 31 conflicts per request.
        out |= _global(warps, 4 * warps, warps, 4 * warps) | _shared(warps, warps, ld_waves=32 * warps)
    elif name == "transpose_padded":
        # Rows of 33 words: tile[tx][ty] is in bank (tx + ty) % 32, all different.
        out |= _global(warps, 4 * warps, warps, 4 * warps) | _shared(warps, warps)
    elif name in ("reduce_interleaved", "reduce_tree"):
        # Per block: 8 initial stores; each step with active lanes in a warp costs that warp two
        # loads and a store; thread 0 reads sh[0] at the end. Interleaved: steps s = 1..16 keep
        # all 8 warps busy, s = 32, 64, 128 keep 4, 2, 1 warps: 47 warp-steps. Tree: s = 128, 64,
        # 32 keep 4, 2, 1 warps, s = 16..1 keep warp 0 alone: 12 warp-steps. Neither pattern has
        # two lanes on one bank (interleaved: active lanes 2s words apart, s <= 16).
        steps = 47 if name == "reduce_interleaved" else 12
        out |= _global(warps, 4 * warps, groups, groups)
        out |= _shared(ld=groups * (2 * steps + 1), st=groups * (8 + steps))
    elif name == "reduce_simd":
        # Lane 0 of each of the 8 warps stores its sum; warp 0 loads the 8 partials (1 request).
        out |= _global(warps, 4 * warps, groups, groups) | _shared(ld=groups, st=8 * groups)
    elif name in ("branch_divergent", "branch_uniform"):
        out |= _global(warps, 4 * warps, warps, 4 * warps) | _no_shared()
    elif name.startswith("stream"):
        # Per thread V.STREAM_ELEMS elements of a, b and out, grid-strided: 4 sectors a request.
        e = V.STREAM_ELEMS
        out |= _global(2 * e * warps, 8 * e * warps, e * warps, 4 * e * warps)
        out |= _shared(warps, warps) if "tgmem" in name else _no_shared()
        smem = variant.cuda_shared_bytes
        out[THEORETICAL_OCCUPANCY] = theoretical_occupancy_pct(launch.threads_per_group, smem)
    elif name == "matmul_naive":
        # A warp is 2 rows x 16 columns of c. Per k: a[row*n+k] is 2 words (2 sectors); b[k*n+col]
        # is 16 consecutive words shared by both rows (64 bytes: 2 sectors).
        n = params["n"]
        out |= _global(2 * n * warps, 4 * n * warps, warps, 4 * warps) | _no_shared()
    elif name == "matmul_tiled":
        # Per 16-wide tile step and warp: 2 global loads of 2 x 64 bytes (4 sectors each), 2 shared
        # stores, and 32 shared loads of the unrolled k loop: as[ty][k] is 2 words 16 banks apart,
        # bs[k][tx] 16 consecutive words read by both rows: no conflicts. (A compiler that fuses
        # as[ty][k..k+3] into one 16-byte load changes the instruction count, not the bytes.)
        steps = params["n"] // 16
        out |= _global(2 * steps * warps, 8 * steps * warps, warps, 4 * warps)
        out |= _shared(ld=32 * steps * warps, st=2 * steps * warps)
    elif name in ("softmax_3pass", "softmax_fused"):
        # Per row (8 warps): the row is read 3 times (or once) and written once, each element of
        # a warp's access 32 consecutive floats. Two barrier trees of 256 values: 8 + 12 stores,
        # 24 loads, then every warp reads red[0] (broadcast: 1 wavefront).
        rows = params["rows"]
        per_thread = V.SOFTMAX_ROW // 256
        reads = 3 if name == "softmax_3pass" else 1
        ld = reads * per_thread * 8 * rows
        st = per_thread * 8 * rows
        out |= _global(ld, 4 * ld, st, 4 * st)
        out |= _shared(ld=2 * (24 + 8) * rows, st=2 * (8 + 12) * rows)
    elif name == "matmul_simdgroup":
        # WMMA's operand layout and load instructions are the compiler's: no first-principles
        # request count is comparable with Apple's simdgroup_load. Only c's stores are clear-cut.
        pass
    else:
        raise KeyError(f"no expectation written for variant {name!r}")
    if THEORETICAL_OCCUPANCY not in out and name != "matmul_simdgroup":
        out[THEORETICAL_OCCUPANCY] = theoretical_occupancy_pct(
            launch.threads_per_group, _static_smem(name))
    return {k: float(v) for k, v in out.items()}


def _static_smem(name: str) -> int:
    """Static shared memory of the CUDA kernel (bytes), as ptxas reports it for kernels.cu."""
    return {
        "transpose_tiled": 32 * 32 * 4, "transpose_padded": 32 * 33 * 4,
        "reduce_interleaved": 1024, "reduce_tree": 1024, "reduce_simd": 32,
        "matmul_tiled": 2 * 16 * 16 * 4, "softmax_3pass": 1024, "softmax_fused": 1024,
    }.get(name, 0)


#: Qualitative expectations that no exact count captures, for the README's comparison.
QUALITATIVE = {
    "branch_divergent": "about 16 active threads per warp instruction (half the lanes idle in each "
                        "loop); twice the uniform kernel's time (compute-bound)",
    "branch_uniform": "about 32 active threads per warp instruction",
    "reduce_interleaved": "fewer active threads per instruction than reduce_tree; slower",
    "copy_strided": "DRAM bytes close to copy_coalesced's: the 8 warps of a block read the same "
                    "32 sectors, so L1/L2 serve 7 of 8 sector requests; slower through L1 traffic",
    "softmax_3pass": "3x the global load requests of softmax_fused but about the same DRAM bytes: "
                     "a 4 KiB row stays in L1/L2 between passes",
    "stream_tg32": "50% theoretical occupancy (32 blocks of 1 warp per SM); a memory-bound stream "
                   "may still reach near-peak bandwidth",
    "stream_tgmem32k": "75% theoretical occupancy (6 blocks of 33 KiB per SM)",
}
