"""The semantic leg of memory search (docs/memory.md, "Semantic search"): sentence embeddings
of memories and queries, kept beside the memories and fused with the full-text ranking."""
