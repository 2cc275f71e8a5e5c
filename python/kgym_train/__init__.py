"""kgym's learner: the Python half of `kgym sft` and `kgym train` (the model, its tokenizer, the gradient step).

kgym (C++) owns rollouts, gym rewards, advantages, rejection sampling and skills; this package owns the weights.
Entry point: python -m kgym_train (serve | sft | tokenizer). Engines: PyTorch and Hugging Face transformers
(a pure-torch tiny model stands in where transformers is absent, e.g. Debian's torch 1.13 on CI).
"""
