"""A user's own Flower app, the kind Flower's quickstart writes: a small MLP on Fashion-MNIST,
each client training on its own share of the images. Nothing in it knows of scala_netsim but
where it reads the images from (this machine's Debian package, through the package's reader).

Run on the simulated clock by `run_my_app.py` beside it, or by a scenario naming it:
    flower: {client_app: my_app:app, initial_arrays: my_app:initial_arrays,
             evaluate_fn: my_app:evaluate}
from this folder (or with it on PYTHONPATH)."""

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from torch import nn

from scala_netsim.learn.data import Dataset, load_dataset

#: the images this app uses (a slice of Fashion-MNIST: the example runs in seconds)
TRAIN_SAMPLES, TEST_SAMPLES, BATCH_SIZE = 6000, 1000, 32
_DATA: list[Dataset] = []


def data() -> Dataset:
    """Fashion-MNIST at 28 x 28, loaded once per process."""
    if not _DATA:
        _DATA.append(load_dataset("fashion_mnist", train_samples=TRAIN_SAMPLES,
                                  test_samples=TEST_SAMPLES, pad_to_32=False))
    return _DATA[0]


class Net(nn.Module):
    """784 -> 64 -> 10."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(),
                                    nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def initial_arrays() -> ArrayRecord:
    """The global model the strategy starts from."""
    torch.manual_seed(0)
    return ArrayRecord(Net().state_dict())


app = ClientApp()


@app.train()
def train(msg: Message, context: Context) -> Message:
    """`local-steps` SGD steps on the client's share (every K-th training image from its
    partition id); the client counts its rounds in its Context's state."""
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    k = int(context.node_config["partition-id"])
    share = torch.arange(k, TRAIN_SAMPLES, int(context.node_config["num-partitions"]))
    rounds = int(context.state.get("client", MetricRecord({"rounds": 0}))["rounds"]) + 1
    context.state["client"] = MetricRecord({"rounds": rounds})
    draws = torch.Generator().manual_seed(1000 * k + rounds)
    config = msg.content["config"]     # the round's (a ServerApp's train_config), else the run's
    lr = float(config.get("lr", context.run_config.get("lr", 0.05)))   # type: ignore[arg-type]
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    images, labels, losses = data().train_x, data().train_y, []
    for _ in range(int(msg.content["config"]["local-steps"])):
        batch = share[torch.randint(len(share), (BATCH_SIZE,), generator=draws)]
        loss = nn.functional.cross_entropy(model(images[batch]), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return Message(RecordDict({
        "arrays": ArrayRecord(model.state_dict()),
        "metrics": MetricRecord({"num-examples": len(share),
                                 "train_loss": sum(losses) / len(losses)})}), reply_to=msg)


def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord:
    """Accuracy and loss of the global model on the test images."""
    model = Net()
    model.load_state_dict(arrays.to_torch_state_dict())
    with torch.no_grad():
        logits = model(data().test_x)
    return MetricRecord({
        "accuracy": float((logits.argmax(1) == data().test_y).float().mean()),
        "loss": float(nn.functional.cross_entropy(logits, data().test_y))})
