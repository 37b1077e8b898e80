"""Search: the ranker, the query language, options, results, hints and the scoring modes."""
