"""SFT data: multi-turn conversations in the drkernel-coldstart-8k schema, from parquet or JSON Lines.

A row holds a `messages` list of {role, content} (the key is data.messages_key; a JSON string holding the list is
accepted too, as some parquet exports store it). Other columns (uuid, entry_point, final_speedup, ...) are kept
but not needed. Parquet is read with pyarrow. Bad input is an errors.UserError naming the file, the row (1-based,
as a parquet viewer counts) and the field.

`SftData` tokenizes every conversation once (ids + assistant mask, chat.ChatRenderer), applies data.truncation,
and deals out batches: epoch e is a permutation of the examples drawn from (seed, e), cut into global batches of
train_batch_size, so where a run stands is (epoch, batch index) and a resumed run sees the same batches.
"""
import json
import os

import torch

from .errors import UserError


def read_rows(path):
    """Rows (dicts) of one parquet / JSONL / JSON file."""
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise UserError(f"{path}: reading parquet needs pyarrow, which this Python cannot import ({e}); setup.sh "
                            "installs it into build/train-pkgs, which kgym puts on the learner's path") from e
        try:
            return pq.read_table(path).to_pylist()
        except Exception as e:  # pyarrow's errors: not parquet, truncated, unsupported encoding
            raise UserError(f"{path}: not a parquet file pyarrow can read ({type(e).__name__}: {e})") from e
    rows = []
    with open(path, encoding="utf-8") as f:
        if path.endswith(".json"):
            data = json.load(f)
            if not isinstance(data, list):
                raise UserError(f"{path}: a .json data file must hold a list of rows")
            return data
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise UserError(f"{path} line {n}: not JSON ({e.msg})") from e
    return rows


def load_conversations(files, messages_key="messages"):
    """The conversations of every file, in order; each a list of {role, content}."""
    out = []
    for path in files:
        if not os.path.exists(path):
            raise UserError(f"data file {path} does not exist")
        for n, row in enumerate(read_rows(path), 1):
            where = f"{path} row {n}"
            if not isinstance(row, dict) or row.get(messages_key) is None:  # parquet: a missing cell is null
                raise UserError(f"{where}: no '{messages_key}' field (data.messages_key)")
            msgs = row[messages_key]
            if isinstance(msgs, str):
                try:
                    msgs = json.loads(msgs)
                except json.JSONDecodeError as e:
                    raise UserError(f"{where}: '{messages_key}' is a string but not JSON") from e
            if not isinstance(msgs, list) or not msgs:
                raise UserError(f"{where}: '{messages_key}' must be a non-empty list")
            conv = []
            for i, m in enumerate(msgs):
                if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in (
                        "system", "user", "assistant"):
                    raise UserError(f"{where}: {messages_key}[{i}] needs role system|user|assistant and a string "
                                     "content")
                conv.append({"role": m["role"], "content": m["content"]})
            if not any(m["role"] == "assistant" for m in conv):
                raise UserError(f"{where}: {messages_key} has no assistant message to learn from")
            out.append(conv)
    return out


class SftData:
    def __init__(self, conversations, renderer, max_length, truncation, batch_size, seed, shuffle=True):
        if truncation not in ("right", "left", "error"):
            raise UserError(f"data.truncation must be right, left or error, got {truncation!r}")
        self.examples = []
        self.truncated = 0
        self.dropped = 0
        for k, conv in enumerate(conversations):
            ids, mask = renderer.training_ids(conv)
            if len(ids) > max_length:
                if truncation == "error":
                    raise UserError(f"conversation {k + 1} has {len(ids)} tokens > data.max_length {max_length} "
                                    "(data.truncation: error)")
                self.truncated += 1
                ids, mask = (ids[:max_length], mask[:max_length]) if truncation == "right" else (
                    ids[-max_length:], mask[-max_length:])
            if not any(mask[1:]):  # the first token is never a target
                self.dropped += 1
                continue
            self.examples.append((ids, mask))
        if not self.examples:
            raise UserError("no training example left (all truncated away or without assistant tokens)")
        self.batch_size = min(int(batch_size), len(self.examples))
        self.seed = int(seed)
        self.shuffle = shuffle

    def steps_per_epoch(self):
        return len(self.examples) // self.batch_size

    def batch(self, epoch, index):
        """The example indices of global batch `index` of `epoch` (drop-last)."""
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed * 1000003 + epoch)
            order = torch.randperm(len(self.examples), generator=gen).tolist()
        else:
            order = list(range(len(self.examples)))
        return order[index * self.batch_size:(index + 1) * self.batch_size]

    def tokens(self):
        return sum(len(ids) for ids, _ in self.examples)
