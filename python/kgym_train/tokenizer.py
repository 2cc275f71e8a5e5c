"""Tokenizers for the learner: a pretrained one from a model folder, or one trained here on kgym's own corpus.

`Tokenizer` wraps either a transformers tokenizer (AutoTokenizer, when transformers is importable and the folder
has its files) or a bare `tokenizers.Tokenizer` (tokenizer.json), behind one small interface: encode a text
without adding special tokens, decode, look up a special token, save.

`train_tokenizer` builds a byte-level BPE (the `tokenizers` library's BpeTrainer, as GPT-2/Qwen use) on the text
files under the given paths, with Qwen's ChatML special tokens, deterministically (same files, same vocabulary).
"""
import json
import os

from .errors import UserError

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"
SPECIAL_TOKENS = [END_OF_TEXT, IM_START, IM_END]

CORPUS_SUFFIXES = (".py", ".txt", ".md", ".json", ".yaml")


def _try_transformers():
    try:
        import transformers  # noqa: F401
        return transformers
    except Exception:  # missing, or too new for this torch
        return None


class Tokenizer:
    """encode/decode over token ids; `backend` is a transformers tokenizer or a tokenizers.Tokenizer."""

    def __init__(self, backend, source=""):
        self.backend = backend
        self.source = source
        self.is_hf = not _is_bare(backend)
        self.chat_template = getattr(backend, "chat_template", None) if self.is_hf else None

    def encode(self, text):
        if not text:
            return []
        if self.is_hf:
            return list(self.backend.encode(text, add_special_tokens=False))
        return list(self.backend.encode(text, add_special_tokens=False).ids)

    def decode(self, ids, skip_special_tokens=True):
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_id(self, token):
        """The id of a single (special) token, or None when the vocabulary has no such token."""
        tid = self.backend.convert_tokens_to_ids(token) if self.is_hf else self.backend.token_to_id(token)
        if tid is None:
            return None
        if self.is_hf and tid == getattr(self.backend, "unk_token_id", None) and token != self.backend.unk_token:
            return None
        return int(tid)

    def id_to_token(self, tid):
        return self.backend.convert_ids_to_tokens(int(tid)) if self.is_hf else self.backend.id_to_token(int(tid))

    def __len__(self):
        return len(self.backend) if self.is_hf else self.backend.get_vocab_size(with_added_tokens=True)

    def stop_ids(self):
        """Ids that end a generated turn: <|im_end|> and <|endoftext|> where present, else the eos token."""
        ids = [t for t in (self.token_id(IM_END), self.token_id(END_OF_TEXT)) if t is not None]
        if not ids and self.is_hf and self.backend.eos_token_id is not None:
            ids = [int(self.backend.eos_token_id)]
        return ids

    def pad_id(self):
        if self.is_hf and self.backend.pad_token_id is not None:
            return int(self.backend.pad_token_id)
        tid = self.token_id(END_OF_TEXT)
        return 0 if tid is None else tid

    def save(self, out_dir):
        os.makedirs(out_dir, exist_ok=True)
        if self.is_hf:
            self.backend.save_pretrained(out_dir)
        else:
            self.backend.save(os.path.join(out_dir, "tokenizer.json"))
            with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
                json.dump(_tokenizer_config(), f, indent=2)


def _is_bare(backend):
    try:
        import tokenizers
        return isinstance(backend, tokenizers.Tokenizer)
    except ImportError:
        return False


def _tokenizer_config():
    # Enough for transformers' AutoTokenizer to load tokenizer.json as a fast tokenizer.
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": IM_END,
            "pad_token": END_OF_TEXT, "unk_token": None, "model_max_length": 1 << 20,
            "additional_special_tokens": [IM_START]}


def corpus_files(paths):
    """Every text file under `paths` (files or folders), sorted, so training is deterministic."""
    out = []
    for p in paths:
        if os.path.isfile(p):
            out.append(p)
            continue
        if not os.path.isdir(p):
            raise UserError(f"tokenizer.corpus: {p} does not exist (paths are relative to the working directory)")
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(CORPUS_SUFFIXES))
    return sorted(set(out))


def train_tokenizer(paths, vocab_size, out_dir=None, extra_texts=()):
    """A byte-level BPE of `vocab_size` ids (special tokens included) trained on the files under `paths`."""
    from tokenizers import Tokenizer as BareTokenizer, decoders, models, pre_tokenizers, trainers

    texts = []
    for path in corpus_files(paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
    texts.extend(extra_texts)
    if not texts:
        raise UserError("tokenizer.corpus holds no text file")
    tok = BareTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    wrapped = _wrap(tok, out_dir or "trained")
    if out_dir:
        wrapped.save(out_dir)
    return wrapped


def _wrap(bare, source):
    transformers = _try_transformers()
    if transformers is not None:
        fast = transformers.PreTrainedTokenizerFast(tokenizer_object=bare, eos_token=IM_END, pad_token=END_OF_TEXT,
                                                    additional_special_tokens=[IM_START])
        return Tokenizer(fast, source)
    return Tokenizer(bare, source)


def load_tokenizer(path):
    """The tokenizer stored in folder `path` (AutoTokenizer when transformers is there, else tokenizer.json)."""
    transformers = _try_transformers()
    if transformers is not None:
        return Tokenizer(transformers.AutoTokenizer.from_pretrained(path), path)
    from tokenizers import Tokenizer as BareTokenizer
    file = os.path.join(path, "tokenizer.json")
    if not os.path.exists(file):
        raise UserError(f"{path} has no tokenizer.json (and transformers is not importable here)")
    return Tokenizer(BareTokenizer.from_file(file), path)
