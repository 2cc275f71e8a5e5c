"""kgym's learner: the Python half of `kgym sft` and `kgym train` (the model, its tokenizer, the gradient step).

kgym (C++) owns rollouts, gym rewards, advantages, rejection sampling and skills; this package owns the weights.
Entry point: python -m kgym_train (serve | sft | tokenizer). Engines: PyTorch and Hugging Face transformers
(a pure-torch tiny model stands in where transformers is absent, e.g. Debian's torch 1.13 on CI).
"""

import os as _os
import sys as _sys

# Packages kgym's setup installed for this learner (tokenizers, safetensors, pyarrow on CI's Python) come last on
# the path: what the interpreter has itself wins.
for _p in filter(None, _os.environ.get("KGYM_TRAIN_PKGS", "").split(_os.pathsep)):
    if _p not in _sys.path:
        _sys.path.append(_p)
