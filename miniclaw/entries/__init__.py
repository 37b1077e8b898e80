"""The record (`Entry`) and the text formats: parsing, privacy, tokenizing, writing."""
