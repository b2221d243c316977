"""ctxlib: contextualized word representations in small, tested PyTorch modules."""
