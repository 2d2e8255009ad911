from metal_puzzles import GradProblem
from metal_puzzles.puzzles.composition.launchers import run_mvmr, run_mvmr_backward_b, run_vvor


@mx.custom_function
def mvmr_op(a, a_idx, b, b_idx, o_idx, n):
    # The forward pass: your kernel from II.7b.
    return run_mvmr(mvmr_fast_test, a, a_idx, b, b_idx, o_idx, n)


@mvmr_op.vjp
def mvmr_op_vjp(primals, cotangent, output):
    a, a_idx, b, b_idx, o_idx, n = primals
    # da: pair t adds the outer product of b's row and the cotangent's row into da[a_idx[t]].
    da = run_vvor(vvor_test, b, b_idx, cotangent, o_idx, a_idx, a.shape[0])
    # db: an MVMR with a transposed, o_idx and b_idx trading places.
    db = run_mvmr_backward_b(mvmr_backward_b_test, a, a_idx, cotangent, o_idx, b_idx, b.shape[0])
    return da, mx.zeros_like(a_idx), db, mx.zeros_like(b_idx), mx.zeros_like(o_idx), None


problem = GradProblem("MVMR Autodiff", mvmr_op)
problem.show()
