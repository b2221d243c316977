"""What the models are trained to do: BERT's masking (80/10/10) and next-sentence pairs."""
