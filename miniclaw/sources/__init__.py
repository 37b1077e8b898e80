"""Source kinds for other tools' memory stores (ConKeeper, mnemonic, EF Memory, transcripts)."""
