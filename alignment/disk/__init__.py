"""Files on disk: machine faults (full disk, read-only) and stage-file integrity.

Imported by the kernel (store, cache, runner); imports nothing of the package.
"""
