"""kgym_harness: the Python side of an evaluation, run inside sandboxed workers forked from a warm zygote.

Nothing here decides a verdict. Workers load code, run it, and hand raw tensor bytes and host timestamps to the
C++ supervisor, which compares, times and classifies (see src/eval/).
"""
