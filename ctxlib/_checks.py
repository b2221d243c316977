"""Argument checks shared by every ctxlib module.

Each check raises at once with a message that names the argument, the value it got and what
is allowed, so a reader's mistake surfaces at the call they wrote, not three frames deeper.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import torch


def check_positive_int(name: str, value: object) -> int:
    # bool is an int subclass; True as a layer count is always a mistake.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


def check_nonnegative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value}")
    return value


def check_bool(name: str, value: object) -> bool:
    # A string such as 'no' is truthy: accepting it would silently mean True.
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool (True or False), got {type(value).__name__} {value!r}")
    return value


def check_real(name: str, value: object, *, minimum: float | None = None, strict: bool = False) -> float:
    """A finite real number (not a bool), at least ``minimum`` (above it with ``strict``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {value}")
    return float(value)


def check_positive_real(name: str, value: object) -> float:
    return check_real(name, value, minimum=0, strict=True)


def check_probability(name: str, value: object, *, allow_one: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a float in [0, 1], got {type(value).__name__} {value!r}")
    # NaN fails both comparisons below, so it is rejected with the range in the message.
    upper_ok = value <= 1 if allow_one else value < 1
    if not (0 <= value and upper_ok):
        allowed = "[0, 1]" if allow_one else "[0, 1)"
        raise ValueError(f"{name} must lie in {allowed}, got {value}")
    return float(value)


def check_max_grad_norm(value: object) -> None:
    """A clipping threshold: a positive number, or None for no clipping."""
    if value is not None and not (isinstance(value, Real) and not isinstance(value, bool) and 0 < value < math.inf):
        raise ValueError(f"max_grad_norm must be a finite positive number or None (no clipping), got {value!r}")


def check_choice(name: str, value: object, allowed: Sequence[object]) -> object:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def check_index_tensor(name: str, tensor: object, *, ndim: int) -> torch.Tensor:
    """An integer tensor of ``ndim`` dimensions (ids, masks, labels)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of integer ids, got {type(tensor).__name__}")
    if tensor.is_floating_point() or tensor.is_complex():
        raise TypeError(f"{name} must hold integers (torch.long), got dtype {tensor.dtype}")
    if tensor.dim() != ndim:
        hint = " (add a batch dimension with .unsqueeze(0))" if tensor.dim() == ndim - 1 else ""
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(tensor.shape)}{hint}")
    return tensor


def check_same_shape(name: str, tensor: torch.Tensor, reference_name: str, reference: torch.Tensor) -> None:
    if tensor.shape != reference.shape:
        raise ValueError(
            f"{name} must have the shape of {reference_name} {tuple(reference.shape)}, "
            f"got {tuple(tensor.shape)}"
        )


def check_values_below(name: str, tensor: torch.Tensor, high: int, limit_name: str) -> None:
    """Every entry in [0, high); the message shows the first offending entry and its position."""
    if tensor.numel() == 0:
        return
    bad = (tensor < 0) | (tensor >= high)
    if bool(bad.any()):
        position = tuple(int(i) for i in bad.nonzero()[0])
        value = int(tensor[position])
        raise ValueError(
            f"{name} must lie in [0, {limit_name}) = [0, {high}), "
            f"got {value} at position {position}"
        )


def as_bool_mask(name: str, mask: object, shape: Sequence[int]) -> torch.Tensor:
    """``mask`` as a bool tensor of ``shape``: a bool tensor, or integers that are all 0 or 1.
    (Indexing with an integer tensor gathers rows instead of masking: ``x[long_mask]`` is rows
    0 and 1 of ``x``, so an integer mask is converted, never used as it is.)"""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor mask, got {type(mask).__name__}")
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_floating_point() or mask.is_complex():
        raise TypeError(f"{name} must be a bool or 0/1 integer mask, got dtype {mask.dtype}")
    if mask.numel() and bool(((mask != 0) & (mask != 1)).any()):
        raise ValueError(f"{name} must hold only 0 and 1, got values in [{int(mask.min())}, {int(mask.max())}]")
    return mask.bool()


def check_finite(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """A floating-point tensor with no NaN or infinity (a NaN score would silently win or lose every max)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor, got "
                        f"{tensor.dtype if isinstance(tensor, torch.Tensor) else type(tensor).__name__}")
    if tensor.numel() and not bool(tensor.isfinite().all()):
        bad = int((~tensor.isfinite()).sum())
        raise ValueError(f"{name} holds {bad} NaN or infinite value(s)")
    return tensor


def check_in_range(name: str, value: object, low: float, high: float) -> float:
    """A real number in ``[low, high]`` (an explorer's slider would silently clamp anything else)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number in [{low:g}, {high:g}], got {type(value).__name__} {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def check_token_lists(name: str, sentences: object) -> None:
    """``sentences`` is a non-empty sequence of tokenised sentences, each a non-empty sequence of
    str tokens: a str where a token list belongs would be read character by character."""
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise TypeError(f"{name} must be a list of token lists, e.g. [['The', 'bank', '.']], "
                        f"got {type(sentences).__name__}")
    if len(sentences) == 0:
        raise ValueError(f"{name} is empty: give at least one sentence")
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str) or not isinstance(sentence, Sequence):
            raise TypeError(f"{name}[{i}] must be a list of tokens, got {type(sentence).__name__} {sentence!r}")
        if len(sentence) == 0:
            raise ValueError(f"{name}[{i}] is empty: every sentence needs at least one token")
        if not all(isinstance(token, str) for token in sentence):
            raise TypeError(f"{name}[{i}] must hold str tokens, got {sorted({type(t).__name__ for t in sentence})}")


def check_texts(name: str, texts: object) -> None:
    """``texts`` is a non-empty sequence of str (sentences as text): one str in its place would be
    read as a sequence of one-character sentences."""
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"{name} must be a list of str, got {type(texts).__name__} {texts!r:.60}")
    if len(texts) == 0:
        raise ValueError(f"{name} is empty: give at least one sentence")


def check_id(name: str, value: object, high: int, limit_name: str) -> int:
    """One int id in [0, high) (a vocabulary entry); the message has ``check_values_below``'s form.
    (A float or a bool would be stored into a long tensor silently: 2.7 as 2, True as 1.)"""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int in [0, {limit_name}) = [0, {high}), "
                        f"got {type(value).__name__} {value!r}")
    if not 0 <= value < high:
        raise ValueError(f"{name} must lie in [0, {limit_name}) = [0, {high}), got {value}")
    return value
