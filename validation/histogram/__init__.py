"""The histogram task of the paper's section 2 (docs/model.md section 8)."""
