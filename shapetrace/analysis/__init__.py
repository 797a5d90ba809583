"""Stage 3, analysis: what the rules share, computed once per trace.

``facts``  ``analyse(trace) -> Analysis``: provenance run once, then on first use the records by
           op, the dataflow graph, the live and dead values, the attentions found in it, each
           reshape's reading and the lineage of every tensor (constant? batched?)
``graph``  the dataflow graph: who consumes each tensor, where an axis goes through ops, and the
           attentions (a softmax, the matmuls that contract its weights, the product that made
           its scores)
``liveness`` which values reach an output, a kept tensor or a write, and which are dead:
           computed and never used
``masks``  what a mask argument means, read from how forward uses it (``masked_fill(mask == 0)``:
           True = keep; ``masked_fill(mask)``: True = masked out; SDPA's boolean ``attn_mask``;
           added to the scores): the one reading the driver and the behaviour checks share

Every rule takes one ``Analysis``; none recomputes what another already found.
"""
