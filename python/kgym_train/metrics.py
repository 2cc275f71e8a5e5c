"""The learner's metrics: one JSON object per step appended to <out_dir>/metrics.jsonl (flushed and fsync'ed, so a
crash loses at most the line being written) and, where the tensorboard package is importable, the same scalars
in a TensorBoard log under <out_dir>/tensorboard. Keys are flat and namespaced with '/' ("train/loss").
For `kgym train` the trainer (C++) writes metrics.jsonl itself and sends each step here only for TensorBoard
(MetricsLog(out_dir, jsonl=False)).
"""
import math
import os
import time

from .protocol import dumps


class MetricsLog:
    def __init__(self, out_dir, jsonl=True, purge_step=None):
        """`purge_step`: a resumed run's first step; TensorBoard drops the events logged from it on before (those
        steps are done again), so no step is shown twice."""
        os.makedirs(out_dir, exist_ok=True)
        self.file = open(os.path.join(out_dir, "metrics.jsonl"), "a") if jsonl else None
        self.tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter
            self.tb = SummaryWriter(os.path.join(out_dir, "tensorboard"), purge_step=purge_step)
        except Exception:  # tensorboard is not installed: the JSONL file is the record
            self.tb = None

    def write(self, step, metrics):
        rec = {"step": int(step), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        rec.update({k: v for k, v in metrics.items() if isinstance(v, (int, float))})
        if self.file is not None:
            self.file.write(dumps(rec) + "\n")
            self.file.flush()
            os.fsync(self.file.fileno())
        self.scalars(step, metrics)
        return rec

    def scalars(self, step, metrics):
        if self.tb is None:
            return
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                self.tb.add_scalar(k, v, int(step))
        self.tb.flush()

    def close(self):
        if self.file is not None:
            self.file.close()
        if self.tb is not None:
            self.tb.close()
