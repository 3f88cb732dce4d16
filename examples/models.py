"""Small real models for the examples, tests and benchmarks (all run on the CPU in seconds)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    """LeNet-5 style CNN on 1x28x28 inputs."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, kernel_size=5, padding=2)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class MLP(nn.Module):
    def __init__(self, width: int = 64, depth: int = 3, num_classes: int = 10):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        return self.head(self.body(x))


class SelfAttention(nn.Module):
    """Multi-head self-attention that calls scaled_dot_product_attention explicitly."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


class TransformerEncoderLayer(nn.Module):
    """Pre-norm Transformer encoder layer (attention + MLP)."""

    def __init__(self, dim: int = 64, heads: int = 4, hidden: int = 128, num_classes: int = 10):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return self.head(x.mean(dim=1))


class LSTMClassifier(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, hidden: int = 48, num_classes: int = 10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


class ResNetBlock(nn.Module):
    """A ResNet basic block (two 3x3 conv + batch norm, identity shortcut) and a classifier."""

    def __init__(self, channels: int = 16, num_classes: int = 10):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.conv_a = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn_a = nn.BatchNorm2d(channels)
        self.conv_b = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn_b = nn.BatchNorm2d(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x):
        x = self.stem(x)
        y = F.relu(self.bn_a(self.conv_a(x)))
        y = self.bn_b(self.conv_b(y))
        x = F.relu(x + y)
        return self.fc(torch.flatten(self.pool(x), 1))


def make(name: str, batch: int = 8, size: str = "small"):
    """Returns (model, example input, target) for one of MODELS, on the CPU.

    size "small" (the default) is the CPU-sized model; "large" (lenet, resnet_block and
    transformer only, see LARGE) a GPU-sized one.
    """
    if size == "large":
        return _make_large(name, batch)
    if size != "small":
        raise ValueError(f"unknown size {size!r} (small or large)")
    g = torch.Generator().manual_seed(0)
    target = torch.randint(0, 10, (batch,), generator=g)
    if name == "lenet":
        return LeNet(), torch.randn(batch, 1, 28, 28, generator=g), target
    if name == "mlp":
        return MLP(), torch.randn(batch, 64, generator=g), target
    if name == "transformer":
        return TransformerEncoderLayer(), torch.randn(batch, 16, 64, generator=g), target
    if name == "lstm":
        return LSTMClassifier(), torch.randint(0, 100, (batch, 12), generator=g), target
    if name == "resnet_block":
        return ResNetBlock(), torch.randn(batch, 3, 16, 16, generator=g), target
    raise ValueError(f"unknown model {name!r}")


MODELS = ("lenet", "mlp", "transformer", "lstm", "resnet_block")


def train_step(model, optimizer, x, target):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    optimizer.step()
    return loss


# GPU-sized versions (size="large"): model arguments, input shape without the batch, and the
# batch used when none is given. Rough cost per fp32 training step at the default batch on an
# H100 (not measured yet): resnet_block ~4 TFLOP of 3x3 convolutions plus ~50 GB of memory traffic
# (batch norm, ReLU, the residual add); transformer ~1.3 TFLOP of fp32 matmuls (TF32 off, torch's
# default for matmuls). lenet's layer sizes are fixed by its 28x28 input, so only its batch grows.
LARGE = {
    "lenet": (dict(), (1, 28, 28), 8192),
    "resnet_block": (dict(channels=128), (3, 64, 64), 512),
    "transformer": (dict(dim=1024, heads=16, hidden=4096), (512, 1024), 32),
}
LARGE_CLASSES = {"lenet": LeNet, "resnet_block": ResNetBlock,
                 "transformer": TransformerEncoderLayer}


def large_batch(name: str) -> int:
    """The batch size="large" uses by default."""
    if name not in LARGE:
        raise ValueError(f"size large is defined for {', '.join(LARGE)}, not {name!r}")
    return LARGE[name][2]


def _make_large(name: str, batch: int):
    if name not in LARGE:
        raise ValueError(f"size large is defined for {', '.join(LARGE)}, not {name!r}")
    kwargs, shape, _ = LARGE[name]
    g = torch.Generator().manual_seed(0)
    target = torch.randint(0, 10, (batch,), generator=g)
    return LARGE_CLASSES[name](**kwargs), torch.randn(batch, *shape, generator=g), target
