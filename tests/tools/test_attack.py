"""The model-inversion attack: its decoder, that it learns, and the command on a run folder."""

import json

import numpy as np
import pytest
import torch

from analysis.runs import load_runs
from analysis.tables import privacy_table
from scala_netsim.attack import main
from scala_netsim.config.registry import ALGORITHMS
from scala_netsim.learn.data import to_unit_range
from scala_netsim.learn.privacy import inversion_decoder, reconstruction_metrics
from scala_netsim.tools.attack import attackable, client_model_of, reconstruct, train_decoder

from conftest import ROOT


@pytest.mark.parametrize("shape", [(192, 2, 2), (128, 8, 8), (64, 32, 32), (8, 8, 8)])
def test_the_decoder_maps_activations_of_any_cut_to_32x32_images_in_0_1(shape):
    decoder = inversion_decoder(shape, out_channels=1)
    images = decoder(torch.randn(3, *shape))
    assert images.shape == (3, 1, 32, 32) and images.min() >= 0 and images.max() <= 1


def test_the_decoder_refuses_activations_it_cannot_double_to_the_image():
    with pytest.raises(ValueError, match="activations of 3 x 3 cannot be decoded to 32 x 32"):
        inversion_decoder((16, 3, 3), out_channels=1)


@pytest.mark.slow
def test_the_attacker_learns_to_invert_what_it_sees(fashion_slice):
    """Activations = the images themselves (nothing hidden): a few epochs of training bring
    the reconstructions of unseen images far closer than an untrained decoder's, and the
    same seed gives the same decoder."""
    x = fashion_slice.test_x
    images01 = to_unit_range("fashion_mnist", x)
    aux, target = slice(0, 100), slice(100, 200)
    scores = {}
    for epochs in (1, 8):
        decoder = train_decoder(x[aux], images01[aux], epochs, seed=0)
        scores[epochs] = reconstruction_metrics(images01[target], reconstruct(decoder, x[target]))
    assert scores[8].mse < 0.5 * scores[1].mse and scores[8].ssim > scores[1].ssim
    again = train_decoder(x[aux], images01[aux], 1, seed=0)
    assert reconstruction_metrics(images01[target], reconstruct(again, x[target])) == scores[1]


@pytest.mark.parametrize("algorithm", [a for a in ALGORITHMS if attackable(a) is None])
def test_the_attacker_loads_the_client_part_each_algorithm_sends_from(algorithm, make_run,
                                                                     fashion_slice, tmp_path):
    """model.pt's client, loaded as the algorithm builds its client part (SCALA-PE's ends in
    its bottleneck, SFL with local loss keeps its body and not its aux head), computes what
    the trainer's client model sends, with the trainer's (perturbed) weights."""
    from scala_netsim.runner.writer import save_final_model

    run = make_run(algorithm)
    trainer = run.trainer
    with torch.no_grad():
        for p in trainer.client_model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    save_final_model(tmp_path / "model.pt", trainer)
    loaded = client_model_of(tmp_path, run.scenario, fashion_slice.in_channels,
                             fashion_slice.num_classes)
    x = fashion_slice.test_x[:4]
    torch.testing.assert_close(loaded.eval()(x), trainer.client_model.eval()(x))


@pytest.mark.slow
def test_a_privacy_section_attacks_each_run_that_can_be_attacked(cli, tmp_path, capsys):
    """`privacy:` attacks SCALA's run at its end and leaves FedAvg's alone; the command on the
    same folder, same seeds, writes the same attack.json; FedAvg's folder is refused."""
    code, _, err = cli(ROOT / "scenarios" / "quickstart.yaml", "--out", tmp_path,
                       "--set", "data.train_samples=1000", "--set", "data.test_samples=100",
                       "--set", "data.num_clients=10", "--set", "training.participation=0.3",
                       "--set", "training.batch_size=30", "--set", "training.rounds=1",
                       "--set", "algorithms=[scala, fedavg]",
                       "--set", "privacy={attack_epochs: 1, attack_seeds: [0, 1]}",
                       "--no-progress", "--no-figures", "--no-report")
    assert code == 0, err
    scala = tmp_path / "quickstart" / "scala" / "seed0"
    fedavg = tmp_path / "quickstart" / "fedavg" / "seed0"
    written = (scala / "attack.json").read_text()
    result = json.loads(written)
    assert (result["aux_images"], result["target_images"], result["seeds"]) == (50, 50, [0, 1])
    for name in ("mse", "ssim", "psnr_db"):
        per_seed = result[name]["per_seed"]
        assert len(per_seed) == 2
        assert result[name]["mean"] == pytest.approx(np.mean(per_seed))
        assert result[name]["std"] == pytest.approx(np.std(per_seed, ddof=1))
    assert 0 < result["mse"]["mean"] < 1 and 0 < result["psnr_db"]["mean"] < 100
    assert (scala / "attack.png").stat().st_size > 5_000
    assert not (fedavg / "attack.json").exists()
    assert "privacy: null" in (fedavg / "scenario.yaml").read_text()
    # the report's Table VI form: the attacked run's row, none for FedAvg
    runs, _, _ = load_runs(tmp_path / "quickstart")
    row = runs.set_index("algorithm").loc["scala"]
    assert row["attack_mse_std"] == pytest.approx(result["mse"]["std"])
    assert privacy_table(runs, [], []).splitlines()[2:] == [
        f"| scala | 1 | {100 * row['final_acc']:.2f} | {result['mse']['mean']:.4f} | "
        f"{result['ssim']['mean']:.4f} | {result['psnr_db']['mean']:.2f} | "
        f"{row['uplink_MB_per_round']:.3f} |"]

    assert main([str(scala), "--epochs", "1", "--seeds", "0", "1"]) == 0
    assert f"reconstruction MSE {result['mse']['mean']:.4f}" in capsys.readouterr().out
    assert (scala / "attack.json").read_text() == written          # the same attack again
    assert main([str(fedavg)]) == 2
    assert "fedavg sends no activations" in capsys.readouterr().err
    assert not (fedavg / "attack.json").exists()


