"""Looking inside trained models: probes, occurrences, neighbours, attention statistics, costs, baselines."""
