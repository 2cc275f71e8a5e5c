import torch
import kgym_no_such_module_for_tests  # noqa: F401


class ModelNew(torch.nn.Module):
    pass
