"""Each chapter's experiment: may import anything in ctxlib; nothing in ctxlib imports it."""
