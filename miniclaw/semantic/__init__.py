"""Find by meaning: the embedding model and the retriever of the vector and hybrid modes."""
