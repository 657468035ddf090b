"""What runs in the engine process (one per model copy): the scheduler that merges every
request's pieces into batches, the translator that owns the model, the cache, metrics and the
backends (one module per engine). Never imports `translator.api`.
"""
