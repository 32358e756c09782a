"""The names a scenario may choose among, as data: the architectures with their split points,
and the codecs. The implementations (scala_netsim.learn.models and .compression) import
these; the scenario schema validates against them without importing torch."""

# Each architecture is a list of layers; a split point names how many of them run on the
# client. The default split of each is the SCALA papers' (AlexNet: after the second
# convolution block; ResNet-18: after the first residual stage; VGG-11: after its second
# convolution block, ResSFL's and the journal's "second layer" cut).
ALEXNET14_SPLITS = {"S1": 3, "S2": 6, "S3": 8, "S4": 10, "S5": 13}
# The authors' AlexNet (their public code, eejiarong/GAS utils/network.py; 6 client modules and
# 8 server modules at the default split). The journal (section 5.6) cuts it after the first,
# second (default), third, fourth and fifth convolution; a convolution's block includes its
# max-pool and ReLU where it has them (conv1, conv2, conv5), so S1 and S5 are the code's own
# `AlexNet_Split` cuts L1 and L4, S2 its default L2 and S3 its L3.
ALEXNET_SPLITS = {"S1": 3, "S2": 6, "S3": 7, "S4": 8, "S5": 11}
# ResNet-18 layers: stem (3x3 conv, BN, ReLU), the four residual stages, pooling, classifier.
# S1 after the first convolution, S2..S4 after the first, second and third stage (journal 5.6).
RESNET18_SPLITS = {"S1": 1, "S2": 2, "S3": 3, "S4": 4}
# VGG-11 (configuration A) layers: 8 conv blocks (conv, BN, ReLU) and 5 max-pools, then the
# classifier. S1..S4 after the 1st, 2nd, 4th and 6th conv block, each with its max-pool.
# S2 is ResSFL's VGG-11 "cut 2" (`cutlayer=4` in its reproduce/table3 scripts: two conv
# blocks and two pools on the client, 128 x 8 x 8 activations for a 32 x 32 image).
VGG11_CONFIG = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")
VGG11_SPLITS = {"S1": 2, "S2": 4, "S3": 7, "S4": 10}
SPLITS = {"alexnet": ALEXNET_SPLITS, "alexnet14": ALEXNET14_SPLITS, "resnet18": RESNET18_SPLITS,
          "vgg11": VGG11_SPLITS}
ARCHS = tuple(SPLITS)
DEFAULT_SPLITS = {"alexnet": "S2", "alexnet14": "S2", "resnet18": "S2", "vgg11": "S2"}
# Architectures fed images at the dataset's own size (Fashion-MNIST 28 x 28, as the authors
# feed their AlexNet); the others take 32 x 32 (Fashion-MNIST zero-padded).
NATIVE_SIZE_ARCHS = frozenset({"alexnet"})

# Cut-layer codecs (scala_netsim.learn.compression): for activations and their gradients, and the
# ones that models may use too.
CODECS = ("none", "fp16", "int8", "topk")
MODEL_CODECS = ("none", "fp16")
