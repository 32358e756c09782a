"""The sections of a scenario file as pydantic models (data, model, training, compute,
compression, privacy, report; the network's in scala_netsim.config.network), and the names
they allow, taken from their registries (scala_netsim.core.catalog). The scenario itself, its
algorithm sections and the checks across sections are in scala_netsim.config.scenario."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import Field, model_validator

from scala_netsim.algorithms.config import Strict
from scala_netsim.config.ranges import ENERGY_COEFFICIENT, FLOPS
from scala_netsim.core.catalog import ARCHS, CODECS, MODEL_CODECS, SPLITS

DATASET_CLASSES = {"fashion_mnist": 10, "cifar10": 10, "cifar100": 100, "cinic10": 10}


def one_of(names: Iterable[str]) -> Any:
    """typing.Literal of `names`, made at run time from a registry (pydantic checks a value
    against it; the type checker sees the fields as str)."""
    return Literal.__getitem__(tuple(names))


if TYPE_CHECKING:
    DatasetName: TypeAlias = str
    ArchName: TypeAlias = str
    CodecName: TypeAlias = str
    ModelCodecName: TypeAlias = str
else:
    DatasetName, ArchName = one_of(DATASET_CLASSES), one_of(ARCHS)
    CodecName, ModelCodecName = one_of(CODECS), one_of(MODEL_CODECS)


class IidPartition(Strict):
    kind: Literal["iid"]


class QuantityPartition(Strict):
    """Each client holds `alpha` distinct labels (SCALA-NOTES section 5)."""
    kind: Literal["quantity"]
    alpha: int = Field(ge=1)


class DirichletPartition(Strict):
    """p_k ~ Dir(beta) per client over the classes (SCALA-NOTES section 5)."""
    kind: Literal["dirichlet"]
    beta: float = Field(gt=0)


class SampledPartition(Strict):
    """Each client draws `samples_per_client` distinct samples, independently of the others
    (clients may share samples: more clients than samples is possible). No label skew."""
    kind: Literal["sampled"]
    samples_per_client: int = Field(ge=1)


Partition = Annotated[IidPartition | QuantityPartition | DirichletPartition | SampledPartition,
                      Field(discriminator="kind")]
#: each partition kind's model, by its tag (derived from the union: error messages name them)
PARTITION_KINDS = {get_args(member.model_fields["kind"].annotation)[0]: member
                   for member in get_args(get_args(Partition)[0])}


class DataConfig(Strict):
    dataset: DatasetName = "fashion_mnist"
    data_dir: str | None = None
    num_clients: int = Field(default=100, ge=1)
    partition: Partition = QuantityPartition(kind="quantity", alpha=2)
    train_samples: int | None = Field(default=None, ge=1)
    test_samples: int | None = Field(default=None, ge=1)


class ModelConfig(Strict):
    arch: ArchName = "alexnet"   # the SCALA authors' AlexNet, the paper's model
    split: str = "S2"  # every arch's default split is S2 (scala_netsim.learn.models)

    @model_validator(mode="after")
    def _split_of_arch(self) -> ModelConfig:
        if self.split not in SPLITS[self.arch]:
            raise ValueError(f"split: {self.split!r} is not a split point of {self.arch}; "
                             f"allowed: {', '.join(SPLITS[self.arch])}")
        return self


class TrainingConfig(Strict):
    rounds: int = Field(default=500, ge=1)
    local_iters: int = Field(default=5, ge=1)
    batch_size: int = Field(default=320, ge=1)
    lr: float = Field(default=0.01, gt=0)
    momentum: float = Field(default=0.9, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    # clip each party's gradient to this global L2 norm before its SGD step (null = none)
    grad_clip_norm: float | None = Field(default=None, gt=0)
    participation: float = Field(default=0.1, gt=0, le=1)
    eval_every: int = Field(default=10, ge=1)
    checkpoint_every: int = Field(default=10, ge=1)
    # seconds from a round's start (its first model download) by which a client's model must
    # be in (SplitFedV3: its last step done); later clients are dropped. null = no deadline
    deadline_s: float | None = Field(default=None, gt=0)
    # algorithms with a barrier (scala, ca_sfl): seconds the server waits for each local
    # iteration's activations from the moment it is ready for them; later clients dropped
    step_deadline_s: float | None = Field(default=None, gt=0)
    # select ceil((1 + x) n) clients and keep the first n to finish (0 = select n)
    over_selection: float = Field(default=0.0, ge=0)
    # asynchronous algorithms (fedasync, fedbuff): Q clients train at once, each on a fixed
    # 1/Q slot of each band; null = the clients a synchronous round selects (r K)
    concurrency: int | None = Field(default=None, ge=1)
    # stop a run once its simulated time reaches this (s), whatever `rounds` says; null = none
    time_budget_s: float | None = Field(default=None, gt=0)


class ComputeConfig(Strict):
    client_flops_per_s: tuple[Annotated[float, FLOPS], Annotated[float, FLOPS]] = (1e9, 1e10)
    server_flops_per_s: Annotated[float, FLOPS] = 1e13
    # kappa of the CMOS energy model E = kappa FLOPs f^2, J s^2 per FLOP^3 (channel.energy)
    energy_coefficient: Annotated[float, ENERGY_COEFFICIENT] = 1e-28

    @model_validator(mode="after")
    def _range_ordered(self) -> ComputeConfig:
        low, high = self.client_flops_per_s
        if low > high:
            raise ValueError(f"client_flops_per_s: must be [min, max] with min <= max, "
                             f"got [{low}, {high}]")
        return self


class CompressionConfig(Strict):
    """What crosses the air compressed (scala_netsim.learn.compression): the cut-layer activations
    going up, their gradients coming down, the models either way."""
    uplink: CodecName = "none"
    downlink: CodecName = "none"
    topk_fraction: float = Field(default=0.1, gt=0, le=1)   # share of entries top-k keeps
    models: ModelCodecName = "none"


class PrivacyConfig(Strict):
    """Run the model-inversion attack (scala_netsim.tools.attack) on each completed run."""
    attack_epochs: int = Field(default=20, ge=1)
    attack_seeds: list[Annotated[int, Field(ge=0)]] = Field(default=[0, 1, 2], min_length=1)


class ReportConfig(Strict):
    accuracy_targets: list[Annotated[float, Field(gt=0, le=1)]] = [0.6, 0.7, 0.8]
