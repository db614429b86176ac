"""Error bars: the scrambled rules' blocks, independent rules, and high-precision references."""
