"""The proximal map of the channel at all quadrature nodes: Newton descents (numpy, compiled, torch), starts and candidates."""
