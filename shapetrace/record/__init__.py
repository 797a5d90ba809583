"""Stage 1, recording: every tensor op of a block, as it runs.

``tracer``    ``Recorder``: a ``TorchFunctionMode`` plus global module hooks append one
              ``OpRecord`` per op (its name, operands' shapes, the user's line, the module path)
              to a ``TraceData``; the hot path of shapetrace
``probes``    value probes that run while an op is recorded (values exist only then): weight
              sums, the first non-finite value, one head of attention weights for the heatmaps
``kinds``     what the hot path knows of each torch function: its op name and flags
``layers``    module calls' outputs marked with the call (the user's line, the caller), and the
              plain layers of the model never called nor read
``spans``     which records an optimizer step made (shown as one line)
``steps``     a training loop's steps: repeats counted, not kept, and run unrecorded; the
              run's NaN and Inf watched per step
``warning_route``  warnings shown while recording, noted on the op that raised them
``tensors``   the tensors inside what code passes and returns; odd tensors' metadata; the
              shapes, arguments and sites every trace's records share
``fake``      ``--fake``: build and run on fake tensors, shapes only
``fastpath``  the note that PyTorch's fused fast path was off under the trace

Knows nothing of naming axes, rules or reports: it records, and later stages read the records.
"""
