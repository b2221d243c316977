"""The book's data: the generated corpus, vocabularies, sense-labelled sentences, the fine-tuning tasks and their file formats."""
