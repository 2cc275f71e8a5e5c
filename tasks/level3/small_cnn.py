"""Small CNN: three (3x3 conv -> ReLU -> 2x2 max-pool) stages, flatten, linear classifier.

Input (batch, 3, H, W); output (batch, classes) logits."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
BATCH, HEIGHT, WIDTH = {"small": (2, 16, 16), "medium": (16, 128, 128), "full": (256, 128, 128)}[SIZE]
CHANNELS = (3, 32, 64, 128)
NUM_CLASSES = 10


class Model(nn.Module):
    def __init__(self, height, width, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(CHANNELS[0], CHANNELS[1], 3, padding=1)
        self.conv2 = nn.Conv2d(CHANNELS[1], CHANNELS[2], 3, padding=1)
        self.conv3 = nn.Conv2d(CHANNELS[2], CHANNELS[3], 3, padding=1)
        self.fc = nn.Linear(CHANNELS[3] * (height // 8) * (width // 8), num_classes)

    def forward(self, x):
        pool = torch.nn.functional.max_pool2d
        x = pool(torch.relu(self.conv1(x)), 2)
        x = pool(torch.relu(self.conv2(x)), 2)
        x = pool(torch.relu(self.conv3(x)), 2)
        return self.fc(torch.flatten(x, 1))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS[0], HEIGHT, WIDTH)]


def get_init_inputs():
    return [HEIGHT, WIDTH, NUM_CLASSES]
