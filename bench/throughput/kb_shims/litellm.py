"""Stand-in for the `litellm` package, used only where it is not installed: KernelBench's utils module imports
`completion` at import time for its generation scripts; evaluation never calls it."""


def completion(*args, **kwargs):
    raise RuntimeError("the litellm package is not installed (stand-in for KernelBench's imports)")
