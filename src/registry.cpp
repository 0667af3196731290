// Registers every built-in searcher and pruner with the core registry (used by Study::load and make_searcher).
