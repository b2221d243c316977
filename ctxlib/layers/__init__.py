"""Reusable building blocks of the models: attention, positions, the CRF, ScalarMix. Imports nothing above it."""
