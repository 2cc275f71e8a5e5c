"""Stand-in for the `openai` package, used only where it is not installed: KernelBench's utils module imports
`OpenAI` at import time for its generation scripts; evaluation never calls it."""


class OpenAI:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("the openai package is not installed (stand-in for KernelBench's imports)")
