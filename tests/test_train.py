"""The fit loop: schedule, parameter groups, clipping, divergence, determinism, caching."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from ctxlib.training import loop
from ctxlib.training.loop import Diverged, TrainConfig, device_type, fit, parameter_groups, seeded, warmup_linear_decay


def regression_problem(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 4, generator=generator)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.1
    batches = itertools.cycle([(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)])
    return batches, lambda model, batch: nn.functional.mse_loss(model(batch[0]).squeeze(-1), batch[1])


def test_warmup_then_linear_decay():
    values = [warmup_linear_decay(step, total=10, warmup=4) for step in range(10)]
    assert values[:4] == [0.25, 0.5, 0.75, 1.0]
    assert values[4:] == pytest.approx([1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])


def test_no_weight_decay_on_biases_and_norms():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    decay, no_decay = parameter_groups(model, 0.1, lr=1e-3)
    assert [p.shape for p in decay["params"]] == [(4, 3)]
    assert len(no_decay["params"]) == 3 and no_decay["weight_decay"] == 0.0
    assert decay["lr"] == no_decay["lr"] == 1e-3


def test_lr_scale_slows_a_named_submodule_and_skips_frozen_ones():
    model = nn.ModuleDict({"encoder": nn.Linear(3, 4), "head": nn.Linear(4, 2), "frozen": nn.Linear(2, 2)})
    model["frozen"].requires_grad_(False)
    groups = parameter_groups(model, 0.1, lr=1e-2, lr_scale={"encoder": 0.1})
    by_id = {id(p): (g["lr"], g["weight_decay"]) for g in groups for p in g["params"]}
    assert by_id[id(model["encoder"].weight)] == pytest.approx((1e-3, 0.1))
    assert by_id[id(model["encoder"].bias)] == pytest.approx((1e-3, 0.0))
    assert by_id[id(model["head"].weight)] == pytest.approx((1e-2, 0.1))
    assert not any(id(p) in by_id for p in model["frozen"].parameters())
    with pytest.raises(ValueError, match="lr_scale names submodules \\['decoder'\\]"):
        parameter_groups(model, 0.1, lr=1e-2, lr_scale={"decoder": 0.5})


def test_fit_learns_records_and_is_deterministic():
    def run():
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        batches, loss_fn = regression_problem()
        def evaluate(m):
            return {"weight_error": (m.weight - torch.tensor([[1.0, -2.0, 0.5, 3.0]])).abs().max()}
        history = fit(model, batches, loss_fn, TrainConfig(steps=300, lr=0.05, weight_decay=0.0, eval_every=100,
                                                           progress=False), evaluate)
        return model, history
    model, history = run()
    again, _ = run()
    assert torch.equal(model.weight, again.weight)
    assert history.steps == list(range(1, 301)) and len(history.train["loss"]) == 300
    assert history.train["loss"][-1] < 1e-3 < history.train["loss"][0]
    assert [s for s, _ in history.evaluations["weight_error"]] == [100, 200, 300]
    assert history.evaluations["weight_error"][-1][1] < 0.02
    assert max(history.lr) == pytest.approx(0.05) and history.lr[0] == pytest.approx(0.05 / 30)


def test_history_seconds_are_the_steps_time_without_the_evaluations(monkeypatch):
    # A scripted clock, not a real one: a training step takes 1 s of it and an evaluation 1000 s,
    # so History.seconds is known exactly (300), whatever else the machine is doing.
    now = [0.0]
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    torch.manual_seed(0)
    batches, loss_fn = regression_problem()

    def timed_loss(model, batch):
        now[0] += 1.0
        return loss_fn(model, batch)

    def evaluate(model):
        now[0] += 1000.0
        return {"zero": 0.0}

    history = fit(nn.Linear(4, 1), batches, timed_loss,
                  TrainConfig(steps=300, lr=0.05, weight_decay=0.0, eval_every=100, progress=False), evaluate)
    assert len(history.evaluations["zero"]) == 3 and now[0] == 300 + 3 * 1000
    assert history.seconds == 300.0


def test_stop_ends_training_after_an_evaluation_and_keeps_the_schedule():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    batches, loss_fn = regression_problem()
    asked = []

    def stop(history):
        asked.append(history.steps[-1])
        return len(history.evaluations["score"]) == 2  # stop after the second evaluation

    history = fit(model, batches, loss_fn, TrainConfig(steps=100, lr=0.05, weight_decay=0.0, eval_every=10,
                                                       warmup_fraction=0.1, progress=False),
                  evaluate=lambda m: {"score": 0.0}, stop=stop)
    assert asked == [10, 20] and history.steps == list(range(1, 21))
    # The learning rate followed the schedule planned for 100 steps, not one squeezed into 20.
    assert history.lr[-1] == pytest.approx(0.05 * (100 - 19) / 90)
    with pytest.raises(ValueError, match="stop needs evaluate"):
        fit(model, batches, loss_fn, TrainConfig(steps=5, progress=False), stop=stop)


def test_clipping_scales_the_gradient():
    # Adam's first step is lr · g / (|g| + eps): about lr whatever g's size, unless the gradient
    # was clipped below eps = 1e-8, which makes the step vanish. So the step size shows clipping.
    def first_step(max_grad_norm):
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        before = model.weight.detach().clone()
        batch = (torch.full((8, 4), 100.0), torch.zeros(8))
        history = fit(model, itertools.repeat(batch), lambda m, b: (m(b[0]) ** 2).mean(),
                      TrainConfig(steps=1, lr=1.0, warmup_fraction=0.0, max_grad_norm=max_grad_norm,
                                  weight_decay=0.0, progress=False))
        return (model.weight - before).abs().max().item(), history.grad_norm[0]
    unclipped, norm = first_step(None)
    clipped, norm_seen = first_step(1e-12)
    assert unclipped == pytest.approx(1.0, rel=1e-4)
    assert clipped < 1e-3
    assert norm == pytest.approx(norm_seen) and norm > 1.0  # the history keeps the norm before clipping


def test_divergence_names_the_step():
    model = nn.Linear(1, 1)
    calls = itertools.count()
    def loss_fn(m, batch):
        return m(batch).sum() * (float("nan") if next(calls) == 3 else 1.0)
    with pytest.raises(FloatingPointError, match=r"loss is nan at step 3 of 10") as caught:
        fit(model, itertools.repeat(torch.ones(2, 1)), loss_fn, TrainConfig(steps=10, progress=False))
    # What was trained before the blow-up is kept, to plot or to resume from.
    assert isinstance(caught.value, Diverged) and caught.value.step == 3
    assert caught.value.history.steps == [1, 2, 3] and len(caught.value.history.train["loss"]) == 3


def test_a_non_finite_gradient_stops_before_the_step_writes_it():
    # sqrt(0 · w) is 0, a finite loss, but its gradient 0 · ∞ is NaN: without the check AdamW
    # would write NaN into every weight and the loss would only blow up one step later.
    torch.manual_seed(0)
    model = nn.Linear(1, 1)
    calls = itertools.count()
    def loss_fn(m, batch):
        loss = (m(batch) - 1).pow(2).mean()
        return loss + torch.sqrt(0.0 * m.weight.sum()) if next(calls) == 2 else loss
    with pytest.raises(Diverged, match=r"gradient norm is nan at step 2 of 10") as caught:
        fit(model, itertools.repeat(torch.ones(2, 1)), loss_fn, TrainConfig(steps=10, progress=False))
    assert caught.value.step == 2 and caught.value.history.steps == [1, 2]
    assert all(bool(p.isfinite().all()) for p in model.parameters())


def dropout_run(seed: int) -> torch.Tensor:
    with seeded(0):
        model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    batches, loss_fn = regression_problem()
    fit(model, batches, loss_fn, TrainConfig(steps=20, seed=seed, progress=False))
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_fit_is_reproducible_from_its_seed_and_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(5)
    torch.manual_seed(123)
    first = dropout_run(seed=0)
    assert torch.equal(torch.rand(5), expected)  # fit did not reseed the global generator
    torch.manual_seed(999)                       # another caller state: the same training
    assert torch.equal(dropout_run(seed=0), first)
    assert not torch.equal(dropout_run(seed=1), first)  # the seed reaches the dropout masks


def test_seeded_builds_the_same_model_and_restores_the_state():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    with seeded(0):
        a = nn.Linear(3, 3).weight.detach()
    assert torch.equal(torch.rand(3), expected)
    with seeded(0):
        b = nn.Linear(3, 3).weight.detach()
    assert torch.equal(a, b)
    with pytest.raises(TypeError, match="seed must be an int, got str 'book'"):
        with seeded("book"):
            pass


def test_autocast_follows_the_models_device():
    assert device_type(nn.Linear(2, 2)) == "cpu"
    assert device_type(nn.Linear(2, 2, device="meta")) == "meta"
    assert device_type(nn.ReLU()) == "cpu"  # no parameters: the CPU


def test_bad_batches_and_losses_are_named():
    batches, loss_fn = regression_problem()
    with pytest.raises(ValueError, match="batches ran out at step 2 of 5"):
        fit(nn.Linear(4, 1), iter([next(batches), next(batches)]), loss_fn, TrainConfig(steps=5, progress=False))
    with pytest.raises(TypeError, match="batches must be an iterator"):
        fit(nn.Linear(4, 1), [next(batches)], loss_fn, TrainConfig(steps=1, progress=False))
    with pytest.raises(TypeError, match="loss_fn must return a scalar tensor with a gradient"):
        fit(nn.Linear(4, 1), batches, lambda m, b: 1.0, TrainConfig(steps=1, progress=False))
    with pytest.raises(TypeError, match="loss_fn must return a scalar tensor with a gradient"):
        fit(nn.Linear(4, 1), batches, lambda m, b: {"accuracy": m(b[0]).mean()}, TrainConfig(steps=1, progress=False))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        fit(lambda x: x, batches, loss_fn, TrainConfig(steps=1, progress=False))


def decay_only(optimizer: str, weight_decay: float, steps: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights before and after ``steps`` steps on a loss with zero gradient: only the decay acts."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3, bias=False)
    with torch.no_grad():  # every weight at least 0.2 from 0, further than 5 steps of lr can take it
        model.weight += 0.2 * model.weight.sign()
    before = model.weight.detach().clone()
    fit(model, itertools.repeat(None), lambda m, _: 0.0 * m.weight.sum(),
        TrainConfig(steps=steps, lr=0.01, weight_decay=weight_decay, warmup_fraction=0.0, max_grad_norm=None,
                    optimizer=optimizer, progress=False))
    return before, model.weight.detach()


def test_adamw_decays_weights_geometrically_at_lr_times_lambda():
    # Decoupled decay: θ ← θ(1 − η_t λ) at each step, η_t the scheduled rate (linear decay to 0).
    before, after = decay_only("adamw", weight_decay=0.5)
    factor = 1.0
    for step in range(5):
        factor *= 1 - 0.01 * warmup_linear_decay(step, 5, 0) * 0.5
    torch.testing.assert_close(after, before * factor)


def test_adam_l2_normalises_the_penalty_away():
    # Coupled L2 feeds λθ through Adam's m / sqrt(v): on its own it moves every weight by about
    # η_t towards 0 whatever λ is, so λ = 0.5 and λ = 0.005 decay alike, unlike AdamW.
    before, strong = decay_only("adam_l2", weight_decay=0.5)
    _, weak = decay_only("adam_l2", weight_decay=0.005)
    total = sum(0.01 * warmup_linear_decay(step, 5, 0) for step in range(5))
    # Adam's m / sqrt(v) is 1 for a constant gradient; λθ shrinks ~5% over the steps, hence atol.
    torch.testing.assert_close(strong, before - total * before.sign(), atol=5e-4, rtol=0)
    torch.testing.assert_close(weak, strong, atol=5e-4, rtol=0)
    _, adamw_weak = decay_only("adamw", weight_decay=0.005)
    assert (adamw_weak - before).abs().max() < 1e-3 < (weak - before).abs().min()


def test_adam_l2_matches_adam_on_the_penalised_loss():
    # The reference: torch's Adam, no weight_decay, on loss + λ/2 Σθ² over the decayed weights.
    batches, loss_fn = regression_problem()
    data = [next(batches) for _ in range(8)]

    def trained(reference: bool) -> torch.Tensor:
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        if reference:
            optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
            schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_linear_decay(step, 8, 0))
            for batch in data:
                optimizer.zero_grad()
                (loss_fn(model, batch) + 0.1 / 2 * model.weight.pow(2).sum()).backward()
                optimizer.step()
                schedule.step()
        else:
            fit(model, iter(data), loss_fn, TrainConfig(steps=8, lr=0.05, weight_decay=0.1, warmup_fraction=0.0,
                                                         max_grad_norm=None, optimizer="adam_l2", progress=False))
        return torch.cat([model.weight.flatten(), model.bias])

    torch.testing.assert_close(trained(False), trained(True))


BAD_CONFIGS = [
    ({"steps": 0}, ValueError, "steps must be a positive int"),
    ({"steps": 5.0}, TypeError, "steps must be an int, got float 5.0"),
    ({"steps": 5, "lr": 0}, ValueError, "lr must be > 0, got 0"),
    ({"steps": 5, "lr": math.nan}, ValueError, "lr must be finite, got nan"),
    ({"steps": 5, "lr": math.inf}, ValueError, "lr must be finite, got inf"),
    ({"steps": 5, "lr": "1e-3"}, TypeError, "lr must be a real number, got str '1e-3'"),
    ({"steps": 5, "weight_decay": -0.1}, ValueError, "weight_decay must be >= 0, got -0.1"),
    ({"steps": 5, "warmup_fraction": 1.5}, ValueError, r"warmup_fraction must lie in \[0, 1\]"),
    ({"steps": 5, "warmup_fraction": math.nan}, ValueError, r"warmup_fraction must lie in \[0, 1\], got nan"),
    ({"steps": 5, "max_grad_norm": 0}, ValueError, "max_grad_norm must be a finite positive number or None"),
    ({"steps": 5, "max_grad_norm": math.inf}, ValueError, "max_grad_norm must be a finite positive number or None"),
    ({"steps": 5, "betas": (0.9, 1.0)}, ValueError, r"betas\[1\] must lie in \[0, 1\), got 1.0"),
    ({"steps": 5, "betas": 0.9}, ValueError, r"betas must be a pair"),
    ({"steps": 5, "optimizer": "sgd"}, ValueError, r"optimizer must be one of \['adamw', 'adam_l2'\], got 'sgd'"),
    ({"steps": 5, "bf16": "no"}, TypeError, r"bf16 must be a bool \(True or False\), got str 'no'"),
    ({"steps": 5, "progress": 0}, TypeError, "progress must be a bool"),
    ({"steps": 5, "seed": -1}, ValueError, "seed must be an int >= 0, got -1"),
    ({"steps": 5, "eval_every": "10"}, TypeError, "eval_every must be an int, got str"),
]


@pytest.mark.parametrize(("fields", "error", "pattern"), BAD_CONFIGS)
def test_config_validation(fields, error, pattern):
    with pytest.raises(error, match=pattern):
        TrainConfig(**fields)


def test_gradient_checkpointing_gives_the_same_gradients_and_needs_support():
    from ctxlib.models.bert import BertConfig, BertModel

    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=12)
    ids = torch.randint(1, 40, (3, 10))
    mask = torch.ones(3, 10, dtype=torch.long)
    mask[1, 7:] = 0

    def gradients(checkpointing: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = BertModel(config).train()  # dropout on: the recomputation must replay its masks
        model.gradient_checkpointing = checkpointing
        torch.manual_seed(1)
        model(ids, attention_mask=mask).last_hidden_state.pow(2).sum().backward()
        return [p.grad for p in model.parameters()]

    for plain, checkpointed in zip(gradients(False), gradients(True)):
        torch.testing.assert_close(plain, checkpointed, atol=1e-6, rtol=1e-5)
    batches, loss_fn = regression_problem()
    with pytest.raises(ValueError, match="Linear has no submodule that supports it"):
        fit(nn.Linear(4, 1), batches, loss_fn, TrainConfig(steps=1, gradient_checkpointing=True, progress=False))
