"""The one fit loop, the experiment cache, and the pretraining data pipeline (corpus → pairs → ids → masks → batches)."""
