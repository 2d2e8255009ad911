from metal_puzzles import DecodeStepProblem

# The tiny model's forward pass, token by token, on your kernels: RMSNorm (V.1), the rotation in
# halves (V.2b), the 4-bit products (V.3), attention over the cache (V.4), the next token (V.5).
decode_step_problem = DecodeStepProblem(
    rms_norm=rms_norm_test,
    rope=rope_test,
    quantized_matvec=quantized_matvec_test,
    decode_attention=decode_attention_test,
    argmax=argmax_test,
)
decode_step_problem.show()
