"""The models: BERT and its heads, ELECTRA, ELMo, their weight formats, the bundled MiniLM."""
