import _thread
import queue

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The work runs on a persistent worker thread started with the low-level _thread module (invisible to
    threading.enumerate()). Here forward still waits for each job, so the output is right; the point is that the
    worker thread stays alive after forward returns, which is what a deferral attack needs."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.jobs = queue.Queue()
        _thread.start_new_thread(self._worker, ())

    def _worker(self):
        while True:
            x, box = self.jobs.get()
            with torch.no_grad():
                box.put(torch.relu(self.lin(x)))

    def forward(self, x):
        box = queue.Queue()
        self.jobs.put((x, box))
        return box.get()
