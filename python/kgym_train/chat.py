"""Chat messages <-> token ids, one rendering for serving and for training.

Two renderers:
  chatml    kgym's own ChatML (Qwen's format without the thinking blocks), built segment by segment:
              <|im_start|>{role}\\n{content}<|im_end|>\\n  per message, then <|im_start|>assistant\\n to generate.
            Each segment is encoded on its own, so a prompt's ids never depend on what follows it.
  template  the tokenizer's own chat template (tokenizer.apply_chat_template), for pretrained checkpoints such as
            DR.Kernel-8B. Assistant masks come from prefixes: the ids of messages[:i] with the generation prompt
            must be a prefix of the ids of messages[:i+1]; a template that breaks this raises (it would train on
            tokens the model never sees at inference).

Training ids mark every assistant message's content and its closing <|im_end|> (the model must learn to stop);
the role headers, user turns and the newline after <|im_end|> are masked out.
"""
from .errors import UserError
from .tokenizer import IM_END, IM_START


class ChatRenderer:
    def __init__(self, tokenizer, mode="chatml"):
        if mode not in ("chatml", "template"):
            raise UserError(f"model.chat_template must be 'chatml' or 'template', got {mode!r}")
        if mode == "template" and not tokenizer.chat_template:
            raise UserError("model.chat_template=template needs a tokenizer with a chat template")
        self.tok = tokenizer
        self.mode = mode
        if mode == "chatml":
            self.im_start = tokenizer.token_id(IM_START)
            self.im_end = tokenizer.token_id(IM_END)
            if self.im_start is None or self.im_end is None:
                raise UserError(f"the tokenizer has no {IM_START} / {IM_END} tokens needed by model.chat_template=chatml")
            self.newline = tokenizer.encode("\n")
        self._headers = {}

    def _header(self, role):
        if role not in self._headers:
            self._headers[role] = [self.im_start] + self.tok.encode(role + "\n")
        return self._headers[role]

    def _segment(self, message):
        return self._header(message["role"]), self.tok.encode(message["content"]), [self.im_end] + self.newline

    def prompt_ids(self, messages):
        """Ids of `messages` followed by the assistant's generation prompt."""
        _check(messages)
        if self.mode == "template":
            return list(self.tok.backend.apply_chat_template(messages, add_generation_prompt=True, tokenize=True))
        ids = []
        for m in messages:
            head, body, tail = self._segment(m)
            ids += head + body + tail
        return ids + self._header("assistant")

    def training_ids(self, messages):
        """(ids, mask) of a whole conversation; mask[j] = 1 on assistant tokens the loss learns."""
        _check(messages)
        if self.mode == "template":
            return self._template_training_ids(messages)
        ids, mask = [], []
        for m in messages:
            head, body, tail = self._segment(m)
            learn = 1 if m["role"] == "assistant" else 0
            ids += head + body + tail
            mask += [0] * len(head) + [learn] * (len(body) + 1) + [0] * (len(tail) - 1)
        return ids, mask

    def _template_training_ids(self, messages):
        apply = self.tok.backend.apply_chat_template
        full = list(apply(messages, tokenize=True))
        mask = [0] * len(full)
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            prefix = list(apply(messages[:i], add_generation_prompt=True, tokenize=True))
            upto = list(apply(messages[:i + 1], tokenize=True))
            if full[:len(upto)] != upto or upto[:len(prefix)] != prefix:
                raise ValueError(f"the tokenizer's chat template is not prefix-stable at message {i}: "
                                 "use chat.template=chatml")
            end = len(upto)
            while end > len(prefix) and self.tok.decode([upto[end - 1]], skip_special_tokens=False).strip() == "":
                end -= 1  # trailing newlines after the end-of-turn token are not learned
            for j in range(len(prefix), end):
                mask[j] = 1
        return full, mask


def _check(messages):
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] must be an object with string 'role' and 'content'")
        if m["role"] not in ("system", "user", "assistant"):
            raise ValueError(f"messages[{i}].role must be system, user or assistant, got {m['role']!r}")
