from metal_puzzles import DecodeStepProblem

# The tiny model prefills a prompt, then decodes and samples, on your kernels.
decode_step_problem = DecodeStepProblem(
    rms_norm=rms_norm_test,                     # V.1: every norm
    rope=rope_test,                             # V.2b: the rotation in halves
    quantized_matvec=quantized_matvec_test,     # V.3: the 4-bit products, a token at a time
    kv_cache_append=kv_cache_append_test,       # the KV-cache append
    prefill_attention=prefill_attention_test,   # the prompt's causal attention
    gated_mlp=gated_mlp_test,                   # the gated MLP's gate and up products
    decode_attention=decode_attention_test,     # V.4: a new token's attention
    sampling=sampling_test,                     # top-p sampling
)
decode_step_problem.show()
