"""Models with named split points: a client part and a server part (SCALA-NOTES section 6)."""

import torch
from torch import nn

from scala_netsim.core.catalog import (
    ARCHS,
    NATIVE_SIZE_ARCHS,
    SPLITS,
    VGG11_CONFIG,
)


def input_size(arch: str, dataset_image_size: int) -> int:
    """The image side `arch` is fed: the dataset's own, or 32 (Fashion-MNIST padded)."""
    return dataset_image_size if arch in NATIVE_SIZE_ARCHS else 32


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


def alexnet_layers(in_channels: int, num_classes: int, image_size: int,
                   fast_layout: bool = True) -> list[nn.Module]:
    """The SCALA authors' AlexNet (their public code; 3.87 M parameters for 1 x 28 x 28):
    two 3x3 convolution blocks (conv, 2x2 max-pool, ReLU) to 32 and 64 channels on the
    client at the default split, then three 3x3 convolutions (128, 256, 256 channels, no ReLU
    between them), a 3x3 stride-2 max-pool, a ReLU and three linear layers (1024, 512,
    classes; no ReLU between them either). No BatchNorm, no dropout. 14 modules: the papers'
    "first 6 layers on the client, last 8 on the server". `image_size` is 28 (Fashion-MNIST)
    or 32 (CIFAR, CINIC); both leave 256 x 3 x 3 after the pool. `fast_layout` as for
    AlexNet-14: layer 5 hands back a standard NCHW tensor (see `use_fast_layout_`)."""
    side = ((image_size // 2 // 2) - 3) // 2 + 1
    pool5 = MaxPool2dToNCHW if fast_layout else nn.MaxPool2d
    return [
        nn.Conv2d(in_channels, 32, kernel_size=3, padding=1),            # 1
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.ReLU(inplace=True),                                            # 3  <- S1
        nn.Conv2d(32, 64, kernel_size=3, padding=1),
        pool5(kernel_size=2, stride=2),
        nn.ReLU(inplace=True),                                            # 6  <- S2
        nn.Conv2d(64, 128, kernel_size=3, padding=1),                     # 7  <- S3
        nn.Conv2d(128, 256, kernel_size=3, padding=1),                    # 8  <- S4
        nn.Conv2d(256, 256, kernel_size=3, padding=1),
        nn.MaxPool2d(kernel_size=3, stride=2),
        nn.ReLU(inplace=True),                                            # 11 <- S5
        nn.Sequential(nn.Flatten(), nn.Linear(256 * side * side, 1024)),
        nn.Linear(1024, 512),
        nn.Linear(512, num_classes),                                      # 14
    ]


def resnet18_layers(in_channels: int, num_classes: int) -> list[nn.Module]:
    """ResNet-18 for 32x32 inputs (He et al. 2016; the CIFAR form: 3x3 stride-1 stem, no
    max-pool): torchvision's network with that stem, as 7 layers (stem, 4 residual stages of
    two BasicBlocks, global average pooling, classifier). BatchNorm after every convolution.
    torchvision is imported here, not with the module: importing it costs a process about
    2 s (it imports torch._dynamo), more than a small run of the AlexNet takes."""
    from torchvision.models.resnet import resnet18

    net = resnet18(num_classes=num_classes)
    stem = nn.Sequential(nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1,
                                   bias=False), net.bn1, net.relu)
    return [stem, net.layer1, net.layer2, net.layer3, net.layer4, net.avgpool,
            nn.Sequential(nn.Flatten(), net.fc)]


def vgg11_layers(in_channels: int, num_classes: int) -> list[nn.Module]:
    """VGG-11 with BatchNorm for 32x32 inputs (Simonyan & Zisserman 2015, configuration A):
    8 conv blocks (3x3 conv, BN, ReLU) and 5 max-pools leave 512 x 1 x 1, then one linear
    classifier (the CIFAR form; no dropout, whose draws would not come from the run's seed)."""
    layers: list[nn.Module] = []
    for width in VGG11_CONFIG:
        if isinstance(width, str):   # "M": a max-pool
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers.append(nn.Sequential(nn.Conv2d(in_channels, width, kernel_size=3, padding=1),
                                        nn.BatchNorm2d(width), nn.ReLU(inplace=True)))
            in_channels = width
    return [*layers, nn.Sequential(nn.Flatten(), nn.Linear(in_channels, num_classes))]


def build_split_model(arch: str, split: str, in_channels: int, num_classes: int,
                      generator: torch.Generator, fast_layout: bool = True,
                      image_size: int = 32) -> tuple[nn.Sequential, nn.Sequential]:
    """(client_part, server_part) of `arch` cut at `split`, initialised from `generator`,
    for `in_channels` x `image_size` x `image_size` images (32 but for `alexnet`, see
    `input_size`).

    `fast_layout` (the two AlexNets) changes memory layout, never values."""
    if arch not in SPLITS:
        raise ValueError(f"model.arch: unknown {arch!r}; allowed: {list(ARCHS)}")
    if split not in SPLITS[arch]:
        raise ValueError(f"model.split: unknown {split!r} for {arch}; allowed: "
                         f"{list(SPLITS[arch])}")
    if arch == "alexnet":
        layers = alexnet_layers(in_channels, num_classes, image_size, fast_layout)
    elif arch == "alexnet14":
        layers = alexnet14_layers(in_channels, num_classes, fast_layout)
    elif arch == "resnet18":
        layers = resnet18_layers(in_channels, num_classes)
    else:
        layers = vgg11_layers(in_channels, num_classes)
    init_layers_(layers, generator)
    if fast_layout and arch in ("alexnet", "alexnet14"):
        use_fast_layout_(layers)
    cut = SPLITS[arch][split]
    return nn.Sequential(*layers[:cut]), nn.Sequential(*layers[cut:])


def use_fast_layout_(layers: list[nn.Module]) -> None:
    """Store the weights of the two conv blocks on large feature maps (layers 1-6) channels-
    last, so oneDNN computes those convolutions and max-pools in that layout: markedly faster
    on the CPU, most of all at the small per-client batches of split learning (AlexNet-14
    about 1.4x, AlexNet about 1.2x a training step here). The second block's max-pool turns
    the result back to NCHW, the faster layout for the small maps after it. Values unchanged.
    """
    for layer in layers[:6]:
        if isinstance(layer, nn.Conv2d):
            layer.weight.data = layer.weight.data.to(memory_format=torch.channels_last)


def init_layers_(layers: list[nn.Module], generator: torch.Generator) -> None:
    """PyTorch's default initialisation, drawn from an explicit generator: convolutions
    (transposed too) and linear layers Kaiming-uniform, BatchNorm weight 1 and bias 0 with
    fresh running statistics (ResNet-18 included: not torchvision's fan-out normal draw,
    which uses the global RNG)."""
    for module in nn.Sequential(*layers).modules():
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            fan_in = module.weight[0].numel()
            bound = 1.0 / fan_in**0.5
            with torch.no_grad():
                # kaiming_uniform_(a=sqrt(5)) as in nn.Conv2d.reset_parameters
                module.weight.uniform_(-bound, bound, generator=generator)
                if module.bias is not None:
                    module.bias.uniform_(-bound, bound, generator=generator)
        elif isinstance(module, nn.BatchNorm2d):
            module.reset_parameters()


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
    the extractor maps an image to the penultimate features (AlexNet-14: 256 per sample,
    ResNet-18, VGG-11 and AlexNet: 512)."""
    *server_layers, classifier = server_part
    if isinstance(classifier, nn.Linear):    # AlexNet: the flatten is two layers before
        return nn.Sequential(*client_part, *server_layers), classifier
    flatten, linear = classifier.children()   # (a Flatten, then the Linear)
    if not isinstance(linear, nn.Linear):
        raise TypeError(f"the split model's last layer must end in a Linear classifier, got "
                        f"{type(linear).__name__}")
    return nn.Sequential(*client_part, *server_layers, flatten), linear
