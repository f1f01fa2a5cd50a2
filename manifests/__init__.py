"""Built-in manifests of known deviations, one ``<backend>.yaml`` per backend (package data)."""
