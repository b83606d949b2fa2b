"""The program fuzzer: grammar (hypothesis strategy), refad (reference AD), check, campaign.
See docs/testing.md."""
