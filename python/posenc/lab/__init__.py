"""The length-extrapolation lab in PyTorch: one tiny byte-level model per positional encoding, trained
at length L with posenc's attention op, evaluated in bits per byte at L, 2L, ..., 16L; one process or
N processes under torch.distributed (gloo, DistributedDataParallel) with the same global batch.

    python3 -m posenc.lab                       # the default run, one process
    python3 -m posenc.lab --nproc 2             # two processes on this machine (loopback)
    torchrun --nproc_per_node 8 --redirects 1 --tee 1 -m posenc.lab   # the same code under torchrun
"""

from .run import LabOptions, read_corpus, run_lab, table  # noqa: F401
