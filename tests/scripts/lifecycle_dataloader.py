"""A DataLoader with 2 worker processes whose __getitem__ runs torch ops (mm of 4x4 matrices).
Workers end through os._exit. Prints {"parent": pid, "workers": [pids]}."""

import json
import os

import lifecycle_common  # noqa: F401  (sys.path)
import torch
from torch.utils.data import DataLoader, Dataset

import pyprof


class MatmulDataset(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        product = torch.randn(4, 4) @ torch.randn(4, 4)
        return torch.tensor(os.getpid()), product


def main():
    assert pyprof.init()
    torch.tril(torch.ones(6, 43))
    workers = set()
    loader = DataLoader(MatmulDataset(), batch_size=2, num_workers=2,
                        multiprocessing_context="fork")
    for pids, _ in loader:
        workers.update(int(p) for p in pids)
    del loader
    torch.cumprod(torch.ones(11, 43), dim=0)
    print(json.dumps({"parent": os.getpid(), "workers": sorted(workers)}), flush=True)


if __name__ == "__main__":
    main()
