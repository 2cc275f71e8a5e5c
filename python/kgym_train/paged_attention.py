"""One decode step's attention over a paged KV cache (interim: the torch reference only; see the kernel branch).

  q (B, H, D); k_pages/v_pages (num_pages, P, Hkv, D); block_table (rows >= B, cols) int32; used (B,) int32 keys
  per row; `pages` block-table columns considered. Row b's position t lives at physical page
  block_table[b, t // P], offset t % P. Query head h uses key/value head h // (H // Hkv). Returns (B, H, D).
"""
import torch


def reference(q, k_pages, v_pages, block_table, used, pages, scale):
    b, h, d = q.shape
    p, hkv = k_pages.shape[1], k_pages.shape[2]
    g = h // hkv
    idx = block_table[:b, :pages].long()
    k = k_pages[idx].reshape(b, pages * p, hkv, d).transpose(1, 2).float()  # (B, Hkv, L, D)
    v = v_pages[idx].reshape(b, pages * p, hkv, d).transpose(1, 2).float()
    qg = q.float().view(b, hkv, g, d)
    att = (qg @ k.transpose(-1, -2)) * scale  # (B, Hkv, g, L)
    mask = torch.arange(pages * p, device=q.device)[None, :] < used.long()[:, None]
    att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
    return (att @ v).reshape(b, h, d).to(q.dtype)


class PagedDecode:
    def __init__(self, heads, kv_heads, head_dim, page_size, dtype, device, scale):
        self.scale = scale
        self.backend = "reference"

    def __call__(self, q, k_pages, v_pages, block_table, used, pages):
        return reference(q, k_pages, v_pages, block_table, used, pages, self.scale)
