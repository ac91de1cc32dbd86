//! Install ROCm into a directory: the component table, the three sources (a run's artifacts, a
//! release tarball, a local directory), staging beside the destination and the final swap.