def test_a_privacy_section_without_an_attackable_algorithm_is_refused(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nalgorithms: [fedavg, splitfed_v3]\nprivacy: {}\n")
    code, _, err = cli(bad, "--out", tmp_path / "out")
    assert code == 2 and not (tmp_path / "out").exists()
    assert ("privacy: the attack needs an algorithm that sends activations from a global "
            "client-side model; fedavg sends no activations" in err)
    assert "splitfed_v3 has no global client-side model" in err


# --- SCALA-PE ----------------------------------------------------------------------------
def scala_pe_step(make_run, **config):
    """Three clients of SCALA-PE (its section: `config`) up to client 0's backward:
    (trainer, client 0's model, its reply)."""
    run = make_run("scala_pe", scala_pe=config)
    trainer = run.trainer
    trainer.begin_round([0, 1, 2])
    for k in (0, 1, 2):
        trainer.client_receive_model(trainer.client_model_download(k))
    uploads = [trainer.client_forward(k, 0).upload for k in (0, 1, 2)]
    reply = trainer.server_step(uploads).replies[0]
    return trainer, trainer.slots[0][0], reply


@pytest.mark.slow
@pytest.mark.parametrize("coef", [0.0, 0.7])
def test_scala_pe_regulariser_gradient_equals_autograd_of_the_stated_loss(make_run, coef):
    """Client 0's weight gradient is that of <A, G> - coef MSE(decoder(A), X): SCALA's
    gradient through the returned G, minus coef times the simulated attacker's reconstruction
    error (decoder as it was, in evaluation mode); the decoder then takes its own step."""
    import copy

    trainer, model, reply = scala_pe_step(make_run, coef=coef)
    images = trainer._inputs[0]
    decoder, optimizer = trainer.decoder(0)
    reference, reference_decoder = copy.deepcopy(model), copy.deepcopy(decoder).eval()
    activations = reference(images)
    loss = (activations * reply.gradients).sum() - coef * torch.nn.functional.mse_loss(
        reference_decoder(activations), images)
    loss.backward()
    before = [p.detach().clone() for p in decoder.parameters()]
    trainer._private_backward(model, trainer._pending[0], reply.gradients, images, decoder,
                              optimizer)
    for got, want in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-7)
    assert any(not torch.equal(p, b) for p, b in zip(decoder.parameters(), before, strict=True))


@pytest.mark.slow
def test_scala_pe_bottleneck_shrinks_what_is_sent(make_run):
    """AlexNet-14 at S2 sends 192 x 2 x 2 floats a sample; SCALA-PE's C8S1 bottleneck 8 x 2 x 2
    (and s = 2: 8 x 1 x 1); the model carries the two bottleneck convolutions."""
    from scala_netsim.learn.models import build_split_model, state_bytes

    client = build_split_model("alexnet14", "S2", 1, 10, torch.Generator())[0]
    for stride, per_sample in ((1, 8 * 2 * 2), (2, 8 * 1 * 1)):
        trainer, model, reply = scala_pe_step(make_run, bottleneck_stride=stride)
        upload_bytes = trainer.step_demand(0).upload_bytes
        batch = trainer.client_batch_sizes[0]
        assert upload_bytes == batch * (4 * per_sample + 8)
        assert reply.gradients.shape[1:].numel() == per_sample
        assert state_bytes(model) == state_bytes(client) + 4 * (192 * 8 * 9 + 8)

