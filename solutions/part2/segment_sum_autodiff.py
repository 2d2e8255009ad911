from metal_puzzles import GradProblem
from metal_puzzles.puzzles.composition.launchers import run_segment_sum, run_segment_sum_backward


def exclusive_scan(lengths):
    return mx.cumsum(lengths) - lengths


@mx.custom_function
def segment_sum_op(x, lengths):
    # The forward pass: your kernel from II.4.
    return run_segment_sum(segment_sum_test, x, lengths, exclusive_scan(lengths))


@segment_sum_op.vjp
def segment_sum_op_vjp(primals, cotangent, output):
    x, lengths = primals
    # Every row of x went into exactly one segment's sum: copy that segment's cotangent back.
    dx = run_segment_sum_backward(segment_sum_backward_test, cotangent, lengths, exclusive_scan(lengths), x.shape[0])
    return dx, mx.zeros_like(lengths)


problem = GradProblem("Segment Sum Autodiff", segment_sum_op)
problem.show()
