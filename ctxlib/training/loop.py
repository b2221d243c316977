"""The one training loop of the book (notes §6.2): AdamW, warmup, clipping, bf16, a history.

Every chapter that trains something calls ``fit``. What it does, and why:

* **AdamW** (decoupled weight decay) with no decay on biases, LayerNorm and other 1-D
  parameters, as BERT was trained: decaying a scale or an offset towards 0 has no
  regularising meaning. ``optimizer="adam_l2"`` is the coupled alternative (Adam with the L2
  penalty's gradient added to the loss's), kept for Chapter 6's comparison.
* **linear warmup, then linear decay** to 0: Adam's second-moment estimates are poor in the
  first steps, and large early updates are what makes Transformer training diverge.
* **gradient-norm clipping**: one bad batch cannot throw the weights far.
* optional **bf16 autocast** on the model's device, and optional **gradient checkpointing** of BERT's
  encoder blocks (activations recomputed in the backward pass instead of stored).
* a NaN or infinite loss, or gradient, stops training before the step that would write it
  into the weights, with a ``Diverged`` error that names the step and keeps the history up to it
  (a chapter can plot a run that blew up).
* bounded by ``steps``, with a tqdm bar, deterministic given ``seed`` (the caller's own random
  state is left alone); returns a ``History``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ctxlib._checks import (check_bool, check_choice, check_max_grad_norm, check_nonnegative_int, check_positive_int,
                            check_positive_real, check_probability, check_real)
from ctxlib.training.progress import progress_bar

LossOutput = torch.Tensor | dict[str, torch.Tensor]
OPTIMIZERS = ("adamw", "adam_l2")


@dataclass(frozen=True)
class TrainConfig:
    """How long and how fast to train; validated on construction."""

    steps: int
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1
    max_grad_norm: float | None = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    optimizer: str = "adamw"
    bf16: bool = False
    gradient_checkpointing: bool = False
    seed: int = 0
    eval_every: int = 0
    progress: bool = True
    description: str = "training"

    def __post_init__(self) -> None:
        check_positive_int("steps", self.steps)
        check_positive_real("lr", self.lr)
        check_real("weight_decay", self.weight_decay, minimum=0)
        check_probability("warmup_fraction", self.warmup_fraction)
        if not (isinstance(self.betas, tuple) and len(self.betas) == 2):
            raise ValueError(f"betas must be a pair (beta1, beta2), got {self.betas!r}")
        for name, beta in zip(("betas[0]", "betas[1]"), self.betas):
            check_probability(name, beta, allow_one=False)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_max_grad_norm(self.max_grad_norm)
        for name in ("bf16", "gradient_checkpointing", "progress"):
            check_bool(name, getattr(self, name))
        check_nonnegative_int("seed", self.seed)
        check_nonnegative_int("eval_every", self.eval_every)  # 0: evaluate only at the end
        if not isinstance(self.description, str):
            raise TypeError(f"description must be a str, got {type(self.description).__name__}")

    @property
    def warmup_steps(self) -> int:
        return round(self.warmup_fraction * self.steps)


@dataclass
class History:
    """What ``fit`` measured. ``train[name][i]`` is metric ``name`` at step ``steps[i]``;
    ``evaluations[name]`` holds ``(step, value)`` pairs from the ``evaluate`` callback."""

    steps: list[int] = field(default_factory=list)
    train: dict[str, list[float]] = field(default_factory=dict)
    lr: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    evaluations: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    seconds: float = math.nan  # wall time of the training steps (evaluations excluded)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "train": self.train, "lr": self.lr, "grad_norm": self.grad_norm,
                "evaluations": {k: [list(p) for p in v] for k, v in self.evaluations.items()},
                "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> History:
        return cls(data["steps"], data["train"], data["lr"], data["grad_norm"],
                   {k: [tuple(p) for p in v] for k, v in data["evaluations"].items()},
                   data.get("seconds", math.nan))


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's global random state seeded to ``seed`` (parameter
    initialisation, dropout), then hand the caller back the state it had before: the block is
    reproducible, and a library call never resets the caller's own random stream."""
    check_nonnegative_int("seed", seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        yield


def device_type(model: nn.Module) -> str:
    """The device type of ``model``'s parameters ("cpu", "cuda", ...), for ``torch.autocast``."""
    return next((p.device.type for p in model.parameters()), "cpu")


class Diverged(FloatingPointError):
    """The loss or the gradient became NaN or infinite at ``step``; the weights are those before
    that step, and ``history`` holds every step before it."""

    def __init__(self, message: str, step: int, history: History) -> None:
        super().__init__(message)
        self.step, self.history = step, history


def parameter_groups(model: nn.Module, weight_decay: float, lr: float,
                     lr_scale: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """AdamW groups: matrices decay, 1-D parameters (biases, norms, scalars) do not.

    ``lr_scale`` maps a submodule name (``"elmo"``) to a multiplier of ``lr`` for the
    parameters under it: fine-tuning a pretrained part more gently than a new head (Howard and
    Ruder 2018). Frozen parameters (``requires_grad=False``) join no group.
    """
    lr_scale = dict(lr_scale or {})
    for prefix, scale in lr_scale.items():
        check_positive_real(f"lr_scale[{prefix!r}]", scale)
    names = {name for name, _ in model.named_modules()}
    unknown = [prefix for prefix in lr_scale if prefix not in names]
    if unknown:
        raise ValueError(f"lr_scale names submodules {unknown} that the model does not have; "
                         f"it has {sorted(n for n in names if n and '.' not in n)}")
    groups: dict[tuple[float, bool], list[nn.Parameter]] = {}
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            scale = next((s for prefix, s in lr_scale.items() if name.startswith(prefix + ".")), 1.0)
            groups.setdefault((scale, parameter.dim() >= 2), []).append(parameter)
    return [{"params": params, "lr": lr * scale, "weight_decay": weight_decay if decays else 0.0}
            for (scale, decays), params in groups.items()]


def warmup_linear_decay(step: int, total: int, warmup: int) -> float:
    """The learning-rate multiplier: 0 → 1 over ``warmup`` steps, then 1 → 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def enable_gradient_checkpointing(model: nn.Module) -> None:
    """Turn on checkpointing in every submodule that supports it (``BertModel``)."""
    supporting = [m for m in model.modules() if hasattr(m, "gradient_checkpointing")]
    if not supporting:
        raise ValueError(f"gradient_checkpointing=True, but {type(model).__name__} has no submodule that supports "
                         "it (a ctxlib BertModel does)")
    for module in supporting:
        module.gradient_checkpointing = True


def fit(
    model: nn.Module,
    batches: Iterator[Any],
    loss_fn: Callable[[nn.Module, Any], LossOutput],
    config: TrainConfig,
    evaluate: Callable[[nn.Module], dict[str, float]] | None = None,
    lr_scale: Mapping[str, float] | None = None,
    stop: Callable[[History], bool] | None = None,
) -> History:
    """Train ``model`` for ``config.steps`` steps on ``batches`` (an iterator that may repeat).

    ``loss_fn(model, batch)`` returns the loss, or a dict with a ``"loss"`` entry and any other
    scalars worth recording (they go into ``History.train``). ``evaluate(model)`` runs in eval
    mode without gradients every ``eval_every`` steps and after the last one. ``lr_scale``
    scales the learning rate of named submodules (see ``parameter_groups``). ``stop(history)``,
    asked after each evaluation, ends training early when it returns True (early stopping); the
    learning-rate schedule is the one planned for ``config.steps``. The random draws
    inside (dropout) come from ``config.seed``; the caller's random state is left as it was.

    A loss or gradient norm that is NaN or infinite stops training before the optimizer step
    (``Diverged``), so the model keeps the last finite weights.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(batches, Iterator):
        raise TypeError(f"batches must be an iterator (a generator, or iter(a_list)), got {type(batches).__name__}")
    if stop is not None and evaluate is None:
        raise ValueError("stop needs evaluate: early stopping decides on the evaluations")
    with seeded(config.seed):
        return _fit(model, batches, loss_fn, config, evaluate, lr_scale, stop)


def _fit(model: nn.Module, batches: Iterator[Any], loss_fn: Callable[[nn.Module, Any], LossOutput],
         config: TrainConfig, evaluate: Callable[[nn.Module], dict[str, float]] | None,
         lr_scale: Mapping[str, float] | None, stop: Callable[[History], bool] | None) -> History:
    if config.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    groups = parameter_groups(model, config.weight_decay, config.lr, lr_scale)
    # Adam's weight_decay adds λθ to the gradient (coupled L2), so the adaptive denominator
    # rescales the decay too; AdamW subtracts lr·λθ from the weights directly (Loshchilov and
    # Hutter 2019).
    optimizer_class = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    # The fused kernel updates all parameters in one pass: the same update, and on MiniLM's 11M
    # trainable parameters several times faster than the per-tensor loop.
    optimizer = optimizer_class(groups, betas=config.betas, fused=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_linear_decay(step, config.steps, config.warmup_steps))
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    history = History()
    # A text bar, not a widget (no 3.6 MB widget manager on every training page); in a kernel it
    # redraws one display in place, so a rendered page keeps only its last line (progress.py).
    bar = progress_bar(config.steps, config.description, config.progress, mininterval=0.5)
    started = time.perf_counter()
    evaluating = 0.0
    try:  # closed however the loop ends: a bar left open would push every later one down a line
        for step in bar:
            model.train()
            try:
                batch = next(batches)
            except StopIteration:
                raise ValueError(f"batches ran out at step {step} of {config.steps}: give an endless iterator "
                                 "or at least steps batches") from None
            with torch.autocast(device_type(model), dtype=torch.bfloat16, enabled=config.bf16):
                output = loss_fn(model, batch)
            metrics = output if isinstance(output, dict) else {"loss": output}
            loss = metrics.get("loss")
            if not (isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.requires_grad):
                given = type(loss).__name__ if not isinstance(loss, torch.Tensor) else tuple(loss.shape)
                raise TypeError("loss_fn must return a scalar tensor with a gradient (or a dict with one under "
                                f"'loss'), got {given}")
            loss_value = float(loss.detach())
            if not math.isfinite(loss_value):
                history.seconds = time.perf_counter() - started - evaluating
                raise Diverged(
                    f"loss is {loss_value} at step {step} of {config.steps} (lr {schedule.get_last_lr()[0]:.2e}): "
                    "training diverged; lower lr, lengthen warmup or clip gradients", step, history)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            max_norm = config.max_grad_norm if config.max_grad_norm is not None else math.inf
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, max_norm)
            if not math.isfinite(float(grad_norm)):
                history.seconds = time.perf_counter() - started - evaluating
                raise Diverged(
                    f"the gradient norm is {float(grad_norm)} at step {step} of {config.steps} (loss {loss_value:.4g}): "
                    "the step was not taken and the weights are those before it; lower lr or look for an overflow "
                    "(bf16, a log of 0) in the loss", step, history)
            history.lr.append(schedule.get_last_lr()[0])
            optimizer.step()
            schedule.step()
            history.steps.append(step + 1)
            history.grad_norm.append(float(grad_norm))
            for name, value in metrics.items():
                number = float(value.detach()) if torch.is_tensor(value) else float(value)
                history.train.setdefault(name, []).append(number)
            bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
            last = step + 1 == config.steps
            if evaluate is not None and (last or (config.eval_every and (step + 1) % config.eval_every == 0)):
                evaluation_started = time.perf_counter()
                model.eval()
                with torch.no_grad():
                    for name, value in evaluate(model).items():
                        history.evaluations.setdefault(name, []).append((step + 1, float(value)))
                evaluating += time.perf_counter() - evaluation_started
                if stop is not None and not last and stop(history):
                    break
    finally:
        bar.close()
    history.seconds = time.perf_counter() - started - evaluating
    # The last step's gradients are of no further use; a page that keeps several trained models
    # would otherwise hold a copy of every trainable weight per model.
    optimizer.zero_grad(set_to_none=True)
    model.eval()
    return history
