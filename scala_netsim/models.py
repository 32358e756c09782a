"""Models with named split points: a client part and a server part (SCALA-NOTES section 6)."""

import torch
from torch import nn

# AlexNet-14's split points: how many of its 14 layers run on the client.
ALEXNET14_SPLITS = {"S1": 3, "S2": 6, "S3": 8, "S4": 10, "S5": 13}
ARCHS = ("alexnet14",)


class MaxPool2dToNCHW(nn.MaxPool2d):
    """MaxPool2d whose output is in the standard (NCHW-contiguous) memory layout."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x).contiguous()


def alexnet14_layers(in_channels: int, num_classes: int,
                     fast_layout: bool = True) -> list[nn.Module]:
    """The 14 layers of AlexNet for 32x32 inputs (13 conv-block layers and the classifier).

    `fast_layout` changes memory layout only, never the arithmetic: layer 6 hands back a
    standard NCHW tensor (see `use_fast_layout_`).
    """
    pool6 = MaxPool2dToNCHW if fast_layout else nn.MaxPool2d
    return [
        nn.Conv2d(in_channels, 64, kernel_size=11, stride=4, padding=5),       # 1
        nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=2),                                      # 3  <- S1
        nn.Conv2d(64, 192, kernel_size=5, padding=2),
        nn.ReLU(inplace=True),
        pool6(kernel_size=2),                                             # 6  <- S2
        nn.Conv2d(192, 384, kernel_size=3, padding=1),
        nn.ReLU(inplace=True),                                            # 8  <- S3
        nn.Conv2d(384, 256, kernel_size=3, padding=1),
        nn.ReLU(inplace=True),                                            # 10 <- S4
        nn.Conv2d(256, 256, kernel_size=3, padding=1),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=2),                                      # 13 <- S5
        nn.Sequential(nn.Flatten(), nn.Linear(256, num_classes)),         # 14
    ]


def build_split_model(arch: str, split: str, in_channels: int, num_classes: int,
                      generator: torch.Generator,
                      fast_layout: bool = True) -> tuple[nn.Sequential, nn.Sequential]:
    """(client_part, server_part) of `arch` cut at `split`, initialised from `generator`."""
    if arch != "alexnet14":
        raise ValueError(f"model.arch: unknown {arch!r}; allowed: {list(ARCHS)}")
    if split not in ALEXNET14_SPLITS:
        raise ValueError(f"model.split: unknown {split!r}; allowed: {list(ALEXNET14_SPLITS)}")
    layers = alexnet14_layers(in_channels, num_classes, fast_layout)
    _init_from(layers, generator)
    if fast_layout:
        use_fast_layout_(layers)
    cut = ALEXNET14_SPLITS[split]
    return nn.Sequential(*layers[:cut]), nn.Sequential(*layers[cut:])


def use_fast_layout_(layers: list[nn.Module]) -> None:
    """Store the weights of the two conv blocks on large feature maps (layers 1-6) channels-
    last, so oneDNN computes those convolutions and max-pools in that layout: markedly faster
    on the CPU, most of all at the small per-client batches of split learning. Layer 6 turns
    the result back to NCHW, the faster layout for the 2x2 layers after it. Values unchanged.
    """
    for layer in layers[:6]:
        if isinstance(layer, nn.Conv2d):
            layer.weight.data = layer.weight.data.to(memory_format=torch.channels_last)


def _init_from(layers: list[nn.Module], generator: torch.Generator) -> None:
    """PyTorch's default (Kaiming-uniform) initialisation, drawn from an explicit generator."""
    for module in nn.Sequential(*layers).modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            fan_in = module.weight[0].numel()
            bound = 1.0 / fan_in**0.5
            with torch.no_grad():
                # kaiming_uniform_(a=sqrt(5)) as in nn.Conv2d.reset_parameters
                module.weight.uniform_(-bound, bound, generator=generator)
                module.bias.uniform_(-bound, bound, generator=generator)


@torch.no_grad()
def init_linear_(linear: nn.Linear, generator: torch.Generator) -> nn.Linear:
    """nn.Linear's default initialisation (uniform in +-1/sqrt(fan_in)), drawn from an
    explicit generator instead of torch's global one (whose seed differs from process to
    process)."""
    bound = 1.0 / linear.in_features**0.5
    linear.weight.uniform_(-bound, bound, generator=generator)
    linear.bias.uniform_(-bound, bound, generator=generator)
    return linear


def state_bytes(module: nn.Module) -> int:
    """Bytes of a module's parameters and buffers as sent over the air."""
    return sum(t.numel() * t.element_size() for t in module.state_dict().values())


def features_and_head(client_part: nn.Sequential,
                      server_part: nn.Sequential) -> tuple[nn.Sequential, nn.Linear]:
    """(feature extractor, final linear classifier) sharing the split model's parameters:
    the extractor maps an image to the penultimate features (AlexNet-14: 256 per sample)."""
    *server_layers, classifier = server_part
    flatten, linear = classifier
    return nn.Sequential(*client_part, *server_layers, flatten), linear
