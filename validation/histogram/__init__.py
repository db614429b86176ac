"""The histogram task of the paper's section 2 (MODEL.md section 8)."""
