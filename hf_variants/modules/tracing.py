"""Whether the forward is being traced by torch.compile / torch.export (and so the ONNX exporter).

Eager forwards read a few tensor values in Python: input checks (``int(ids.max())``), and layout
shortcuts (no bias when nothing is masked, the packed layout when enough is padding). Under a
tracer each such read is a graph break (torch.compile) or an error (``torch.export``,
``fullgraph=True``). While tracing, the padded path takes the branch that is right for every
input instead (build the padding bias, multiply by the keep-mask, compute every position), which
gives the eager outputs, and the value checks of the inputs are left to eager calls (shapes and
dtypes are still checked: they are static). The packed (padding-free) layout is data-dependent by
nature (its token count is the batch's real-token count): see docs/ecosystem.md, "torch.compile".
"""

from __future__ import annotations

import torch

# True inside torch.compile / torch.export tracing (dynamo), False in eager calls: torch's own
# predicate under the name this package reads it by (an alias, not a wrapper, so an eager forward
# enters no function of this file and dynamo sees the call it special-cases).
is_tracing = torch.compiler.is_compiling
